"""Issue #26 point 2, #39 point 3: each inference method declares its parameters once, as its
class's ``Options`` model; the constructor, validation, the docs' settings tables, the JSON
Schema and ``marketsim list --method`` read it, so adding a setting is one edit of that
model."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from pydantic import ValidationError

from marketsim.aggregation import DawidSkene
from marketsim.aggregation.options import param
from marketsim.aggregation.registry import METHODS
from marketsim.cli import main
from marketsim.market.inference import estimator_factory
from marketsim.scenario import docs
from marketsim.scenario.inference_options import method_settings
from marketsim.scenario.inference_spec import (
    METHOD_VARIANTS,
    InferenceSpec,
    _method_variant,
    settings_model,
)
from marketsim.scenario.parser import parse_scenario


def _doc(inference: Any) -> dict[str, Any]:
    return {"scenario": {"name": "settings"}, "tasks": {"count": 10},
            "workers": {"count": 4}, "budget": {"edges": 20},
            "arms": [{"name": "a", "policy": "uniform", "inference": inference}]}


def _section(markdown: str, heading: str) -> list[str]:
    """The keys of the generated table under ``### heading``."""
    body = markdown.split(f"\n### {heading}\n", 1)[1].split("\n### ", 1)[0]
    return [line.split("`")[1] for line in body.splitlines() if line.startswith("| `")]


@pytest.mark.parametrize("method", list(METHODS))
def test_the_model_is_what_validate_docs_schema_and_list_read(method: str, capsys) -> None:
    model = settings_model(method)
    keys = list(model.model_fields)
    assert list(method_settings(method)) == keys
    text = docs.markdown()
    if keys:
        assert _section(text, f"{method} inference settings") == keys
    else:
        assert f"### {method} inference settings" not in text
    branch = docs.json_schema()["$defs"][METHOD_VARIANTS[method].__name__]
    assert branch["properties"]["method"]["const"] == method
    assert set(branch["properties"]) == {"method", *keys}
    assert branch["additionalProperties"] is False
    assert main(["list", "--method", method]) == 0
    out = capsys.readouterr().out
    assert method in out and METHODS[method].description.split()[0] in out
    for key in keys:
        assert key in out
    if not keys:
        assert "settings: none" in out


def test_list_method_unknown_name_suggests(capsys) -> None:
    assert main(["list", "--method", "opt_ds"]) == 2
    err = capsys.readouterr().err
    assert "unknown inference method 'opt_ds'" in err and "did you mean opt-ds?" in err


class _Shrunk(DawidSkene):
    """Dawid-Skene with one more parameter, declared once in its ``Options``."""

    method = "ds"

    class Options(DawidSkene.Options):
        """Parameters of the test's Dawid-Skene."""

        shrink: float = param(0.0, "pull of the confusion counts toward uniform", ge=0,
                              le=1e6)


def test_a_parameter_added_to_the_model_needs_no_other_edit(monkeypatch, capsys) -> None:
    """A parameter declared in the class's ``Options`` is the constructor's (its signature
    too) and a scenario setting: the method's variant of ``[arms.inference]`` (what a
    scenario parses into, built from the class when the scenario module is imported), the
    estimator, docs, the JSON Schema and ``list --method`` see it."""
    monkeypatch.setitem(METHODS, "ds", _Shrunk)
    assert inspect.signature(_Shrunk).parameters["shrink"].default == 0.0
    assert _Shrunk(shrink=0.5).shrink == 0.5
    variant = _method_variant(_Shrunk)
    given = variant.model_validate({"method": "ds", "shrink": 0.5})
    assert given.settings == {"shrink": 0.5} and given.options.shrink == 0.5
    assert variant.model_validate({"method": "ds"}).options.shrink == 0.0  # its default
    with pytest.raises(ValidationError, match="shrink\n.*greater than or equal to 0"):
        variant.model_validate({"method": "ds", "shrink": -1.0})
    with pytest.raises(ValidationError, match="is not an option of method 'ds'.*did you mean "
                                              "shrink"):
        variant.model_validate({"method": "ds", "shrnk": 0.5})
    scenario = parse_scenario(_doc("ds"), "s.toml")
    spec = InferenceSpec.resolved("ds", settings_model("ds").model_validate({"shrink": 0.5}))
    assert estimator_factory(scenario.crowd, spec)().get_params()["shrink"] == 0.5
    assert spec.model_dump()["shrink"] == 0.5  # the run's record writes it
    with pytest.raises(ValueError, match="_Shrunk: shrink: input should be greater than"):
        _Shrunk(shrink=-1.0)
    assert "shrink" in _section(docs.markdown(), "ds inference settings")
    assert variant.model_json_schema()["properties"]["shrink"]["minimum"] == 0
    assert main(["list", "--method", "ds"]) == 0
    out = capsys.readouterr().out
    assert "shrink" in out and "≤ 1e+06" in out  # the row: name and range


def test_the_inference_table_is_the_union_of_the_methods_variants() -> None:
    """``[arms.inference]`` parses into the method's variant, built from its class; the JSON
    Schema's arm has one branch per method (its settings, nothing else) and the generic one
    (no method: the market's default)."""
    schema = docs.json_schema()
    refs = [b["$ref"].rsplit("/", 1)[-1] for b in
            schema["$defs"]["ArmSpec"]["properties"]["inference"]["anyOf"][1]["oneOf"]]
    assert refs == [*(v.__name__ for v in METHOD_VARIANTS.values()), "InferenceSpec"]
    for method, variant in METHOD_VARIANTS.items():
        assert list(variant.model_fields) == ["method", *settings_model(method).model_fields]
    scenario = parse_scenario(_doc({"method": "ds", "max_iter": 7}), "s.toml")
    assert scenario.arms[0].inference.options.max_iter == 7


def test_each_method_records_the_settings_it_runs_with() -> None:
    """The run's record (``to_dict``, the fingerprint) writes the method and every setting it
    takes, with its value, and no setting the method does not take."""
    for method in METHODS:
        workers = {"count": 4, "model": "gaussian-scores"} \
            if METHODS[method].output == "scores" else {"count": 4}
        doc = _doc(method) | {"workers": workers}
        record = parse_scenario(doc, "s.toml").to_dict()["arms"][0]["inference"]
        assert record.pop("method") == method
        assert set(record) <= set(settings_model(method).model_fields)
