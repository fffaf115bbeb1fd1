"""Issue #26 point 2: each inference method declares its settings once, as the ``Options``
model its registry entry names; validation, the docs' settings tables, the JSON Schema and
``marketsim list --method`` read it, so adding a setting is one edit of that model."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from marketsim.aggregation.options import EMOptions
from marketsim.aggregation.registry import METHODS
from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.market.inference import estimator_factory
from marketsim.options import F
from marketsim.scenario import docs
from marketsim.scenario.inference_options import method_settings
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
    model = METHODS[method].options
    keys = list(model.model_fields)
    assert list(method_settings(method)) == keys
    text = docs.markdown()
    if keys:
        assert _section(text, f"{method} inference settings") == keys
    else:
        assert f"### {method} inference settings" not in text
    branch = next(b for b in docs.json_schema()["$defs"]["InferenceSpec"]["anyOf"]
                  if b["properties"].get("method") == {"const": method})
    assert set(branch["properties"]) == {"method", *keys}
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


class _WithSmoothing(EMOptions):
    """Settings of ``ds`` with Laplace smoothing."""

    smoothing: float = F(0.0, "Laplace smoothing of the confusion counts", ge=0, le=1e6)


def test_a_setting_added_to_the_model_needs_no_other_edit(monkeypatch, capsys) -> None:
    """``DawidSkene`` takes ``smoothing``; declaring it in ``ds``'s model (here a subclass
    named by the registry entry) is enough for parse, the estimator, docs, the JSON Schema
    and ``list --method``."""
    monkeypatch.setitem(METHODS, "ds", replace(METHODS["ds"], options=_WithSmoothing))
    scenario = parse_scenario(_doc({"method": "ds", "smoothing": 0.5}), "s.toml")
    assert estimator_factory(scenario, scenario.arms[0].inference)().get_params()[
        "smoothing"] == 0.5
    plain = parse_scenario(_doc("ds"), "s.toml")
    assert plain.to_dict()["arms"][0]["inference"]["smoothing"] == 0.0  # its default
    assert scenario.to_dict()["arms"][0]["inference"]["smoothing"] == 0.5
    with pytest.raises(InputError, match=r"arms\[0\]\.inference\.smoothing must be >= 0"):
        parse_scenario(_doc({"method": "ds", "smoothing": -1.0}), "s.toml")
    with pytest.raises(InputError, match="is not an option of method 'ds'.*did you mean "
                                         "smoothing"):
        parse_scenario(_doc({"method": "ds", "smothing": 0.5}), "s.toml")
    assert "smoothing" in _section(docs.markdown(), "ds inference settings")
    branch = next(b for b in docs.json_schema()["$defs"]["InferenceSpec"]["anyOf"]
                  if b["properties"].get("method") == {"const": "ds"})
    assert branch["properties"]["smoothing"]["minimum"] == 0
    assert main(["list", "--method", "ds"]) == 0
    out = capsys.readouterr().out
    assert "smoothing" in out and "≤ 1e+06" in out  # the row: name and range


def test_each_method_records_the_settings_it_runs_with() -> None:
    """The run's record (``to_dict``, the fingerprint) writes the method and every setting it
    takes, with its value, and no setting the method does not take."""
    for method in METHODS:
        workers = {"count": 4, "model": "gaussian-scores"} \
            if METHODS[method].output == "scores" else {"count": 4}
        doc = _doc(method) | {"workers": workers}
        record = parse_scenario(doc, "s.toml").to_dict()["arms"][0]["inference"]
        assert record.pop("method") == method
        assert set(record) <= set(METHODS[method].options.model_fields)
