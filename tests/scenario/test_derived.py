"""Every scenario derived from another is validated: a change that breaks a rule is a one-line
InputError naming the key, never a scenario the market would run with a broken rule."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

import marketsim
from marketsim.errors import InputError
from marketsim.policies.base import Policy
from marketsim.scenario.arm_specs import ArmSpec
from marketsim.scenario.parser import load_scenario, parse_scenario, scenario_from_dict
from marketsim.scenario.specs import Scenario
from marketsim.scenario.sweep import expand

SMALL: dict[str, Any] = {
    "scenario": {"name": "small", "seed": 1, "replicates": 2},
    "tasks": {"count": 20},
    "workers": {"count": 4},
    "budget": {"edges": 40, "batch": 10},
    "arms": [{"name": "uniform", "policy": "uniform"},
             {"name": "entropy", "policy": "entropy-greedy", "inference": "ds"}],
}
#: A scenario-wide blocking rule that waits for 10 gold answers.
BLOCKED = {**SMALL, "gold": {"count": 20, "rate": 0.2},
           "blocking": {"after": 10, "min_accuracy": 0.7}}
#: An import-path policy asking each task for more labels than there are workers.
TOO_MANY_OVERLAPS = {**SMALL, "arms": [{"name": "preset", "policy": {
    "name": "marketsim.policies.fixed_overlap:FixedOverlapPolicy", "overlap": 6}}]}


def message(call: Any) -> str:
    with pytest.raises(InputError) as info:
        call()
    text = str(info.value)
    assert "\n" not in text
    return text


@pytest.fixture(scope="module")
def small() -> Scenario:
    return scenario_from_dict(SMALL)


@pytest.mark.parametrize(("change", "needle"), [
    ({"seed": -1}, "scenario.seed must be >= 0, got -1"),
    ({"replicates": 0}, "scenario.replicates must be >= 1, got 0"),
    ({"name": ""}, "scenario.name is not valid: String should have at least 1 character"),
    ({"name": "  "}, "scenario.name must not be empty"),
    ({"seed": True}, "scenario.seed must be an integer, got True"),
    ({"replicates": 2.5}, "scenario.replicates must be an integer, got 2.5"),
])
def test_evolve_refuses_what_the_file_would(small: Scenario, change: dict[str, Any],
                                            needle: str) -> None:
    assert needle in message(lambda: small.evolve(**change))
    assert needle in message(lambda: small.replace(change))  # the same sentence as a file


def test_with_overrides_refuses_zero_replicates_and_negative_seeds(small: Scenario) -> None:
    assert "scenario.replicates must be >= 1, got 0" in message(
        lambda: small.with_overrides(replicates=0))
    assert "scenario.seed must be >= 0, got -5" in message(lambda: small.with_overrides(seed=-5))
    changed = small.with_overrides(replicates=7, seed=3)
    assert (changed.replicates, changed.seed, small.replicates) == (7, 3, 2)


def test_derived_values_keep_the_resolution(small: Scenario) -> None:
    """A changed seed resolves nothing again: the same policy class and method settings run."""
    changed = small.evolve(seed=9, name="other")
    for old, new in zip(small.arms, changed.arms, strict=True):
        assert new.policy.cls is old.policy.cls
        assert new.inference.options is old.inference.options
    assert changed.raw == small.raw  # the document it was given as


def test_an_arms_gold_must_be_enough_for_the_scenarios_blocking_rule() -> None:
    """The scenario blocks after 10 gold answers; an arm with only 5 gold questions of its own
    would judge its workers by a rule they can never complete."""
    doc = {**BLOCKED, "arms": [SMALL["arms"][0],
                               {"name": "own gold", "policy": "uniform",
                                "gold": {"count": 5, "rate": 0.2}}]}
    assert "arms[1].gold.count = 5 is below blocking.after = 10" in message(
        lambda: parse_scenario(doc, "s.toml"))
    with_rule = {**doc, "arms": [SMALL["arms"][0], {**doc["arms"][1],
                                                    "blocking": {"after": 3, "min_accuracy": 0.7}}]}
    parse_scenario(with_rule, "s.toml")  # the arm's own rule judges by its own gold


def test_for_arm_checks_the_arm_against_the_scenario() -> None:
    scenario = scenario_from_dict(BLOCKED)
    clash = ArmSpec(name="few gold", policy="uniform", gold={"count": 5, "rate": 0.2})
    assert "arm 'few gold'.gold.count = 5 is below blocking.after = 10" in message(
        lambda: scenario.for_arm(clash))
    enough = ArmSpec(name="gold", policy="uniform", gold={"count": 12, "rate": 0.1})
    market = scenario.for_arm(enough)
    assert (market.gold.count, market.blocking.after) == (12, 10)
    assert scenario.for_arm(scenario.arms[0]) is scenario  # nothing of its own: unchanged


def test_for_arm_refuses_gold_in_a_score_market() -> None:
    scores = scenario_from_dict({**SMALL, "workers": {"count": 4, "model": "gaussian-scores"},
                                 "arms": [{"name": "u", "policy": "uniform"}]})
    arm = ArmSpec(name="gold", policy="uniform", gold={"count": 5, "rate": 0.2})
    assert "gold needs class labels" in message(lambda: scores.for_arm(arm))


def test_with_imports_applies_the_rules_of_a_file_read_with_imports() -> None:
    """Imported later (``run`` with ``allow_imports``), the policy meets the same checks as
    when the file is read with ``--allow-imports``: here, overlaps the crowd cannot give."""
    needle = "arms[0].policy.overlap = 6 must be between 1 and 4"
    assert needle in message(lambda: parse_scenario(TOO_MANY_OVERLAPS, allow_imports=True))
    lazy = parse_scenario(TOO_MANY_OVERLAPS)  # not imported: only its shape is checked
    assert needle in message(lazy.with_imports)
    assert needle in message(lambda: lazy.resolve_imports(True))
    assert "pass --allow-imports" in message(lambda: lazy.resolve_imports(False))


def test_with_imports_keeps_overrides_and_record() -> None:
    fine = {**TOO_MANY_OVERLAPS, "arms": [{"name": "preset", "policy": {
        "name": "marketsim.policies.fixed_overlap:FixedOverlapPolicy", "overlap": 2}}]}
    lazy = parse_scenario(fine).with_overrides(seed=11, replicates=3)
    ready = lazy.resolve_imports(True)
    assert (ready.seed, ready.replicates, ready.raw) == (11, 3, lazy.raw)
    assert ready.arms[0].policy.resolved and not lazy.arms[0].policy.resolved
    assert ready.to_dict() == lazy.to_dict()  # importing it does not change the run's identity


def test_sweep_points_are_validated_and_named() -> None:
    sweep = scenario_from_dict({**SMALL, "sweep": {"workers.count": [3, 5]}})
    points = expand(sweep.with_overrides(replicates=4))
    assert [(p.workers.count, p.replicates, p.sweep_point) for p in points] == [
        (3, 4, (("workers.count", 3),)), (5, 4, (("workers.count", 5),))]
    bad = scenario_from_dict({**SMALL, "sweep": {"workers.count": [3, 0]}})
    assert "sweep point workers.count=0: workers.count must be >= 1, got 0" in message(
        lambda: expand(bad))


def test_one_public_scenario_class_and_one_load_scenario() -> None:
    """``marketsim.Scenario`` is the class every reader returns, with the Python changes on
    it; ``marketsim.load_scenario`` is the command line's."""
    assert marketsim.Scenario is Scenario
    assert marketsim.load_scenario is load_scenario
    assert marketsim.scenario_from_dict is scenario_from_dict
    from_file = load_scenario("scenarios/30_workers.toml")
    assert type(from_file) is Scenario and type(parse_scenario(SMALL)) is Scenario
    assert from_file.replace(replicates=2).replicates == 2
    table = from_file.workers  # a table writes itself as a file's table, under its own name
    assert "document" not in type(table).__dict__ and table.as_written()["count"] == 30


class _Oldest(Policy):
    """A policy object: the tasks in index order."""

    name = "oldest"

    def bind(self, info: Any) -> None:
        self.n = info.n_tasks

    def rank(self, state: Any, rng: Any) -> Any:
        return range(self.n)


def test_objects_survive_every_derivation_and_pickling(small: Scenario) -> None:
    mine = small.with_arms({"policy": _Oldest()}, keep=True)
    for derived in (mine.evolve(seed=4), mine.with_overrides(replicates=1),
                    mine.replace({"workers.count": 5}), mine.resolve_imports(False),
                    pickle.loads(pickle.dumps(mine))):
        arm = derived.arms[2]
        assert (arm.name, type(arm.policy.obj)) == ("_Oldest", _Oldest)
    assert isinstance(mine.document()["arms"][2]["policy"], _Oldest)
    assert "arms[0].policy must be a string or a table, got 3" in message(
        lambda: scenario_from_dict({**SMALL, "arms": [{"name": "n", "policy": 3}]}))
