"""Issue #39: a worker model is one class in one module of ``marketsim.workers``, discovered by
the registry; the scenario's ``[workers]`` is a union over the models' options, so validation,
the JSON Schema, ``marketsim list`` and the Setup's words come from the classes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from marketsim.cli import list_cmd
from marketsim.errors import InputError
from marketsim.plugins import declared_classes
from marketsim.report.crowd_text import world_text
from marketsim.scenario.docs import SCHEMA_FILE
from marketsim.scenario.parser import parse_scenario
from marketsim.workers.base import WorkerModel
from marketsim.workers.registry import DEFAULT_MODEL, WORKER_MODELS

#: The scenario JSON Schema as shipped (tests/scenario/test_schema.py keeps it current).
SCHEMA = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def doc(**workers: Any) -> dict[str, Any]:
    return {"tasks": {"count": 10, "classes": 3}, "workers": {"count": 4, **workers},
            "budget": {"edges": 20}, "arms": [{"name": "a", "policy": "uniform"}]}


def model_doc(cls: type[WorkerModel]) -> dict[str, Any]:
    """A valid scenario of model ``cls`` (its example table when its defaults are not one)."""
    out = doc(model=cls.name, **({cls.table: dict(cls.example)} if cls.example else {}))
    if cls.scores:
        out["tasks"] = {"count": 10}
        out["arms"][0]["inference"] = cls.default_method
    return out


def error(data: dict[str, Any]) -> str:
    with pytest.raises(InputError) as exc:
        parse_scenario(data, "x.toml")
    return str(exc.value)


def test_a_module_contributes_the_models_it_declares(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "scratch_workers"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "two_coin.py").write_text(
        "from marketsim.workers.one_coin import OneCoinWorkers\n"
        "from marketsim.workers.classes import ClassWorkers\n"
        "class TwoCoinWorkers(OneCoinWorkers):\n    name = 'two-coin'\n"
        "class Helper(ClassWorkers):\n    pass\n")
    (package / "_private.py").write_text(
        "from marketsim.workers.one_coin import OneCoinWorkers\n"
        "class Hidden(OneCoinWorkers):\n    name = 'hidden'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        found = declared_classes("scratch_workers", WorkerModel, "name")
    finally:
        for module in [m for m in sys.modules if m.startswith("scratch_workers")]:
            sys.modules.pop(module)
    # not the imported one, nor the helper, nor a _private module's
    assert [cls.name for cls in found] == ["two-coin"]


def test_every_model_is_registered_once_with_consistent_facts() -> None:
    assert [n for n, c in WORKER_MODELS.items() if c.default] == [DEFAULT_MODEL]
    for name, cls in WORKER_MODELS.items():
        assert cls.name == name and cls.__module__.startswith("marketsim.workers.")
        assert (cls.labels, cls.metric) in {("classes", "error_rate"), ("scores", "rmse")}
        assert cls.default_method in cls.methods
        assert not (cls.scores and cls.allows_dynamics)
        assert (cls.table is None) == (not cls.Options.model_fields)


@pytest.mark.parametrize("name", sorted(WORKER_MODELS))
def test_each_model_parses_as_its_own_variant_with_its_options(name: str) -> None:
    cls = WORKER_MODELS[name]
    sc = parse_scenario(model_doc(cls), "x.toml")
    assert sc.worker_model is cls and type(sc.workers.worker_model) is cls
    assert sc.workers.options == (cls.Options.model_validate(cls.example) if cls.table
                                  else cls.Options())
    SCHEMA.validate(model_doc(cls))


@pytest.mark.parametrize("name", sorted(n for n, c in WORKER_MODELS.items() if c.table))
def test_another_models_table_is_refused_by_name_in_the_file_and_the_schema(name: str) -> None:
    cls = WORKER_MODELS[name]
    other = next(c for c in WORKER_MODELS.values() if c is not cls and not c.scores)
    data = model_doc(other)
    data["workers"][cls.table] = dict(cls.example)
    assert error(data).endswith(f"workers.{cls.table} only applies with workers.model = "
                                f"'{name}'")
    with pytest.raises(jsonschema.ValidationError):
        SCHEMA.validate(data)


def test_unknown_model_and_misspelt_keys_are_one_line_errors_naming_the_key() -> None:
    assert "workers.model must be one of" in error(doc(model="glda"))
    assert error(doc(model="glda")).endswith("did you mean glad?")
    line = error(doc(model="confusion", confusoin={}))
    allowed = line.split("allowed here: ")[1]
    assert "workers.confusoin is not a known key" in line and line.endswith("confusion?")
    assert "confusion" in allowed and "glad" not in allowed  # the variant's own keys
    assert error(doc(model="confusion", confusion={"hihg": 0.5})).endswith("did you mean high?")


@pytest.mark.parametrize("name", sorted(WORKER_MODELS))
def test_each_model_says_in_its_words_how_its_workers_answer(name: str,
                                                             capsys: pytest.CaptureFixture
                                                             ) -> None:
    cls = WORKER_MODELS[name]
    sc = parse_scenario(model_doc(cls), "x.toml")
    text = world_text(sc)
    assert name in text and "**10 tasks**" in text and "**4 " in text
    list_cmd.execute(list_cmd.argparse.Namespace(policy=None, method=None))
    listed = " ".join(capsys.readouterr().out.split())
    assert name in listed and " ".join(cls.summary.split()[:4]) in listed
