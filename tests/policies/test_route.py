"""explore-exploit's ``route`` option (issue #30, point 5): the optimal-stopping value of a task
that may stop, wait for the crowd or ask the arriving worker, and the accept/decline and task
choices it makes for hand-built market states."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from marketsim.errors import InputError
from marketsim.policies.stopping_value import (
    GRID,
    RouteIndex,
    ask_cost,
    class_one_log_odds,
    rounded,
    stop_cost,
    waiting_value,
)
from marketsim.scenario.parser import parse_scenario
from marketsim.study.runner import market_setup
from tests.policies.test_live_posterior import refresh_state
from tests.policies.test_worker_aware import bound, check, info_of, small_market, stats


def at(values: np.ndarray, s: float) -> float:
    return float(np.interp(s, GRID, values))


def test_one_worker_value_is_the_hand_worked_stopping_problem() -> None:
    # Workers of accuracy 0.9 only, an error costs 10 labels. From even odds (stop: 5) one label
    # moves the log-odds to ±log 9, where stopping costs 10 × 0.1 = 1 and a second label would
    # cost at least 1 + 0.18 × 2 > 1: so V(±log 9) = 1 and V(0) = wait + 1 + 1.
    step = np.log(9.0)
    for wait in (1e-9, 0.5):
        value = waiting_value(np.array([0.9]), 10.0, wait)
        assert at(value, step) == pytest.approx(1.0, abs=0.02)
        assert at(value, 0.0) == pytest.approx(2.0 + wait, abs=0.02)
    # Far out, stopping is cheaper than any label.
    np.testing.assert_allclose(value[np.abs(GRID) > 6], stop_cost(GRID[np.abs(GRID) > 6], 10))


def test_crowd_value_satisfies_its_bellman_equation() -> None:
    crowd = np.array([0.62, 0.71, 0.75, 0.8, 0.83, 0.9, 0.96, 0.96])
    price, wait = 70.0, 0.2
    value = waiting_value(crowd, price, wait)
    values, counts = np.unique(rounded(crowd), return_counts=True)
    share = counts / counts.sum()
    ask = ask_cost(value, values)
    # The task takes exactly the workers whose label costs less than going on: V = wait +
    # Σ π min(V, Q), or it stops.
    go_on = wait + (share[:, None] * np.minimum(value[None, :], ask)).sum(axis=0)
    np.testing.assert_allclose(value, np.minimum(stop_cost(GRID, price), go_on), atol=1e-6)
    # A costlier wait takes more workers: the least accurate worker taken at even odds.
    def weakest_taken(w: float) -> float:
        v = waiting_value(crowd, price, w)
        q = ask_cost(v, values)[:, np.argmin(np.abs(GRID))]
        return float(values[q < at(v, 0.0)].min())
    assert weakest_taken(0.01) > weakest_taken(0.2) > weakest_taken(2.0)


#: Thirty workers (as worker_aware.toml's crowd): two excellent, a few good, many middling.
CROWD = np.array([0.43, 0.53, 0.56, 0.59, 0.63, 0.63, 0.67, 0.68, 0.7, 0.71, 0.71, 0.71, 0.74,
                  0.74, 0.74, 0.74, 0.78, 0.78, 0.79, 0.8, 0.81, 0.81, 0.81, 0.82, 0.84, 0.88,
                  0.88, 0.9, 0.96, 0.96])


def crowd_state(log_odds: np.ndarray):
    """Tasks at ``log_odds`` (class 1 against 0), a crowd of known accuracies (10,000 labels
    of evidence each, so the posterior mean is the accuracy to 4 decimals), every label read."""
    q = 1.0 / (1.0 + np.exp(-log_odds))
    proba = np.stack([1.0 - q, q], axis=1)
    state = refresh_state(proba, CROWD, ([], [], []), n_seen=0)
    counts = np.stack([CROWD * 1e4, (1.0 - CROWD) * 1e4], axis=1)
    return replace(state, skill_counts=counts, workers=stats(CROWD.size))


def expected_pick(worker: int, log_odds: np.ndarray, price: float, wait: float) -> int | None:
    """The formula: the task of largest positive V(s) − Q_p(s), None when there is none."""
    index = RouteIndex(price, wait)
    index.set_crowd(CROWD)
    score = index.index(float(CROWD[worker]), log_odds)
    return int(np.argmax(score)) if score.max() > 0 else None


def test_route_accepts_declines_and_routes_as_the_index_says() -> None:
    # Tasks from even odds to nearly settled.
    log_odds = np.array([0.0, -1.5, -2.5, -3.5, -4.5, -7.0])
    state = crowd_state(log_odds)
    policy = bound("explore-exploit", info_of(log_odds.size, CROWD.size), explore=0,
                   route=True, price=100.0, wait=0.1)
    rng = np.random.default_rng(0)
    picks = {w: policy.assign(w, state, rng) for w in (0, 20, 25, 28)}
    for w, got in picks.items():
        assert got == expected_pick(w, log_odds, 100.0, 0.1), w
    # The middling workers are declined; the good and the excellent get different tasks: the
    # 0.88 worker the one an answer of theirs can settle (-3.5), the 0.96 worker a doubtful one.
    assert picks[0] is None and picks[20] is None
    assert picks[25] == 3 and picks[28] is not None and picks[28] < 3
    # A held task is never given: the next best by the same index.
    held = np.zeros(log_odds.size, dtype=bool)
    held[3] = True
    index = RouteIndex(100.0, 0.1)
    index.set_crowd(CROWD)
    score = np.where(held, -np.inf, index.index(0.88, log_odds))
    assert policy.assign(25, replace(state, held=held), rng) == int(np.argmax(score))


def test_route_never_stalls_when_no_label_is_worth_its_price() -> None:
    # Every task settled: nobody's label saves anything (the best worker's index is about -1,
    # the label's price, everywhere), so the arriving worker, even a poor one, gets their
    # largest-index task instead of being turned away forever.
    log_odds = np.array([-9.0, -8.0, 9.5])
    state = crowd_state(log_odds)
    policy = bound("explore-exploit", info_of(3, CROWD.size), explore=0, route=True)
    index = RouteIndex(70.0, 0.2)
    index.set_crowd(CROWD)
    assert index.index(0.96, log_odds).max() < -0.99
    got = policy.assign(0, state, np.random.default_rng(0))
    assert got is not None and got == int(np.argmax(index.index(float(CROWD[0]), log_odds)))


def test_route_reads_the_live_posterior() -> None:
    # The refresh saw nothing; two labels since from an excellent worker settle task 0, so the
    # good worker is sent to the other doubtful task, not to the settled one.
    log_odds = np.array([0.0, -1.0])
    q = 1.0 / (1.0 + np.exp(-log_odds))
    base = crowd_state(log_odds)
    received = ([0, 0], [29, 28], [0, 0])
    live = refresh_state(np.stack([1 - q, q], axis=1), CROWD, received, n_seen=0)
    state = replace(live, skill_counts=base.skill_counts, workers=base.workers)
    policy = bound("explore-exploit", info_of(2, CROWD.size), explore=0, route=True)
    assert class_one_log_odds(policy.live_view(state)[0])[0] < -4
    assert policy.assign(27, state, np.random.default_rng(0)) == 1


def doc(classes: int, **policy: object) -> dict[str, object]:
    return {"scenario": {"seed": 1, "replicates": 1},
            "tasks": {"count": 10, "classes": classes},
            "workers": {"count": 3},
            "budget": {"edges": 30, "batch": 10},
            "arms": [{"name": "a", "policy": {"name": "explore-exploit", **policy}}]}


def test_route_options_are_checked_at_parse() -> None:
    with pytest.raises(InputError) as refused:
        parse_scenario(doc(3, route=True), "r.toml")
    message = str(refused.value)
    assert "arms[0].policy" in message and "route" in message and "binary" in message
    assert "\n" not in message
    parse_scenario(doc(3), "r.toml")  # the threshold rule works for any number of classes
    parse_scenario(doc(2, route=True, price=50.0, wait=0.05), "r.toml")
    with pytest.raises(InputError, match="price"):
        check("explore-exploit", {"route": True, "price": 0.5})
    with pytest.raises(InputError, match="wait"):
        check("explore-exploit", {"route": True, "wait": 0.0})
    with pytest.raises(InputError, match="route"):
        check("explore-exploit", {"route": "yes"})


def test_route_in_a_market_same_seed_same_curve() -> None:
    runs = [small_market("explore-exploit", {"route": True, "explore": 0}, {})
            for _ in range(2)]
    (_, _, first), (_, _, second) = runs
    assert first == second
    assert first[-1].edges == 160 and first[-1].error_rate < first[0].error_rate


def route_market(wait: float):
    """A 120-task, 10-worker market routed at ``wait`` (no gold): the market, its world and
    curve."""
    from marketsim.market.inference import estimator_factory
    from marketsim.market.market import Market
    from marketsim.market.worker_models import draw_world
    from marketsim.policies.registry import make_policy
    from marketsim.study.seeds import unit_streams, world_rng

    options = {"route": True, "explore": 0, "wait": wait}
    sc = parse_scenario({
        "scenario": {"seed": 11, "replicates": 1},
        "tasks": {"count": 120, "classes": 2, "prior": [0.75, 0.25]},
        "workers": {"count": 10, "ability": {"distribution": "shifted-beta", "alpha": 6,
                                             "beta": 2, "low": 0.1}},
        "budget": {"edges": 400, "batch": 20, "initial": "one-per-task"},
        "arms": [{"name": "a", "policy": {"name": "explore-exploit", **options},
                  "inference": "one-coin-shifted-beta"}],
    }, "route.toml")
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    market = Market(market_setup(sc), world, make_policy("explore-exploit", options),
                    estimator_factory(sc.crowd, sc.arms[0].inference), unit_streams(sc.seed, 0, 0))
    return market, world, market.run()


def test_wait_is_the_knob_between_labels_and_time() -> None:
    """A cheap wait keeps the tasks for the best workers: the labels bought come from more
    accurate workers, and the same budget takes longer to spend; a dear wait takes whoever
    comes, as entropy-greedy would."""
    bought, accuracy, time = {}, {}, {}
    for wait in (0.02, 5.0):
        market, world, curve = route_market(wait)
        labels = market.workforce.stats().labels - np.bincount(world.initial_workers,
                                                               minlength=10)
        bought[wait] = labels
        accuracy[wait] = float(labels @ world.ability / labels.sum())
        time[wait] = curve[-1].sim_time
        assert curve[-1].edges == 400 and curve[-1].error_rate < curve[0].error_rate
    assert accuracy[0.02] > accuracy[5.0] + 0.03
    assert time[0.02] > 2 * time[5.0]
    # At the dear wait most arrivals label (280 labels bought); only workers whose label is
    # worth less than its price anywhere are turned away.
    assert time[5.0] < 1.5 * 280
