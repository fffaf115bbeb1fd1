"""Hostile input for the keys of changing workers and answer times (``[workers.dynamics]``,
``[workers.service] speed_spread`` and ``abandon``): a wrong type, a negative number, NaN, an
unknown key or a table where it does not apply is one line naming the dotted key (exit 2 from
the command line); the keys are recorded in a run's identity only once set."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest

from marketsim.errors import InputError
from marketsim.scenario.parser import parse_scenario
from tests.helpers import validate_in_process

BASE: dict[str, Any] = {
    "tasks": {"count": 40},
    "workers": {"count": 6, "service": {"mean": 2.0}, "dynamics": {"learning": 1.0}},
    "budget": {"edges": 120},
    "arms": [{"name": "u", "policy": "uniform", "inference": "ds"}],
}


def changed(path: str, value: Any, base: dict[str, Any] = BASE) -> dict[str, Any]:
    data = copy.deepcopy(base)
    node = data
    keys = path.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    if value is ...:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return data


NUMERIC = [("workers.dynamics." + k) for k in ("learning", "learning_labels", "fatigue", "rest",
                                               "drift")] + \
          ["workers.service.speed_spread", "workers.service.abandon"]


@pytest.mark.parametrize("key", NUMERIC)
@pytest.mark.parametrize("value,needle", [
    ("fast", "must be a number"), (True, "must be a number"), ([1.0], "must be a number"),
    (-0.5, "must be >"), (math.nan, "must be a finite number"),
    (math.inf, "must be a finite number"),
])
def test_bad_values_are_one_line_naming_the_key(key: str, value: Any, needle: str) -> None:
    with pytest.raises(InputError) as info:
        parse_scenario(changed(key, value), "bad.toml")
    message = str(info.value)
    assert message.startswith(f"bad.toml: {key} ") and needle in message, message
    assert "\n" not in message


@pytest.mark.parametrize("key,value,needle", [
    ("workers.dynamics.learning", 51.0, "workers.dynamics.learning must be <= 50"),
    ("workers.dynamics.learning_labels", 0.0, "workers.dynamics.learning_labels must be > 0"),
    ("workers.dynamics.rest", 0.0, "workers.dynamics.rest must be > 0"),
    ("workers.service.abandon", 1.0, "workers.service.abandon must be < 1"),
    ("workers.service.speed_spread", 11.0, "workers.service.speed_spread must be <= 10"),
    ("workers.dynamics.learnign", 1.0, "workers.dynamics.learnign is not a known key"),
    ("workers.service.abandonment", 0.1, "workers.service.abandonment is not a known key"),
    ("workers.dynamics", 1.0, "workers.dynamics must be a table"),
    ("workers.service.mean", 0.0, None),  # speed_spread needs a mean, see below
])
def test_out_of_range_unknown_and_misplaced(key: str, value: Any, needle: str | None) -> None:
    doc = changed(key, value)
    if needle is None:
        doc = changed("workers.service", {"mean": 0.0, "speed_spread": 0.5})
        needle = "workers.service.speed_spread needs workers.service.mean > 0"
    with pytest.raises(InputError) as info:
        parse_scenario(doc, "bad.toml")
    assert needle in str(info.value), str(info.value)


def test_dynamics_needs_simulated_class_labels(tmp_path: Path) -> None:
    scores = changed("workers.model", "gaussian-scores")
    scores["arms"][0]["inference"] = "gaussian-em"
    with pytest.raises(InputError, match="workers.dynamics needs simulated class labels: it "
                                         "does not apply with workers.model = 'gaussian-sco"):
        parse_scenario(scores, "bad.toml")
    (tmp_path / "labels.csv").write_text("task,worker,label\nt1,w1,a\nt1,w2,b\nt2,w1,a\n")
    (tmp_path / "truth.csv").write_text("task,label\nt1,a\nt2,b\n")
    replay = {"replay": {"labels": "labels.csv", "truth": "truth.csv"},
              "workers": {"dynamics": {"drift": 0.1}},
              "arms": BASE["arms"]}
    with pytest.raises(InputError, match="workers.dynamics needs simulated class labels: it "
                                         "does not apply with \\[replay\\]"):
        parse_scenario(replay, str(tmp_path / "s.toml"))
    for model in ("confusion", "glad", "spammer-hammer"):  # every class model takes it
        parse_scenario(changed("workers.model", model), "ok.toml")


def test_the_keys_enter_the_run_record_in_their_tables() -> None:
    plain = changed("workers.dynamics", ...)
    record = parse_scenario(plain, "a.toml").to_dict()["workers"]
    assert "dynamics" not in record and record["service"]["abandon"] == 0.0
    assert record["service"]["mean"] == 2.0
    both = changed("workers.service", {"mean": 2.0, "abandon": 0.2})
    record = parse_scenario(both, "a.toml").to_dict()["workers"]
    assert record["service"]["abandon"] == 0.2 and record["dynamics"]["learning"] == 1.0


def test_cli_exit_2_one_line_for_a_bad_dynamics_key(tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[tasks]\ncount = 10\n[workers]\ncount = 3\n[workers.dynamics]\n'
                   'fatigue = nan\n[budget]\nedges = 20\n'
                   '[[arms]]\nname = "a"\npolicy = "uniform"\n')
    proc = validate_in_process(bad, capsys)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "workers.dynamics.fatigue must be a finite number" in lines[0]
