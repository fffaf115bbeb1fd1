"""Bounds that mean something (issue #38, point 9): a value with which the market or a kernel
cannot work is refused when the scenario is read (one line naming the key and the allowed
range, exit 2), and every value accepted works — finite money, no NaN matrices, a stopping
value that converges — down to the ends of the accepted ranges.

One test per key family (prices, crowd matrices, route's stopping value, presets' label counts
per task), and a property test running small scenarios at extreme but accepted values."""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import marketsim
import marketsim.policies.stopping_value as sv
from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.market.worker_models import draw_world
from marketsim.policies.dynamic_overlap import DynamicOverlapOptions
from marketsim.policies.explore_exploit import ExploreExploitOptions
from marketsim.scenario.crowd_specs import AbilitySpec, ArrivalsSpec, TiersSpec, WorkersSpec
from marketsim.scenario.market_specs import BudgetSpec
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.toml_out import dumps
from marketsim.study.seeds import world_rng
from marketsim.workers.communities import CommunitiesSpec
from marketsim.workers.confusion import ConfusionSpec
from marketsim.workers.dynamics import DynamicsSpec
from marketsim.workers.glad import GladSpec
from tests.helpers import within

SCHEMA_WORDS = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum",
                "le": "maximum"}


def bound(model: Any, key: str, which: str) -> float:
    """The declared bound ``which`` (``gt``, ``ge``, ``lt``, ``le``) of ``model.key`` (of each
    entry, for an array), read from the model's JSON schema: the tests read the one
    declaration the parser, ``scenario.schema.json`` and the docs read."""
    prop = model.model_json_schema()["properties"][key]
    for part in [prop, *prop.get("anyOf", [])]:
        for node in (part, part.get("items", {})):
            if SCHEMA_WORDS[which] in node:
                return float(node[SCHEMA_WORDS[which]])
    raise AssertionError(f"{model.__name__}.{key} declares no {which} bound")


def doc(**tables: Any) -> dict[str, Any]:
    """A small binary market; ``tables`` replace or extend its tables."""
    out: dict[str, Any] = {
        "scenario": {"name": "bounds", "seed": 4, "replicates": 1},
        "tasks": {"count": 12, "classes": 2},
        "workers": {"count": 4},
        "budget": {"edges": 36, "batch": 6},
        "arms": [{"name": "a", "policy": "uniform", "inference": "ds"}],
    }
    for name, table in tables.items():
        out[name] = table
    return out


def refused(data: dict[str, Any], *needles: str) -> str:
    with pytest.raises(InputError) as caught:
        parse_scenario(data, "bounds.toml")
    line = str(caught.value)
    assert "\n" not in line
    for needle in needles:
        assert needle in line, line
    return line


# --- prices: every money figure finite ---------------------------------------------------------
PRICE_MAX = bound(WorkersSpec, "price", "le")


def test_one_maximum_price_for_every_price_key() -> None:
    assert bound(TiersSpec, "prices", "le") == PRICE_MAX
    assert bound(BudgetSpec, "min_price", "le") == PRICE_MAX
    money = bound(BudgetSpec, "edges", "le") * PRICE_MAX * (1 + bound(BudgetSpec, "fee", "le"))
    assert math.isfinite(money) and money < 1e30


@pytest.mark.parametrize(("workers", "key"), [
    ({"tiers": {"cuts": [0.7], "prices": [1.0, 1e308]}}, "workers.tiers.prices[1]"),
    ({"tiers": {"cuts": [0.7], "prices": [2e9, 1.0]}}, "workers.tiers.prices[0]"),
    ({"tiers": {"cuts": [0.7], "prices": [1.0, 0.0]}}, "workers.tiers.prices[1]"),
    ({"price": 1e308}, "workers.price"),
])
def test_prices_beyond_the_bound_are_refused_naming_the_key(workers: dict[str, Any],
                                                           key: str) -> None:
    refused(doc(workers={"count": 4, **workers}), key)


def test_a_refused_price_exits_2_with_one_line(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "tiers.toml"
    path.write_text(dumps(doc(workers={"count": 4, "tiers": {"cuts": [0.7],
                                                             "prices": [1.0, 1e308]}},
                              budget={"edges": 36, "batch": 6, "fee": 0.5})))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "workers.tiers.prices[1]" in err[0] and "1e+09" in err[0]


def test_the_highest_tier_price_with_the_highest_fee_keeps_money_finite() -> None:
    data = doc(workers={"count": 4, "tiers": {"cuts": [0.5], "prices": [PRICE_MAX, PRICE_MAX]}},
               budget={"edges": 36, "batch": 6, "fee": bound(BudgetSpec, "fee", "le")})
    result = marketsim.run(marketsim.scenario_from_dict(data), progress=False)
    money = result.curves["money"].to_numpy()
    assert np.all(np.isfinite(money)) and money[-1] == pytest.approx(36 * PRICE_MAX * 11)


# --- crowd matrices: no NaN however small the concentration ------------------------------------
COMMUNITY = [[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.0, 1.0]]]


@pytest.mark.parametrize("concentration", [5e-324, 1e-300, 1e-9, 1e-4])
def test_communities_with_a_tiny_concentration_give_valid_matrices(concentration: float) -> None:
    """Members' rows are Dirichlet(concentration · community row): as the concentration goes
    to 0 they go to the vertices, vertex l with the community's probability of l."""
    data = doc(workers={"count": 3000, "model": "communities", "communities": {
        "confusion": COMMUNITY, "concentration": concentration}})
    data["budget"] = {"edges": 12, "batch": 6}
    world = draw_world(parse_scenario(data, "c.toml").crowd, world_rng(4, 0))
    assert np.all(np.isfinite(world.confusion))
    np.testing.assert_allclose(world.confusion.sum(axis=2), 1.0)
    expected = np.mean(COMMUNITY, axis=0)  # two equally likely communities
    counts = np.full((2, 2), 3000)
    # a row is a vertex (or close to one): its share of answer l has the variance of a coin
    within(world.confusion.mean(axis=0), expected, counts)


def test_the_smallest_concentration_runs_and_saves(tmp_path: Path) -> None:
    low = bound(CommunitiesSpec, "concentration", "gt")
    data = doc(workers={"count": 4, "model": "communities", "communities": {
        "confusion": COMMUNITY, "concentration": math.nextafter(low, 1.0)}})
    result = marketsim.run(marketsim.scenario_from_dict(data), out=tmp_path / "run",
                           progress=False, figures=False)
    curves = result.curves
    assert np.all(np.isfinite(curves[["error_rate", "confusion_error"]].to_numpy()))
    assert (tmp_path / "run" / "summary.json").is_file()


@pytest.mark.parametrize("shape", [5e-324, 1e-310, 1e-4])
def test_glad_gamma_shapes_whose_quantiles_underflow_are_refused(shape: float) -> None:
    refused(doc(workers={"count": 4, "model": "glad", "glad": {"difficulty": "gamma",
                                                             "shape": shape}}),
            "workers.glad.shape", ">= 0.001")


def test_the_smallest_glad_shape_gives_a_valid_world() -> None:
    data = doc(workers={"count": 4, "model": "glad", "glad": {
        "difficulty": "gamma", "shape": bound(GladSpec, "shape", "ge")}})
    world = draw_world(parse_scenario(data, "g.toml").crowd, world_rng(4, 0))
    assert np.all(np.isfinite(world.confusion)) and np.all(np.isfinite(world.params.beta))
    assert np.all((world.ability >= 0.5 - 1e-9) & (world.ability <= 1))


# --- ability priors: the inference's as the world's -------------------------------------------
@pytest.mark.parametrize("method", ["one-coin-beta", "one-coin-shifted-beta"])
@pytest.mark.parametrize("key", ["alpha", "beta"])
def test_ability_prior_parameters_share_the_worlds_bound(method: str, key: str) -> None:
    most = bound(AbilitySpec, key, "le")
    data = doc()
    data["arms"] = [{"name": "a", "policy": "uniform",
                     "inference": {"method": method, key: most * 10}}]
    refused(data, f"arms[0].inference.{key}", f"{most:g}")
    data["arms"][0]["inference"][key] = most
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow in the MAP's quadratic
        result = marketsim.run(marketsim.scenario_from_dict(data), progress=False)
    assert np.all(np.isfinite(result.curves["error_rate"].to_numpy()))


# --- route's stopping value: converges, exactly, with bounded work -----------------------------
def bellman_gap(value: np.ndarray, crowd: np.ndarray, price: float, wait: float) -> float:
    """How far ``value`` is from ``V = min(stop, wait + Σ_p π_p min(V, Q_p))``."""
    values, counts = np.unique(sv.rounded(crowd), return_counts=True)
    share = counts / counts.sum()
    go_on = wait + (share[:, None] * np.minimum(value[None, :], sv.ask_cost(value, values))
                    ).sum(axis=0)
    return float(np.max(np.abs(value - np.minimum(sv.stop_cost(sv.GRID, price), go_on))))


#: route's largest price (an error's cost in labels) and wait.
ROUTE_MAX = 1e6


def test_route_declares_its_largest_price_and_wait() -> None:
    assert bound(ExploreExploitOptions, "price", "le") == ROUTE_MAX
    assert bound(ExploreExploitOptions, "wait", "le") == ROUTE_MAX
    # the grid's ends (log-odds ±16) are worth stopping at: less than one label of error cost
    assert ROUTE_MAX * float(sv.stop_cost(sv.GRID[-1:], 1.0)[0]) < 1.0


@pytest.mark.parametrize(("crowd", "price", "wait"), [
    ([0.51], ROUTE_MAX, 1e-9),                    # near-random workers, the largest price
    ([0.51, 0.52, 0.55], ROUTE_MAX, 1e-9),
    ([0.52, 0.6], 1e4, 1e-6),
    ([0.5, 0.51], ROUTE_MAX, 0.3),
    ([0.62, 0.71, 0.9], 70.0, 0.2),                # a market's usual crowd
    ([0.999], 1.0 + 1e-9, 1e-9),
    ([0.9], ROUTE_MAX, ROUTE_MAX),
])
def test_the_stopping_value_solves_its_bellman_equation_with_bounded_work(
        crowd: list[float], price: float, wait: float, monkeypatch: pytest.MonkeyPatch) -> None:
    sweeps = []
    real = sv.ask_cost
    monkeypatch.setattr(sv, "ask_cost", lambda v, a: sweeps.append(1) or real(v, a))
    value = sv.waiting_value(np.asarray(crowd), price, wait)
    monkeypatch.undo()
    assert np.all(np.isfinite(value))
    # exact to the value iteration's own tolerance, in labels, at any price
    assert bellman_gap(value, np.asarray(crowd), price, wait) <= 1e-6 * max(1.0, wait)
    assert len(sweeps) <= 1_000  # Bellman updates: no 20,000-sweep crawl


@pytest.mark.parametrize(("option", "value"), [("price", ROUTE_MAX * 10), ("wait", 1e300)])
def test_route_prices_beyond_the_grid_are_refused(option: str, value: float) -> None:
    data = doc()
    data["arms"] = [{"name": "r", "inference": "one-coin-shifted-beta", "policy": {
        "name": "explore-exploit", "route": True, option: value}}]
    refused(data, f"arms[0].policy.{option}", "<=")


# --- presets: label counts per task within the crowd -------------------------------------------
@pytest.mark.parametrize(("policy", "key"), [
    ({"name": "fixed-overlap", "overlap": 5}, "overlap = 5"),
    ({"name": "dynamic-overlap", "min_overlap": 5, "max_overlap": 6}, "min_overlap = 5"),
    ({"name": "dynamic-overlap", "min_overlap": 2}, "max_overlap = 5 (its default)"),
    ({"name": "until-agreement", "agree": 5, "max_overlap": 5}, "agree = 5"),
    ({"name": "until-agreement", "agree": 2, "max_overlap": 7}, "max_overlap = 7"),
])
def test_preset_label_counts_above_the_crowd_are_refused(policy: dict[str, Any],
                                                          key: str) -> None:
    data = doc()
    data["arms"] = [{"name": "p", "policy": policy}]
    refused(data, f"arms[0].policy.{key}", "workers.count = 4")


@pytest.mark.parametrize(("workers", "min_tier", "needle"), [
    ({"count": 4}, 1, "without [workers.tiers]"),
    ({"count": 4, "tiers": {"cuts": [0.8], "prices": [1.0, 2.0]}}, 2, "highest tier"),
])
def test_a_qualification_tier_nobody_can_be_in_is_refused(workers: dict[str, Any],
                                                          min_tier: int, needle: str) -> None:
    """A tier above the highest would admit everyone (nobody qualifies, and the market must
    not stall): the requirement would silently mean nothing."""
    data = doc(workers=workers)
    data["arms"] = [{"name": "q", "policy": {"name": "qasca", "min_tier": min_tier}}]
    refused(data, f"arms[0].policy.min_tier = {min_tier}", needle)


def test_preset_label_counts_equal_to_the_crowd_run() -> None:
    assert DynamicOverlapOptions.model_fields["max_overlap"].default > 4
    data = doc()
    data["arms"] = [{"name": "p", "policy": {"name": "fixed-overlap", "overlap": 3}},
                    {"name": "q", "policy": {"name": "until-agreement", "agree": 3,
                                             "max_overlap": 3}}]
    result = marketsim.run(marketsim.scenario_from_dict(data), progress=False)
    assert set(result.curves["arm"]) == {"p", "q"}


# --- property: extreme but accepted values, small markets --------------------------------------
FUZZ = settings(max_examples=int(15 * float(os.environ.get("MARKETSIM_FUZZ_SCALE", "1"))),
                deadline=None, derandomize=not os.environ.get("MARKETSIM_FUZZ_RANDOM"),
                database=None, suppress_health_check=[HealthCheck.too_slow])


def ends(model: Any, key: str) -> st.SearchStrategy[float]:
    """The ends of ``model.key``'s accepted range (just inside an open end)."""
    out = []
    for which, inside in (("gt", 1.0), ("ge", None), ("lt", -1.0), ("le", None)):
        try:
            b = bound(model, key, which)
        except AssertionError:
            continue
        out.append(b if inside is None else math.nextafter(b, inside * math.inf))
    return st.sampled_from(out)


@st.composite
def extreme_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    workers: dict[str, Any] = {"count": 4}
    model = draw(st.sampled_from(["one-coin", "confusion", "communities", "glad"]))
    workers["model"] = model
    if model == "confusion":
        workers["confusion"] = {"design": "dirichlet",
                                "concentration": draw(ends(ConfusionSpec, "concentration")),
                                "diagonal_weight": draw(ends(ConfusionSpec, "diagonal_weight")),
                                "sigma": draw(ends(ConfusionSpec, "sigma"))}
    elif model == "communities":
        workers["communities"] = {"confusion": COMMUNITY,
                                  "concentration": draw(ends(CommunitiesSpec, "concentration")),
                                  "sigma": draw(ends(CommunitiesSpec, "sigma"))}
    elif model == "glad":
        workers["glad"] = draw(st.sampled_from([
            {"sigma": draw(ends(GladSpec, "sigma"))},
            {"difficulty": "gamma", "shape": draw(ends(GladSpec, "shape"))}]))
    if draw(st.booleans()):
        workers["tiers"] = {"cuts": [0.6], "noise": draw(ends(TiersSpec, "noise")),
                            "prices": [draw(ends(TiersSpec, "prices")),
                                       draw(ends(TiersSpec, "prices"))]}
    else:
        workers["price"] = draw(ends(WorkersSpec, "price"))
    workers["arrivals"] = {"rate": draw(ends(ArrivalsSpec, "rate"))}
    if draw(st.booleans()):
        workers["dynamics"] = {key: draw(ends(DynamicsSpec, key))
                               for key in ("learning", "fatigue", "drift")}
    budget = {"edges": 36, "batch": 6, "fee": draw(ends(BudgetSpec, "fee"))}
    policy = draw(st.sampled_from([
        "uniform", {"name": "fixed-overlap", "overlap": 4},
        {"name": "explore-exploit", "route": True, "price": ROUTE_MAX, "wait": 5e-324},
        {"name": "explore-exploit", "route": True, "price": 1.0 + 1e-9, "wait": ROUTE_MAX}]))
    data = doc(workers=workers, budget=budget)
    data["arms"] = [{"name": "a", "policy": policy, "inference": "ds"}]
    data["gold"] = {"count": draw(st.sampled_from([1, 50])), "rate": draw(st.sampled_from(
        [0.0, 1.0]))}
    return data


@FUZZ
@given(extreme_scenarios())
def test_extreme_but_accepted_values_run_with_finite_money(data: dict[str, Any]) -> None:
    result = marketsim.run(marketsim.scenario_from_dict(data), progress=False)
    curves = result.curves
    money = curves["money"].to_numpy()
    assert np.all(np.isfinite(money)) and np.all(money >= 0)
    assert np.all(np.diff(money) >= 0)
    error = curves["error_rate"].to_numpy()
    assert np.all(np.isfinite(error)) and np.all((error >= 0) & (error <= 1))
    assert np.all(np.isfinite(curves["confusion_error"].to_numpy()))
