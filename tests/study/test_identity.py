"""Issue #25 point 6: a run folder's identity covers everything that determines its results.

A policy or estimator *object* given in Python is identified by its class and parameters,
not its class name; an object whose parameters cannot be known is never matched to a folder;
a refusal names the differing keys in one short line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import marketsim
from marketsim.aggregation import DawidSkene
from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.policies.base import Policy
from marketsim.scenario.run_migration import read_run
from marketsim.study.identity import described, unknowable
from marketsim.study.run_folder import run_record


class Capped(Policy):
    """A plug-in policy whose ranking depends on ``cap`` (and says so via ``get_params``)."""

    name = "capped"

    def __init__(self, cap: int = 2) -> None:
        self.cap = cap
        self.n = 0

    def get_params(self, deep: bool = True) -> dict[str, Any]:  # noqa: ARG002 - sklearn's
        return {"cap": self.cap}

    def bind(self, info: Any) -> None:
        self.n = info.n_tasks

    def rank(self, state: Any, rng: np.random.Generator) -> np.ndarray:  # noqa: ARG002
        key = np.arange(self.n) % self.cap + rng.random(self.n) * 0.1
        return np.argsort(key, kind="stable")


class Opaque(Capped):
    """The same policy without ``get_params``: its parameters cannot be known."""

    get_params = None  # type: ignore[assignment]


def _doc(policy: Any = "uniform", inference: Any = "one-coin", **arm: Any) -> dict[str, Any]:
    return {"scenario": {"name": "identity", "seed": 3}, "tasks": {"count": 12},
            "workers": {"count": 6}, "budget": {"edges": 40, "batch": 8},
            "arms": [{"name": "a", "policy": policy, "inference": inference, **arm}]}


def _run(doc: dict[str, Any], out: Path) -> marketsim.StudyResult:
    return marketsim.run(marketsim.scenario_from_dict(doc), out=out, progress=False,
                         figures=False)


def test_policy_object_with_other_parameters_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _run(_doc(Capped(cap=2)), out)
    with pytest.raises(InputError) as err:
        _run(_doc(Capped(cap=9)), out)
    message = str(err.value)
    assert "\n" not in message
    assert "arms[0].policy.object.params.cap 2 there, 9 here" in message


def test_estimator_object_with_other_parameters_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _run(_doc(inference=DawidSkene(max_iter=5)), out)
    with pytest.raises(InputError, match=r"arms\[0\]\.inference\.object\.params\.max_iter "
                                         r"5 there, 50 here"):
        _run(_doc(inference=DawidSkene(max_iter=50)), out)


def test_same_objects_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = _run(_doc(Capped(cap=3), DawidSkene(max_iter=7)), out)
    again = _run(_doc(Capped(cap=3), DawidSkene(max_iter=7)), out)
    assert [u.rows for u in again.units] == [u.rows for u in first.units]


def test_object_without_parameters_is_never_matched(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _run(_doc(Opaque(cap=2)), out)  # a fresh folder: nothing to match, it runs
    assert unknowable(read_run(out / "run.json")) == "arms[0].policy (a Opaque)"
    with pytest.raises(InputError, match=r"arms\[0\]\.policy \(a Opaque\) has parameters "
                                         "that cannot be known"):
        _run(_doc(Opaque(cap=2)), out)


def test_object_run_is_not_resumed_from_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    _run(_doc(Capped(cap=2)), out)
    capsys.readouterr()
    assert main(["run", "--resume", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "was run from Python with an object as arms[0].policy" in err


def test_refusal_names_only_the_differing_keys(tmp_path: Path) -> None:
    arms = [{"name": f"arm{i}", "policy": "uniform",
             "inference": {"method": "ds", "max_iter": 10 + i}} for i in range(6)]
    doc = {**_doc(), "arms": arms}
    out = tmp_path / "run"
    _run(doc, out)
    changed = json.loads(json.dumps(doc))
    changed["arms"][4]["inference"]["max_iter"] = 99
    with pytest.raises(InputError) as err:
        _run(changed, out)
    message = str(err.value)
    assert "arms[4].inference.max_iter 14 there, 99 here" in message
    assert "arm0" not in message and len(message.replace(str(out), "RUN")) < 300


def test_described_covers_arrays_generators_and_nested_estimators() -> None:
    a = described(DawidSkene(class_prior=np.array([0.25, 0.75])))
    b = described(DawidSkene(class_prior=np.array([0.5, 0.5])))
    assert a["class"] == "marketsim.aggregation.dawid_skene.DawidSkene"
    assert a["params"]["class_prior"] == {"array": [0.25, 0.75], "dtype": "float64"}
    assert a != b
    seeded = [described(DawidSkene(random_state=np.random.default_rng(s))) for s in (1, 2)]
    assert seeded[0] != seeded[1] and seeded[0]["params"] is not None

    class Wrapper(Capped):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def get_params(self, deep: bool = True) -> dict[str, Any]:  # noqa: ARG002
            return {"inner": self.inner}

    assert described(Wrapper(Capped(4)))["params"]["inner"]["params"] == {"cap": 4}
    assert described(Wrapper(Opaque(4)))["params"] is None


def test_replay_data_contents_are_in_the_fingerprint(tmp_path: Path) -> None:
    labels, truth = tmp_path / "labels.csv", tmp_path / "truth.csv"
    labels.write_text("task,worker,label\n" + "".join(
        f"t{t},w{w},{(t + w) % 2}\n" for t in range(6) for w in range(3)))
    truth.write_text("task,truth\n" + "".join(f"t{t},{t % 2}\n" for t in range(6)))
    doc = {"scenario": {"name": "replay"}, "replay": {"labels": str(labels),
                                                       "truth": str(truth)},
           "arms": [{"name": "a", "policy": "uniform", "inference": "mv"}]}
    before = run_record(marketsim.scenario_from_dict(doc)).fingerprint
    labels.write_text(labels.read_text().replace("t0,w0,0", "t0,w0,1"))
    after = run_record(marketsim.scenario_from_dict(doc)).fingerprint
    assert before != after
