"""Issue #39: a worker model from outside marketsim (``workers.model = "package.module:Class"``)
gets the built-in models' treatment: imported only with ``--allow-imports``, its class's
facts checked, its ``Options`` validating its ``[workers.<table>]``, then run and described
in report.md's Setup like any model (the plug-in: ``plugins/two_coin_workers.py``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.scenario.parser import parse_scenario

PLUGINS = Path(__file__).parent / "plugins"
MODEL = "two_coin_workers:TwoCoinWorkers"


@pytest.fixture(autouse=True)
def plugin_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The plug-in's folder on the path, its module not yet imported (nor left imported)."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    sys.modules.pop("two_coin_workers", None)
    yield
    sys.modules.pop("two_coin_workers", None)


def doc(**workers: Any) -> dict[str, Any]:
    return {"tasks": {"count": 12}, "workers": {"count": 4, "model": MODEL, **workers},
            "budget": {"edges": 24}, "arms": [{"name": "u", "policy": "uniform"}]}


def error(data: dict[str, Any], allow_imports: bool = True) -> str:
    with pytest.raises(InputError) as exc:
        parse_scenario(data, "x.toml", allow_imports=allow_imports)
    return str(exc.value)


def test_a_plugin_model_is_imported_only_with_allow_imports() -> None:
    assert error(doc(), allow_imports=False) == (
        f"x.toml: worker model '{MODEL}' is an import path and would run outside code; pass "
        "--allow-imports if you trust this scenario")
    assert "two_coin_workers" not in sys.modules
    scenario = parse_scenario(doc(two_coin={"accuracy_0": 0.95}), "x.toml", allow_imports=True)
    facts = scenario.worker_model
    assert (facts.name, facts.labels, facts.default_method) == (
        "two-coin", "classes", "one-coin-shifted-beta")
    assert (scenario.workers.options.accuracy_0, scenario.workers.options.accuracy_1) == (
        0.95, 0.7)
    written = scenario.resolved_document()["workers"]
    assert written["two_coin"] == {"accuracy_0": 0.95, "accuracy_1": 0.7}
    assert "ability" not in written  # the model does not read it
    assert parse_scenario(scenario.resolved_document(), "again.toml",
                          allow_imports=True) == scenario


@pytest.mark.parametrize(("workers", "needle"), [
    ({"two_coin": {"accuracy_0": 2}}, "x.toml: workers.two_coin.accuracy_0 must be <= 1, got 2"),
    ({"two_coin": {"accuracy0": 0.8}}, "workers.two_coin.accuracy0 is not a known key "
     "(allowed here: accuracy_0, accuracy_1); did you mean accuracy_0?"),
    ({"two_con": {}}, "workers.two_con is not a known key (allowed here: count, model, "),
    ({"two_con": {}}, "did you mean two_coin?"),
    ({"ability": {"alpha": 3.0}}, "workers.ability does not apply with a two-coin crowd"),
    ({"confusion": {"design": "per-worker"}},
     "workers.confusion only applies with workers.model = 'confusion'"),
])
def test_its_table_is_checked_against_its_options(workers: dict[str, Any], needle: str) -> None:
    assert needle in error(doc(**workers))


def test_its_own_rules_and_facts_are_the_scenario_rules() -> None:
    three = doc() | {"tasks": {"count": 12, "classes": 3}}
    assert "workers.model two-coin workers need binary tasks (tasks.classes = 2), got 3" in \
        error(three)
    assert "arms[0].inference.method 'gaussian-em' estimates continuous scores" in error(
        doc() | {"arms": [{"name": "u", "policy": "uniform", "inference": "gaussian-em"}]})


@pytest.mark.parametrize(("path", "needle"), [
    ("two_coin_workers:TwoCoinOptions", "is not a subclass of marketsim.workers.base.WorkerModel"),
    ("two_coin_workers:TwoCoinAnswers", "is not a subclass of marketsim.workers.base.WorkerModel"),
    ("two_coin_workers:np", "is a module, not a class"),
    ("two_coin_workers:Missing", "cannot import worker model"),
    ("no_such_module_here:X", "cannot import worker model 'no_such_module_here:X'"),
    ("marketsim.workers.classes:ClassWorkers", "does not implement answer_words, answers"),
])
def test_a_class_that_is_not_a_worker_model_is_refused_in_one_line(path: str,
                                                                   needle: str) -> None:
    assert needle in error(doc(model=path))


def test_a_run_with_the_plugin_describes_it_in_the_setup(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    scenario = tmp_path / "two_coin.toml"
    scenario.write_text(f'[tasks]\ncount = 12\n[workers]\ncount = 4\nmodel = "{MODEL}"\n'
                        "[workers.two_coin]\naccuracy_0 = 0.95\n[budget]\nedges = 24\n"
                        '[[arms]]\nname = "u"\npolicy = "uniform"\n')
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out), "--quiet"]) == 2
    assert "pass --allow-imports" in capsys.readouterr().err and not out.exists()
    assert main(["run", str(scenario), "--out", str(out), "--quiet", "--no-figures",
                 "--replicates", "1",
                 "--jobs", "1", "--allow-imports"]) == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "under the two-coin model: a two-coin worker gives the right class with " \
        "probability 0.95 on a task of class 1 and 0.7 on one of class 2." in report
    assert (out / "curves.csv").read_text().count("\n") > 1
    capsys.readouterr()
    sys.modules.pop("two_coin_workers")  # a later process: the model is not imported
    (out / "report.md").unlink()
    assert main(["report", str(out), "--quiet"]) == 2
    assert "pass --allow-imports" in capsys.readouterr().err
    assert "two_coin_workers" not in sys.modules  # a report never imports it unasked
    assert main(["report", str(out), "--quiet", "--no-figures", "--allow-imports"]) == 0
    assert "under the two-coin model" in (out / "report.md").read_text(encoding="utf-8")
