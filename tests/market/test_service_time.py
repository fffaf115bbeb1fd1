"""Answers that take time and hand-outs that are abandoned (``[workers.service]``):
simulated time to a fixed label count follows the loss-system formula, and abandonment keeps
the books (labels, money, capacity) true in every kind of market.

Each worker receives Poisson arrivals at rate λ/m (a uniformly chosen worker of the pool) and
is busy for the labelling time of each hand-out, mean μ·s_j; an arrival while busy is lost
(one Erlang loss server per worker: idle a share 1/(1 + (λ/m)·μ·s_j) of the time, whatever
the time's distribution). A hand-out is abandoned with probability q after the same time. So
labels come in at the rate

    r = (1 − q) · Σ_j (λ/m) / (1 + (λ/m)·μ·s_j),

and N labels take about N / r time units.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from marketsim.market.inference import estimator_factory
from marketsim.market.market import Market
from marketsim.market.replay import replay_world
from marketsim.market.worker_models import draw_world
from marketsim.policies.registry import make_policy
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.replay import load_replay
from marketsim.study.runner import market_setup
from marketsim.study.seeds import unit_streams, world_rng

LABELS = 15_000


def doc(service: dict[str, Any], *, rate: float = 1.0, n_workers: int = 20,
        edges: int = LABELS, **extra: Any) -> dict:
    out: dict[str, Any] = {
        "scenario": {"seed": 9},
        "tasks": {"count": 3000},
        "workers": {"count": n_workers, "service": service, "arrivals": {"rate": rate}},
        "budget": {"edges": edges, "initial": "none", "batch": 5000},
        "arms": [{"name": "mv", "policy": "uniform", "inference": "mv"}],
    }
    for table, keys in extra.items():  # extra tables, or keys added to the tables above
        out.setdefault(table, {}).update(keys)
    return out


def run(document: dict, policy: str | None = None, replicate: int = 0) -> Market:
    sc = parse_scenario(document, "time.toml")
    arm = sc.arms[0]
    replay = None if sc.replay is None else load_replay(sc.replay)
    world = (draw_world(sc.crowd, world_rng(sc.seed, replicate)) if replay is None else
             replay_world(replay, sc.budget.initial, sc.tasks.classes,
                          np.asarray(sc.tasks.prior), world_rng(sc.seed, replicate)))
    market = Market(market_setup(sc), world,
                    make_policy(policy or arm.policy.name, dict(arm.policy.options)),
                    estimator_factory(sc.crowd, arm.inference), unit_streams(sc.seed, replicate, 0),
                    keep_graph=False, replay=replay)
    market.run()
    return market


@functools.cache
def label_count_run(**service: float) -> Market:
    """The market of :func:`doc` with ``service``, run once per test process: the formula's
    cases and the ratio test read the same runs (read-only)."""
    return run(doc(service))


def formula_rate(market: Market) -> float:
    """Labels per unit of simulated time by the loss-system formula."""
    sc = market.setup
    m, lam = sc.workers.count, sc.workers.arrivals.rate
    speed = np.ones(m) if market.visits.speed is None else np.asarray(market.visits.speed)
    per_worker = (lam / m) / (1.0 + (lam / m) * sc.workers.service.mean * speed)
    return float((1.0 - sc.workers.service.abandon) * per_worker.sum())


@pytest.mark.parametrize("service", [
    {"mean": 0.0},
    {"mean": 20.0},
    {"mean": 60.0},  # three times slower
    {"mean": 20.0, "speed_spread": 1.0},
    {"mean": 20.0, "abandon": 0.3},
    {"mean": 0.0, "abandon": 0.5},
    {"mean": 60.0, "speed_spread": 0.7, "abandon": 0.2},
])
def test_time_to_a_label_count_follows_the_formula(service: dict) -> None:
    market = label_count_run(**service)
    assert market.bought == LABELS
    predicted = LABELS / formula_rate(market)
    simulated = market.curve[-1].sim_time
    assert abs(simulated / predicted - 1.0) < 0.04, (simulated, predicted)


def test_slower_service_and_abandonment_stretch_time_by_the_formulas_ratio() -> None:
    base = label_count_run(mean=20.0)
    slow = label_count_run(mean=60.0)
    gone = label_count_run(mean=20.0, abandon=0.3)
    t0, t_slow, t_gone = (m.curve[-1].sim_time for m in (base, slow, gone))
    # (1 + 3) / (1 + 1) = 2 for three times slower answers; 1 / (1 - 0.3) for abandonment
    assert abs(t_slow / t0 / 2.0 - 1) < 0.05 and abs(t_gone / t0 * 0.7 - 1) < 0.05


def test_speeds_are_per_worker_mean_one_and_shared_by_arms() -> None:
    market = run(doc({"mean": 5.0, "speed_spread": 0.5}, n_workers=400, edges=2000))
    speed = np.asarray(market.visits.speed)
    assert abs(speed.mean() - 1.0) < 4 * 0.53 / np.sqrt(400)  # sd of s is about 0.53
    assert abs(np.log(speed).std() - 0.5) < 0.06
    again = run(doc({"mean": 5.0, "speed_spread": 0.5}, n_workers=400, edges=2000),
                "entropy-greedy")
    assert again.visits.speed == market.visits.speed


def test_doubling_every_time_doubles_simulated_time_and_changes_nothing_else() -> None:
    service = {"mean": 7.0, "speed_spread": 0.8, "abandon": 0.25}
    dyn = {"workers": {"dynamics": {"learning": 1.0, "fatigue": 0.05, "rest": 30.0}}}
    one = run(doc(service, rate=1.0, edges=4000, **dyn))
    two = run(doc({**service, "mean": 14.0}, rate=0.5, edges=4000,
                  **{"workers": {"dynamics": {"learning": 1.0, "fatigue": 0.05,
                                              "rest": 60.0}}}))
    assert [p.sim_time * 2 for p in one.curve] == [p.sim_time for p in two.curve]
    assert [p.error_rate for p in one.curve] == [p.error_rate for p in two.curve]
    assert np.array_equal(one.log.view().labels, two.log.view().labels)


def test_zero_spread_and_zero_abandonment_are_the_old_market_draw_for_draw() -> None:
    plain = run(doc({"mean": 3.0}, edges=3000))
    explicit = run(doc({"mean": 3.0, "speed_spread": 0.0, "abandon": 0.0}, edges=3000))
    assert plain.curve == explicit.curve
    assert np.array_equal(plain.log.view().workers, explicit.log.view().workers)


# --- abandonment keeps the books ----------------------------------------------------------------
def books_closed(market: Market, q: float) -> None:
    """Labels, money and capacity after a run with abandonment (the ledger's own closing check
    ran at the end of the run; these are what a user reads)."""
    led = market.ledger
    assert led.abandoned.sum() > 0
    assert np.array_equal(led.handed, led.received + led.abandoned)
    assert led.in_flight == 0 and market.bought == market.curve[-1].edges
    assert led.spent == pytest.approx(float(np.dot(led.received, led.cost)))  # never paid
    assert led.committed == pytest.approx(led.spent)  # abandoned money released
    share = led.abandoned.sum() / (led.handed.sum() - market.world.initial_tasks.size)
    assert abs(share - q) < 0.06, share
    if market.setup.workers.capacity is not None:
        assert led.handed.max() <= market.setup.workers.capacity


@pytest.mark.parametrize("extra,policy", [
    ({}, None),
    ({"workers": {"capacity": 400}}, None),
    ({"budget": {"money": 7000.0, "initial": "one-per-task"}, "workers": {"price": 1.5}},
     None),
    ({"gold": {"count": 20, "rate": 0.1}, "blocking": {"after": 3, "min_accuracy": 0.5}},
     None),
    ({"gold": {"count": 20, "rate": 0.0}, "budget": {"initial": "one-per-task"}},
     "explore-exploit"),
    ({"workers": {"session_mean": 200.0}}, None),
    ({"budget": {"initial": "one-per-task"}}, "fixed-overlap"),
])
def test_abandonment_keeps_the_books_in_every_market(extra: dict, policy: str | None) -> None:
    q = 0.3
    market = run(doc({"mean": 4.0, "abandon": q}, edges=6000, **extra), policy)
    books_closed(market, q)
    assert market.bought == 6000 or market.stop is not None


def test_money_held_for_abandoned_labels_is_spent_before_the_money_stops_the_run() -> None:
    # Issue #38: the money of labels still out is held, not spent; the run waits for them and
    # buys again with what abandonments release, so it stops with the whole budget paid.
    market = run(doc({"mean": 50.0, "abandon": 0.5}, edges=6000,
                     budget={"money": 800.0}))
    assert market.stop is not None and market.stop.causes == ("money",)
    books_closed(market, 0.5)
    assert market.bought == market.ledger.target == 800 and market.ledger.spent == 800.0
    assert "800.00 paid, 0.00 of 800.00 left" in market.stop.detail


def test_abandonment_in_a_replay_gives_the_task_back_to_its_worker(tmp_path: Any) -> None:
    rows = ["task,worker,label"] + [f"t{i},w{j},{(i + j) % 2}" for i in range(30)
                                    for j in range(5)]
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "truth.csv").write_text("task,label\n" + "".join(f"t{i},{i % 2}\n"
                                                                 for i in range(30)))
    document = {"replay": {"labels": str(tmp_path / "labels.csv"),
                           "truth": str(tmp_path / "truth.csv")},
                "workers": {"service": {"mean": 1.0, "abandon": 0.4}},
                "budget": {"edges": 150, "batch": 50},
                "arms": [{"name": "mv", "policy": "uniform", "inference": "mv"}]}
    market = run(document)
    assert market.bought == 150  # every answer of the file was collected in the end
    assert market.ledger.abandoned.sum() > 0


def test_a_budget_that_needs_abandoned_pairs_stops_with_the_cause() -> None:
    # Issue #38: the crowd ran out of task-worker pairs (a result, recorded), not a stuck market.
    document = doc({"mean": 1.0, "abandon": 0.3}, n_workers=3, edges=30)
    document["tasks"] = {"count": 10}  # every task-worker pair is needed, and some are left
    market = run(document)
    assert market.stop is not None and market.stop.causes == ("abandonment",)
    assert "labelled or abandoned all 10 tasks" in market.stop.detail
    assert "lower workers.service.abandon" in market.stop.detail
    assert market.bought == 30 - int(market.ledger.abandoned_tasks.sum())
