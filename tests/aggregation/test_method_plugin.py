"""Issue #39: an inference method from outside marketsim (``[arms.inference] method =
"package.module:Class"``) gets the built-in methods' treatment, as a plug-in worker model or
policy does: imported only with ``--allow-imports``, its class's facts checked, its ``Options``
validating its settings, then run and described in report.md like any method, and not listed
(the plug-in: ``plugins/smoothed_vote.py``)."""

from __future__ import annotations

import pickle
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.market.inference import estimator_factory
from marketsim.report.arm_text import method_text
from marketsim.scenario import inference_spec
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.sweep import expand
from marketsim.study.runner import plugin_modules, run_unit

PLUGINS = Path(__file__).parent / "plugins"
METHOD = "smoothed_vote:SmoothedVote"
TOML = ('[tasks]\ncount = 12\n[workers]\ncount = 4\n[budget]\nedges = 24\n'
        f'[[arms]]\nname = "u"\npolicy = "uniform"\ninference = {{ method = "{METHOD}", '
        'alpha = 0.5 }\n')
#: The method's words in report.md (its ``describe``): ``alpha`` is its own, not a prior's.
WORDS = "majority vote smoothed by pseudo-votes. Settings: `alpha = 0.5`"


@pytest.fixture(autouse=True)
def plugin_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The plug-in's folder on the path, its module not yet imported (nor left imported)."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    sys.modules.pop("smoothed_vote", None)
    yield
    sys.modules.pop("smoothed_vote", None)


def doc(inference: Any = METHOD, workers: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"tasks": {"count": 12}, "workers": workers or {"count": 4},
            "budget": {"edges": 24},
            "arms": [{"name": "u", "policy": "uniform", "inference": inference}]}


def error(data: dict[str, Any], allow_imports: bool = True) -> str:
    with pytest.raises(InputError) as exc:
        parse_scenario(data, "x.toml", allow_imports=allow_imports)
    return str(exc.value)


def test_a_plugin_method_is_imported_only_with_allow_imports() -> None:
    assert error(doc(), allow_imports=False) == (
        f"x.toml: arms[0].inference.method: inference method '{METHOD}' is an import path and "
        "would run outside code; pass --allow-imports if you trust this scenario")
    assert "smoothed_vote" not in sys.modules
    scenario = parse_scenario(doc({"method": METHOD, "alpha": 0.5}), "x.toml",
                              allow_imports=True)
    inference = scenario.arms[0].inference
    assert (inference.method, inference.entry.method, inference.options.alpha) == (
        METHOD, "smoothed-vote", 0.5)
    written = scenario.resolved_document()["arms"][0]["inference"]
    assert written == {"method": METHOD, "alpha": 0.5}
    assert parse_scenario(scenario.resolved_document(), "again.toml",
                          allow_imports=True) == scenario


def test_a_worker_process_unpickles_it() -> None:
    """A worker process that has not built the plug-in's settings model yet finds it (after
    importing the plug-in's class) when it unpickles the scenario."""
    scenario = parse_scenario(doc({"method": METHOD, "alpha": 0.5}), "x.toml",
                              allow_imports=True)
    sent = pickle.dumps(scenario)
    inference_spec._MODELS.pop(scenario.arms[0].inference.entry)  # as in a fresh process
    received = pickle.loads(sent)
    inference = received.arms[0].inference
    assert inference.entry is scenario.arms[0].inference.entry
    assert inference.options.model_dump() == {"alpha": 0.5}


@pytest.mark.parametrize(("inference", "needle"), [
    ({"method": METHOD, "alpha": 101}, "x.toml: arms[0].inference.alpha must be <= 100, got 101"),
    ({"method": METHOD, "alpah": 1}, "arms[0].inference.alpah is not an option of method "
     f"'{METHOD}' (its options: alpha); did you mean alpha?"),
    ({"method": METHOD, "max_iter": 5}, "arms[0].inference.max_iter is not an option of method"),
])
def test_its_settings_are_checked_against_its_options(inference: dict[str, Any],
                                                      needle: str) -> None:
    assert needle in error(doc(inference))


def test_a_sweep_varies_its_settings() -> None:
    data = doc() | {"sweep": {"arms.u.inference.alpha": [0.5, 2.0]}}
    points = expand(parse_scenario(data, "x.toml", allow_imports=True))
    assert [p.arms[0].inference.options.alpha for p in points] == [0.5, 2.0]
    data["sweep"] = {"arms.u.inference.alpha": [0.5, 200.0]}
    with pytest.raises(InputError, match=r"alpha=200.0: arms\[0\].inference.alpha must be <= "
                       "100, got 200.0"):
        expand(parse_scenario(data, "x.toml", allow_imports=True))


@pytest.mark.parametrize(("path", "needle"), [
    ("smoothed_vote:LabelSet", "is not a subclass of marketsim.aggregation.base.BaseAggregator"),
    ("smoothed_vote:np", "is a module, not a class"),
    ("smoothed_vote:Missing", "arms[0].inference.method: cannot import inference method"),
    ("no_such_module_here:X", "cannot import inference method 'no_such_module_here:X'"),
    ("marketsim.aggregation.base:BaseAggregator", "does not name itself: set the class "
     "variable method"),
])
def test_a_class_that_is_not_a_method_is_refused_in_one_line(path: str, needle: str) -> None:
    message = error(doc(path))
    assert needle in message and "\n" not in message


def test_a_class_method_is_refused_for_scores() -> None:
    scores = {"count": 4, "model": "gaussian-scores"}
    assert (f"arms[0].inference.method '{METHOD}' estimates classes, but workers.model = "
            "'gaussian-scores' gives continuous scores") in error(doc(workers=scores))


def test_a_unit_runs_it_and_the_report_words_it(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    """The cheap cover of the slow test below: validate, the run's refusal, one unit, the
    arm's words."""
    scenario = tmp_path / "smoothed.toml"
    scenario.write_text(TOML)
    assert main(["validate", str(scenario)]) == 2
    assert "pass --allow-imports" in capsys.readouterr().err
    assert main(["validate", str(scenario), "--allow-imports"]) == 0
    assert f"inference {METHOD}" in capsys.readouterr().out
    sys.modules.pop("smoothed_vote")
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out), "--quiet"]) == 2
    assert "pass --allow-imports" in capsys.readouterr().err and not out.exists()
    parsed = parse_scenario(tomllib.loads(TOML), "s.toml", allow_imports=True)
    arm = parsed.arms[0]
    estimator = estimator_factory(parsed.crowd, arm.inference)()
    assert (type(estimator).__name__, estimator.alpha) == ("SmoothedVote", 0.5)
    assert run_unit(parsed, 0, 0).rows[-1].edges == 24
    assert plugin_modules(parsed) == {"smoothed_vote": "arm 'u': estimator"}  # for Dask
    assert method_text(arm) == WORDS


@pytest.mark.slow
def test_a_run_uses_it_and_the_report_describes_it(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    scenario = tmp_path / "smoothed.toml"
    scenario.write_text(TOML)
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out), "--quiet", "--no-figures",
                 "--replicates", "1",
                 "--jobs", "1", "--allow-imports"]) == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"- `{METHOD}` — {WORDS}" in report and f"| `{METHOD}` |" in report
    assert (out / "curves.csv").read_text().count("\n") > 1
    capsys.readouterr()
    sys.modules.pop("smoothed_vote")  # a later process: the method is not imported
    (out / "report.md").unlink()
    assert main(["report", str(out), "--quiet"]) == 2
    assert "pass --allow-imports" in capsys.readouterr().err
    assert "smoothed_vote" not in sys.modules  # a report never imports it unasked
    assert main(["report", str(out), "--quiet", "--no-figures", "--allow-imports"]) == 0
    assert WORDS in (out / "report.md").read_text(encoding="utf-8")


def test_it_is_not_listed(capsys: pytest.CaptureFixture) -> None:
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert "mv" in listed and "smoothed" not in listed
