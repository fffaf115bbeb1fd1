"""Every kind of machine annotator as a component (issue #41): registered with its facts, its
options the ``[[machines]]`` variant the scenario validates, the JSON Schema and the docs
read, its words in report.md's Setup; and a scenario without machines written as before."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from marketsim.errors import InputError
from marketsim.machines.base import MachineAnnotator, MachineOptions
from marketsim.machines.registry import DEFAULT_KIND, MACHINE_KINDS
from marketsim.report.crowd_text import machines_text
from marketsim.scenario.docs import SCHEMA_FILE
from marketsim.scenario.parser import parse_scenario
from marketsim.study.runner import run_study

SCHEMA = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def doc(*machines: dict[str, Any], **workers: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"tasks": {"count": 10, "classes": 3},
                           "workers": {"count": 4, **workers}, "budget": {"edges": 20},
                           "arms": [{"name": "a", "policy": "uniform"}]}
    if machines:
        out["machines"] = list(machines)
    return out


def error(data: dict[str, Any]) -> str:
    with pytest.raises(InputError) as exc:
        parse_scenario(data, "x.toml")
    return str(exc.value)


def test_every_kind_is_registered_with_its_facts_and_one_default() -> None:
    assert MACHINE_KINDS[DEFAULT_KIND].default
    for kind, cls in MACHINE_KINDS.items():
        assert issubclass(cls, MachineAnnotator) and cls.kind == kind and cls.summary
        assert issubclass(cls.Options, MachineOptions)
        assert cls.Options.model_fields["kind"].default == kind


@pytest.mark.parametrize("kind", sorted(MACHINE_KINDS))
def test_each_kind_parses_as_its_variant_round_trips_and_says_its_numbers(kind: str) -> None:
    data = doc({"name": "llm-1", "kind": kind, "price": 0.02, "latency": 3.0})
    SCHEMA.validate(data)
    scenario = parse_scenario(data, "x.toml")
    (machine,) = scenario.machines
    assert type(machine) is MACHINE_KINDS[kind].Options and machine.price == 0.02
    again = parse_scenario(scenario.resolved_document(), "x.toml")
    assert again.machines == scenario.machines
    words = machines_text(scenario)
    assert "'llm-1'" in words[2] and "0.02 per call" in words[2] and "3 time units" in words[2]


def test_a_scenario_without_machines_is_written_and_described_as_before() -> None:
    scenario = parse_scenario(doc(), "x.toml")
    assert scenario.machines == () and "machines" not in scenario.resolved_document()
    assert machines_text(scenario) == []


@pytest.mark.parametrize(("machines", "workers", "message"), [
    ([{"name": "a", "accurcy": 0.8}], {},
     "machines[0].accurcy is not a known key (allowed here: name, kind"),
    ([{"name": "a", "kind": "llm"}], {}, "machines[0].kind must be one of classifier"),
    ([{"name": "a"}, {"name": "a"}], {}, "machines[1].name 'a' names two machines"),
    ([{"name": "a", "confusion": [[0.9, 0.1], [0.2, 0.8]]}], {},
     "machines[0].confusion must be 3×3 (tasks.classes = 3), got 2 rows"),
    ([{"name": "a", "confusion": [[1, 0, 0]] * 3, "accuracy": 0.8}], {},
     "machines[0].accuracy give either accuracy or confusion, not both"),
    ([{"name": "a", "shared": 0.4}], {}, "machines[0].shared needs a family"),
    ([{"name": "a", "rate_limit": 0}], {}, "machines[0].rate_limit must be > 0, got 0"),
    ([{"name": "a", "temperature": 1.5}], {}, "machines[0].temperature must be <= 1"),
    ([{"name": "a"}], {"model": "gaussian-scores"},
     "machines needs a worker model of class labels"),
])
def test_bad_machines_are_one_line_errors_naming_the_key(
        machines: list[dict[str, Any]], workers: dict[str, Any], message: str) -> None:
    data = doc(*machines, **workers)
    if workers.get("model") == "gaussian-scores":
        data["tasks"] = {"count": 10}
        data["arms"][0]["inference"] = "mean"
    line = error(data)
    assert message in line and "\n" not in line



def test_machines_no_policy_asks_leave_the_run_as_it_was() -> None:
    """A scenario with machines runs the curves of the same scenario without them (no
    built-in policy asks them yet, and their draws use a stream of their own)."""
    plain = doc()
    plain["budget"] = {"edges": 30, "batch": 10}
    with_machines = {**plain, "machines": [{"name": "gpt", "accuracy": 0.9, "price": 0.01}]}
    rows = [[r for u in run_study(parse_scenario(d, "x.toml")) for r in u.rows]
            for d in (plain, with_machines)]
    assert rows[0] == rows[1] and len(rows[0]) >= 2
