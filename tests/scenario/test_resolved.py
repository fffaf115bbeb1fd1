"""Issue #25 point 8: the resolved scenario is the scenario. ``validate --toml``, ``validate
--json`` (``Scenario.to_dict()``) and ``run.json`` reproduce every value: parsing the resolved
form of a parsed scenario gives the same specs, for random valid scenarios, and ``run.json``
reads back as the same typed scenario (issue #39)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.scenario.inference_options import method_settings
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.run_record import recorded_scenario
from marketsim.scenario.toml_out import dumps
from marketsim.study.identity import difference
from marketsim.study.run_folder import run_record
from tests.helpers import example_counts

SOURCE = "/tmp/resolved.toml"
TWO_FEATURES = {
    "scenario": {"name": "two features"}, "tasks": {"count": 10, "features": {
        "count": 2, "probabilities": [[0.1, 0.9], [0.1, 0.2]]}},
    "workers": {"count": 4}, "budget": {"edges": 20},
    "arms": [{"name": "a", "policy": "uniform", "inference": "ds-features"}],
}


def test_validate_json_keeps_two_features_probabilities(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(dumps(TWO_FEATURES))
    for flag in ("--json", "--toml"):
        capsys.readouterr()
        code = main(["validate", str(scenario), flag])
        stdout, stderr = capsys.readouterr()
        assert code == 0, stderr
        out = json.loads(stdout) if flag == "--json" else tomllib.loads(stdout)
        assert out["tasks"]["features"]["probabilities"] == [[0.1, 0.9], [0.1, 0.2]]


def test_run_json_tells_probabilities_apart() -> None:
    record = run_record(parse_scenario(TWO_FEATURES, SOURCE))
    assert record.resolved_scenario["tasks"]["features"]["probabilities"] == [
        [0.1, 0.9], [0.1, 0.2]]
    other = json.loads(json.dumps(TWO_FEATURES))
    other["tasks"]["features"]["probabilities"] = [[0.3, 0.9], [0.1, 0.2]]
    assert run_record(parse_scenario(other, SOURCE)).fingerprint != record.fingerprint


# --- random valid scenarios ------------------------------------------------------------------
FLOAT = st.floats(0.05, 0.95, allow_nan=False).map(lambda x: round(x, 6))
POLICY_OPTIONS = {
    "uniform": st.just({}),
    "random-forest": st.fixed_dictionaries({}, optional={
        "n_trees": st.integers(1, 20), "criterion": st.sampled_from(["entropy", "gini"])}),
    "entropy-greedy": st.just({}),
    "knowledge-gradient": st.fixed_dictionaries({}, optional={
        "a0": st.floats(0.5, 3), "optimistic": st.booleans()}),
    "qasca": st.fixed_dictionaries({}, optional={"min_gain": FLOAT}),
    "explore-exploit": st.fixed_dictionaries({}, optional={
        "explore": st.integers(0, 5), "bound": st.sampled_from(["mean", "upper", "lower"])}),
}
SETTINGS = {"init": st.sampled_from(["majority", "random"]), "max_iter": st.integers(1, 500),
            "tol": st.sampled_from([0.0, 1e-6, 1e-7]),
            "class_prior": st.sampled_from(["true", "estimate"]), "alpha": st.floats(1, 9),
            "beta": st.floats(1, 9), "low": st.floats(0, 0.5), "warm_start": st.booleans(),
            "spectral_rule": st.sampled_from(["equivariant", "authors"])}
CLASS_METHODS = ["mv", "one-coin", "one-coin-beta", "one-coin-shifted-beta", "ds", "opt-ds",
                 "ds-features", "kos", "ghosh-svd"]


@st.composite
def _probabilities(draw: Any, n: int) -> list[float]:
    weights = draw(st.lists(st.integers(1, 9), min_size=n, max_size=n))
    return [w / sum(weights) for w in weights]


@st.composite
def _arm(draw: Any, idx: int, classes: int, continuous: bool) -> dict[str, Any]:
    if continuous:
        policy: Any = draw(st.sampled_from(["uniform", "uncertainty"]))
        method = draw(st.sampled_from(["gaussian-em", "gaussian-hard-em"]))
    else:
        names = [n for n in POLICY_OPTIONS if classes == 2 or n != "knowledge-gradient"]
        name = draw(st.sampled_from(names))
        options = draw(POLICY_OPTIONS[name])
        policy = {"name": name, **options} if options or draw(st.booleans()) else name
        method = draw(st.sampled_from(CLASS_METHODS))
    taken = [k for k in method_settings(method) if k in SETTINGS]
    chosen = draw(st.lists(st.sampled_from(taken), unique=True) if taken else st.just([]))
    inference: Any = {"method": method, **{k: draw(SETTINGS[k]) for k in chosen}}
    if "class_prior" in chosen and draw(st.booleans()):
        inference["class_prior"] = draw(_probabilities(classes))
    arm = {"name": f"arm {idx}", "policy": policy,
           "inference": inference if chosen or draw(st.booleans()) else method}
    if draw(st.booleans()):
        arm["initial"] = draw(st.sampled_from(["one-per-task", "bernoulli", "none"]))
    if not continuous and draw(st.booleans()):
        arm["gold"] = {"count": draw(st.integers(2, 6)), "rate": draw(FLOAT)}
        if draw(st.booleans()):
            arm["blocking"] = {"after": 2, "min_accuracy": draw(FLOAT)}
    return arm


@st.composite
def scenarios(draw: Any) -> dict[str, Any]:
    continuous = draw(st.booleans())
    tasks_n, workers_n = draw(st.integers(2, 30)), draw(st.integers(2, 8))
    doc: dict[str, Any] = {"scenario": {"name": draw(st.text("abc xyz-", min_size=1,
                                                              max_size=12).filter(str.strip)),
                                        "seed": draw(st.integers(0, 2**40)),
                                        "replicates": draw(st.integers(1, 4))}}
    tasks: dict[str, Any] = {"count": tasks_n}
    workers: dict[str, Any] = {"count": workers_n,
                               "arrivals": {"rate": draw(st.floats(0.1, 10))},
                               "service": {"mean": draw(st.floats(0, 3))}}
    classes = 1
    if continuous:
        workers["model"] = "gaussian-scores"
        workers["gaussian_scores"] = {"good_fraction": draw(FLOAT), "sigma": draw(FLOAT)}
        if draw(st.booleans()):
            tasks["means"] = {"alpha": draw(st.floats(0.5, 5)), "beta": draw(st.floats(0.5, 5))}
    else:
        classes = draw(st.integers(2, 4))
        tasks["classes"] = classes
        if draw(st.booleans()):
            tasks["prior"] = draw(_probabilities(classes))
        if draw(st.booleans()):
            count = draw(st.integers(1, 3))
            if draw(st.booleans()):
                tasks["features"] = {"count": count, "probabilities": [
                    [draw(FLOAT) for _ in range(count)] for _ in range(classes)]}
            else:
                tasks["features"] = {"count": count, "informativeness": draw(FLOAT)}
        model = draw(st.sampled_from(["one-coin", "confusion", "spammer-hammer"]))
        workers["model"] = model
        workers["ability"] = {"alpha": draw(st.floats(1, 9)), "low": draw(st.floats(0, 0.5))}
        if model == "confusion":
            if draw(st.booleans()):
                workers["confusion"] = {"design": "dirichlet", "concentration": draw(FLOAT),
                                        "diagonal_weight": draw(st.floats(0, 9))}
            else:
                low = draw(FLOAT)
                workers["confusion"] = {"low": low, "high": draw(st.floats(low, 1))}
        if model == "spammer-hammer":
            workers["spammer_hammer"] = {"hammer_fraction": draw(FLOAT)}
        if draw(st.booleans()):
            workers["capacity"] = draw(st.integers(1, 50))
        if draw(st.booleans()):
            workers["session_mean"] = draw(st.floats(1, 40))
        if draw(st.booleans()):
            workers["tiers"] = {"cuts": [0.6, 0.8], "noise": draw(FLOAT),
                                "prices": [1.0, draw(st.floats(1, 3)), draw(st.floats(3, 9))]}
        elif draw(st.booleans()):
            workers["price"] = draw(st.floats(0.1, 9))
        if draw(st.booleans()):
            doc["gold"] = {"count": draw(st.integers(2, 8)), "rate": draw(FLOAT),
                           "in_inference": draw(st.booleans())}
            if draw(st.booleans()):
                doc["blocking"] = {"after": 2, "min_accuracy": draw(FLOAT)}
    budget: dict[str, Any] = {"edges": draw(st.integers(tasks_n, tasks_n * workers_n)),
                              "initial": draw(st.sampled_from(["one-per-task", "bernoulli",
                                                               "none"])),
                              "batch": draw(st.integers(1, 50)),
                              "initial_probability": draw(FLOAT)}
    if not continuous and draw(st.booleans()):
        budget["money"] = draw(st.floats(1, 1e4))
    doc.update(tasks=tasks, workers=workers, budget=budget,
               output={"graph": True, "graphml": draw(st.booleans())})
    doc["arms"] = [draw(_arm(i, classes, continuous)) for i in range(draw(st.integers(1, 3)))]
    if draw(st.booleans()):
        doc["sweep"] = {"scenario": {"seed": [1, 2]},
                        "budget": {"batch": draw(st.lists(st.integers(1, 9), min_size=1,
                                                          max_size=3))}}
    return doc


@pytest.mark.parametrize("examples", example_counts(30, 150))
def test_resolved_scenario_parses_to_the_same_specs(examples: int) -> None:
    @settings(max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(scenarios())
    def check(doc: dict[str, Any]) -> None:
        _parses_to_the_same_specs(doc)

    check()


def _parses_to_the_same_specs(doc: dict[str, Any]) -> None:
    try:
        scenario = parse_scenario(doc, SOURCE)
    except InputError as exc:  # capacity or money that cannot hold the initial graph
        assume("initial graph" not in str(exc))
        raise
    # validate --toml: the TOML text read back
    assert parse_scenario(tomllib.loads(dumps(scenario.resolved_document())), SOURCE) == scenario
    # the same document as JSON
    as_json = json.loads(json.dumps(scenario.resolved_document()))
    assert parse_scenario(as_json, SOURCE) == scenario
    # validate --json and run.json: the resolved document as JSON, read back typed
    record = run_record(scenario)
    assert record.resolved_scenario == json.loads(json.dumps(scenario.to_dict()))
    assert recorded_scenario(record) == scenario


def test_a_key_missing_from_a_record_reads_as_its_default() -> None:
    """A run.json written before a key existed lacks it: its identity is recomputed from the
    typed scenario, where the key has its default, so the run is still the same study; a key
    set away from its default is part of the identity."""
    base = parse_scenario(TWO_FEATURES, SOURCE)
    record = run_record(base)
    older = json.loads(json.dumps(record.resolved_scenario))
    del older["workers"]["arrivals"], older["budget"]["initial"]
    earlier = record.model_copy(update={"resolved_scenario": older, "fingerprint": "older"})
    assert difference(earlier, record) is None
    moved = json.loads(json.dumps(TWO_FEATURES))
    moved["workers"]["capacity"] = 9
    assert "capacity" not in base.to_dict()["workers"]
    assert parse_scenario(moved, SOURCE).to_dict()["workers"]["capacity"] == 9
    assert difference(earlier, run_record(parse_scenario(moved, SOURCE))) == \
        "workers.capacity '(unset)' there, 9 here"
