"""Abandoned work is a state the market follows (issue #38, points 6 and 8).

A label handed out is outstanding until it is answered or abandoned (``workers.service.abandon``).
Whatever else the scenario switches on — platform presets, a money budget with prices, tiers and
a fee, gold questions and blocking, sessions, capacity — the market must: close a preset's task
only on answered labels; stop for money only when no money is held for labels still out; count a
task a worker abandoned like one they labelled (decline rules, running out of workers); never
ask a worker for gold they can no longer get; and end every run with its budget bought or a
recorded stop, never as a stuck market (exit 70) or a crash. The ledger keeps, at every step,
handed = answered + abandoned + outstanding and spent + held + left = budget.money.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from marketsim.errors import InputError
from marketsim.market.audit import check_labels
from marketsim.market.inference import estimator_factory
from marketsim.market.ledger import Ledger, LedgerError
from marketsim.market.market import Market
from marketsim.market.worker_models import draw_world
from marketsim.policies.base import MarketState, WorkerStats
from marketsim.policies.explore_exploit import ExploreExploitPolicy
from marketsim.policies.registry import make_policy
from marketsim.policies.worker_aware import open_workers
from marketsim.scenario.parser import parse_scenario
from marketsim.study.runner import market_setup
from marketsim.study.seeds import unit_streams, world_rng

PRESETS = ("fixed-overlap", "until-agreement", "dynamic-overlap")


def document(n_tasks: int, n_workers: int, edges: int, *, policy: Any = "uniform",
             service: dict[str, float] | None = None, seed: int = 0,
             initial: str = "none", batch: int = 5, **extra: Any) -> dict[str, Any]:
    """A small class market with abandonment; ``extra`` tables (or keys of the ones here)."""
    out: dict[str, Any] = {
        "scenario": {"seed": seed},
        "tasks": {"count": n_tasks},
        "workers": {"count": n_workers, "service": service or {"mean": 1.0, "abandon": 0.3}},
        "budget": {"edges": edges, "initial": initial, "batch": batch},
        "arms": [{"name": "a", "policy": policy, "inference": "mv"}],
    }
    for table, keys in extra.items():
        if table == "arm":
            out["arms"][0].update(keys)
        else:
            out.setdefault(table, {}).update(keys)
    return out


def run(doc: dict[str, Any], replicate: int = 0) -> Market:
    """One unit of ``doc``'s only arm, as the study runs it; the market after its run."""
    sc = parse_scenario(doc, "abandon.toml")
    arm = sc.arms[0]
    sc = sc.for_arm(arm)
    world = draw_world(sc.crowd, world_rng(sc.seed, replicate))
    market = Market(market_setup(sc), world, make_policy(arm.policy.name, dict(arm.policy.options)),
                    estimator_factory(sc.crowd, arm.inference), unit_streams(sc.seed, replicate, 0),
                    keep_graph=False)
    market.run()
    return market


def labels_per_task(market: Market) -> np.ndarray:
    """Answered task labels per task (initial graph included)."""
    return np.bincount(market.log.view().tasks, minlength=market.setup.tasks.count)


# --- presets ---------------------------------------------------------------------------------


def test_fixed_overlap_closes_every_task_only_with_its_overlap_answered() -> None:
    # Before: the preset said DONE once every task was *handed* its overlap, so a label
    # abandoned after that left the task one short while report.md said "closed every task".
    for seed in range(8):
        market = run(document(20, 10, 200, seed=seed, policy={"name": "fixed-overlap",
                                                              "overlap": 3},
                              service={"mean": 5.0, "abandon": 0.3}, batch=10))
        assert market.ledger.abandoned_tasks.sum() > 0
        assert market.stop is not None and market.stop.causes == ("closed",)
        assert labels_per_task(market).tolist() == [3] * 20, seed
        assert market.bought == 60


@pytest.mark.parametrize("policy", [{"name": "until-agreement", "agree": 2, "max_overlap": 4},
                                    {"name": "dynamic-overlap", "min_overlap": 2,
                                     "max_overlap": 4}])
def test_a_closed_preset_task_meets_its_rule_in_answered_labels(policy: dict) -> None:
    for seed in range(6):
        market = run(document(15, 8, 120, seed=seed, policy=policy,
                              service={"mean": 4.0, "abandon": 0.35}, batch=10))
        assert market.stop is not None, seed
        counts = labels_per_task(market)
        if market.stop.causes == ("closed",):
            assert (counts >= 2).all() and (counts <= 4).all(), (seed, counts)
            if policy["name"] == "until-agreement":
                votes = np.zeros((15, 2), dtype=np.int64)
                view = market.log.view()
                np.add.at(votes, (view.tasks, view.labels), 1)
                assert ((votes.max(axis=1) >= 2) | (counts >= 4)).all(), seed
        else:  # the crowd could not finish: a recorded stop that says so
            assert "ran out" not in market.stop.detail
            assert "still open under" in market.stop.detail


def test_a_preset_the_crowd_cannot_finish_because_of_abandonment_is_a_recorded_stop() -> None:
    # Before: every worker had labelled or abandoned the last open task and the market
    # stopped with "the market is stuck ... dynamic-overlap declined them all" (exit 70).
    market = run(document(20, 10, 200, seed=0, policy="dynamic-overlap",
                          service={"mean": 5.0, "abandon": 0.3}, batch=10))
    stop = market.stop
    assert stop is not None and stop.causes == ("abandonment",)
    assert "labelled or abandoned every task still open under dynamic-overlap" in stop.detail
    assert "lower workers.service.abandon or add workers" in stop.detail
    assert market.bought == market.curve[-1].edges < 200


def test_a_preset_whose_workers_leave_with_tasks_open_ends_as_a_recorded_stop() -> None:
    # Point 8: workers gone after their sessions, the ones left have labelled every open task:
    # before, "the market is stuck ... policy 'fixed-overlap' declined them all" (exit 70).
    stops = []
    for seed in range(8):
        market = run(document(30, 6, 100, seed=seed, policy={"name": "fixed-overlap",
                                                             "overlap": 3},
                              service={"mean": 1.0}, workers={"session_mean": 12.0}))
        assert market.stop is not None
        stops.append(market.stop)
        if market.stop.causes != ("closed",):
            assert market.stop.causes == ("sessions",)
            assert "still open under" in market.stop.detail
            assert "left after their session (raise workers.session_mean)" in market.stop.detail
    assert any(s.causes == ("sessions",) for s in stops)


# --- money -----------------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [
    {"budget": {"money": 60.0}},
    {"budget": {"money": 90.0, "fee": 0.2},
     "workers": {"tiers": {"cuts": [0.75], "prices": [1.0, 1.5]}}},
])
def test_the_money_stop_never_leaves_money_that_could_pay_a_worker(extra: dict) -> None:
    # Before: the stop counted the money held for labels still out as spent; those labels
    # were abandoned, the money released, and the run ended with money left, cause "money".
    for seed in range(5):
        market = run(document(50, 20, 400, seed=seed, service={"mean": 30.0, "abandon": 0.4},
                              batch=10, **extra))
        led, wf = market.ledger, market.workforce
        stop = market.stop
        assert stop is not None and stop.causes == ("money",)
        assert led.abandoned.sum() > 0 and led.in_flight == 0
        assert math.isclose(led.committed, led.spent, abs_tol=1e-9)  # nothing held
        left = extra["budget"]["money"] - led.spent
        may = ~wf.stopped
        assert (led.cost[may] > left * (1 + 1e-12)).all(), (seed, left)
        assert f"{led.spent:,.2f} paid" in stop.detail and "committed" not in stop.detail


def test_a_money_stop_with_labels_still_out_says_their_money_is_committed_not_spent() -> None:
    market = run(document(50, 20, 400, service={"mean": 30.0}, batch=10,
                          budget={"money": 60.0}))
    assert market.stop is not None and market.stop.causes == ("money",)
    assert "committed to the" in market.stop.detail and "still being answered" in \
        market.stop.detail


# --- declines and running out of workers -------------------------------------------------------


def stats(labels: list[int], abandoned: list[int] | None) -> WorkerStats:
    m = len(labels)
    zeros = np.zeros(m, dtype=np.int64)
    return WorkerStats(np.asarray(labels), zeros, zeros, np.zeros(m, dtype=bool), np.ones(m),
                       zeros, zeros - 1, np.ones(m, dtype=bool),
                       None if abandoned is None else np.asarray(abandoned))


def test_a_worker_who_labelled_or_abandoned_every_task_is_not_open() -> None:
    state = MarketState(labels=None, proba=np.full((4, 2), 0.5),  # type: ignore[arg-type]
                        skill=np.full(3, 0.7), spent=0, budget=0,
                        workers=stats([2, 4, 1], [2, 0, 1]))
    assert open_workers(state, 3).tolist() == [False, False, True]


@pytest.mark.parametrize("arm", [
    {"policy": {"name": "oracle-workers", "ability_cut": 0.8}},
    {"policy": {"name": "qasca", "min_tier": 1}},
])
def test_decline_rules_do_not_wait_for_workers_with_no_task_left(arm: dict) -> None:
    # Before: a worker above the cut who had labelled or abandoned every task still counted as
    # one who may work, so the others were declined for them and the market stalled (exit 70).
    for seed in range(6):
        market = run(document(8, 6, 30, seed=seed, arm=arm, batch=5,
                              workers={"tiers": {"cuts": [0.75], "prices": [1.0, 1.0]}}))
        assert market.bought == 30 or market.stop is not None, seed
        if market.stop is not None:
            assert "abandonment" in market.stop.causes


def test_running_out_of_workers_counts_abandoned_tasks() -> None:
    # Before: the workers left had each labelled or abandoned every task and the others had
    # left after their sessions, a genuine early stop, but it counted labels only and became
    # "the market is stuck" (exit 70).
    for seed in range(6):
        market = run(document(12, 6, 60, seed=seed, workers={"session_mean": 15.0}))
        stop = market.stop
        assert stop is not None, seed
        assert set(stop.causes) <= {"sessions", "abandonment"} and stop.causes
        assert "labelled or abandoned all 12 tasks" in stop.detail or \
            "every worker is stopped" in stop.detail


@pytest.mark.parametrize("policy", [{"name": "fixed-overlap", "overlap": 3}, "uniform"])
def test_workers_the_money_cannot_pay_are_a_recorded_money_stop(policy: Any) -> None:
    # The two cheap workers labelled every task they may; the others cost more than the whole
    # budget: before, "the market is stuck" (exit 70), blaming the preset for fixed-overlap.
    stops = []
    for seed in range(8):
        market = run(document(5, 4, 15, seed=seed, policy=policy, service={"mean": 1.0},
                              workers={"tiers": {"cuts": [0.75], "prices": [1.0, 30.0]}},
                              budget={"money": 25.0}))
        if market.stop is not None:
            stops.append(market.stop)
    assert stops and all(s.causes == ("money",) for s in stops)
    assert any("cannot be paid from the" in s.detail and "labelled" in s.detail for s in stops)


# --- gold ------------------------------------------------------------------------------------


def test_a_worker_who_abandons_gold_is_not_asked_for_gold_forever() -> None:
    # Before: explore-exploit asked a worker for gold until they had answered `explore`
    # questions; a worker who abandoned one ran out of questions and assign() returned GOLD
    # with none left: a PolicyError.
    for seed in range(6):
        market = run(document(20, 6, 60, seed=seed, initial="one-per-task",
                              arm={"policy": {"name": "explore-exploit", "explore": 2}},
                              gold={"count": 2, "rate": 0.0},
                              service={"mean": 1.0, "abandon": 0.4}))
        led, wf = market.ledger, market.workforce
        gold_handed = wf.gold_answered + (led.abandoned - led.abandoned_tasks)
        assert (gold_handed <= 2).all()
        assert market.bought == 60 or market.stop is not None


def test_exploring_ends_when_no_gold_question_is_left_for_the_worker() -> None:
    policy = ExploreExploitPolicy(explore=2)
    policy.bind(type("Info", (), {"n_classes": 2, "n_workers": 2, "gold_count": 3,
                                  "ability_alpha": 6.0, "ability_beta": 2.0,
                                  "ability_low": 0.1})())
    zeros = np.zeros(2, dtype=np.int64)
    w = WorkerStats(zeros, np.array([1, 1]), np.array([1, 1]), np.zeros(2, dtype=bool),
                    np.ones(2), zeros, zeros - 1, None, zeros, np.array([1, 2]))
    state = MarketState(labels=None, proba=np.full((3, 2), 0.5),  # type: ignore[arg-type]
                        skill=np.full(2, 0.7), spent=0, budget=0, workers=w)
    assert policy.exploring(0, state)          # 1 answered, 1 abandoned: one question left
    assert not policy.exploring(1, state)      # 1 answered, 2 abandoned: none left


# --- the ledger --------------------------------------------------------------------------------


def test_the_ledger_keeps_outstanding_labels_and_held_money_at_every_step() -> None:
    led = Ledger(np.array([1.0, 2.0]), edges=10, money=10.0, capacity=None, fee=0.25)
    steps = [("hand", 0), ("hand", 1), ("abandon", 1), ("receive", 0), ("hand", 1),
             ("hand", 0), ("receive", 1), ("abandon", 0)]
    for t, (what, worker) in enumerate(steps):
        getattr(led, {"hand": "hand_out", "abandon": "abandon", "receive": "receive"}[what])(
            worker, float(t))
        assert np.array_equal(led.handed, led.received + led.abandoned + led.outstanding)
        assert led.assigned == led.bought + led.in_flight
        assert math.isclose(led.spent + led.held + led.money_left(), 10.0)
        assert math.isclose(led.held, float(np.dot(led.outstanding, led.cost)))
    assert led.spent == pytest.approx(1.25 + 2.5) and led.held == pytest.approx(0.0)
    check_labels(led, "the end")


def test_the_ledger_refuses_an_answer_to_an_abandoned_label() -> None:
    led = Ledger(np.ones(2), edges=10, money=None, capacity=None)
    led.hand_out(0, 0.0)
    led.hand_out(0, 1.0)
    led.abandon(0, 2.0)
    led.receive(0, 3.0)
    with pytest.raises(LedgerError, match="never handed"):
        led.receive(0, 4.0)  # both hand-outs are settled: nothing is outstanding
    with pytest.raises(LedgerError, match="never handed"):
        led.abandon(0, 4.0)


# --- the property test ---------------------------------------------------------------------------


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A small class market with abandonment and, on or off: a preset or another policy, a
    money budget with prices or tiers and a fee, gold questions with blocking, sessions,
    capacity, an initial graph."""
    n, m = draw(st.integers(4, 12)), draw(st.integers(2, 6))
    initial = draw(st.sampled_from(["none", "one-per-task"]))
    name = draw(st.sampled_from([*PRESETS, *PRESETS, "uniform", "entropy-greedy", "qasca",
                                 "explore-exploit", "oracle-workers"]))
    policy: dict[str, Any] = {"name": name}
    if name == "fixed-overlap":
        policy["overlap"] = draw(st.integers(1, m))
    elif name == "until-agreement":
        policy["agree"] = agree = draw(st.integers(1, min(m, 3)))
        policy["max_overlap"] = draw(st.integers(agree, m))
    elif name == "dynamic-overlap":
        policy["min_overlap"] = low = draw(st.integers(1, m))
        policy["max_overlap"] = draw(st.integers(low, m))
    workers: dict[str, Any] = {"count": m, "service": {  # labels out for a while, mostly
        "mean": draw(st.sampled_from([0.0, 0.5, 3.0, 8.0, 8.0])),
        "abandon": draw(st.floats(0.1, 0.6))}}
    if draw(st.booleans()):
        workers["session_mean"] = draw(st.floats(2.0, 30.0))
    if draw(st.booleans()):
        floor = -(-n // m) if initial == "one-per-task" else 1
        workers["capacity"] = draw(st.integers(floor, floor + n))
    cheapest = 1.0
    if draw(st.booleans()):
        prices = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=2, max_size=2))
        workers["tiers"] = {"cuts": [draw(st.floats(0.3, 0.9))], "prices": prices}
        cheapest = min(prices)
    elif draw(st.booleans()):
        workers["price"] = cheapest = draw(st.sampled_from([0.5, 2.5]))
    low = n if initial == "one-per-task" else 1
    budget: dict[str, Any] = {"edges": draw(st.integers(low, n * m) | st.integers(
                                  max(low, n * m * 2 // 3), n * m)),
                              "batch": draw(st.integers(1, 8)), "initial": initial}
    fee = draw(st.sampled_from([0.0, 0.2]))
    if fee:
        budget["fee"] = fee
    if draw(st.booleans()):
        floor = (n * cheapest if initial == "one-per-task" else cheapest) * (1 + fee)
        budget["money"] = draw(st.sampled_from([floor, floor + 3 * cheapest, floor * 2.5,
                                                floor + n * cheapest]))
    doc: dict[str, Any] = {
        "scenario": {"seed": draw(st.integers(0, 2**31)), "replicates": 1},
        "tasks": {"count": n, "classes": 2}, "workers": workers, "budget": budget,
        "arms": [{"name": "a", "policy": policy, "inference": draw(st.sampled_from(
            ["mv", "one-coin"]))}],
    }
    if draw(st.booleans()) or name == "explore-exploit":
        count = draw(st.integers(1, 4))
        doc["gold"] = {"count": count, "rate": draw(st.sampled_from([0.0, 0.2, 0.5]))}
        if draw(st.booleans()):
            doc["blocking"] = {"after": draw(st.integers(1, count)),
                               "min_accuracy": draw(st.sampled_from([0.3, 0.7]))}
    return doc


def overlap_met(policy: dict[str, Any], counts: np.ndarray, votes: np.ndarray) -> bool:
    """Whether every task meets the preset's overlap in answered labels."""
    name = policy["name"]
    if name == "fixed-overlap":
        return bool((counts >= policy["overlap"]).all())
    if name == "until-agreement":
        return bool(((votes.max(axis=1) >= policy["agree"])
                     | (counts >= policy["max_overlap"])).all())
    return bool((counts >= policy["min_overlap"]).all())


@settings(max_examples=70, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(doc=scenarios())
@example(doc=document(20, 10, 200, policy={"name": "fixed-overlap", "overlap": 3},
                      service={"mean": 5.0, "abandon": 0.3}, batch=10))
@example(doc=document(20, 10, 200, policy={"name": "dynamic-overlap", "min_overlap": 2,
                                           "max_overlap": 5},
                      service={"mean": 5.0, "abandon": 0.3}, batch=10))
@example(doc=document(50, 20, 400, service={"mean": 30.0, "abandon": 0.4}, batch=10,
                      budget={"money": 60.0}))
@example(doc=document(12, 6, 60, workers={"session_mean": 15.0}))
@example(doc=document(20, 6, 60, initial="one-per-task", gold={"count": 2, "rate": 0.0},
                      policy={"name": "explore-exploit", "explore": 2},
                      service={"mean": 1.0, "abandon": 0.4}))
def test_every_market_with_abandonment_ends_with_its_budget_or_a_recorded_stop(
        doc: dict[str, Any]) -> None:
    try:
        parse_scenario(doc, "random.toml")
    except InputError:
        assume(False)  # a combination the scenario rules refuse (tested elsewhere)
    market = run(doc)  # never MarketStuckError (exit 70), PolicyError or LedgerError
    sc, led, wf = market.setup, market.ledger, market.workforce
    stop = market.stop
    assert market.bought == sc.budget.edges or stop is not None
    assert market.bought == market.curve[-1].edges and led.in_flight == 0
    # The books: every hand-out answered or abandoned; money re-summed from the answers.
    assert np.array_equal(led.handed, led.received + led.abandoned)
    gold_workers = (np.asarray(market.gold._workers, dtype=np.int64) if market.gold is not None
                    else np.zeros(0, dtype=np.int64))
    answers = np.concatenate([market.log.view().workers, gold_workers])
    paid = float(np.sum(led.price[answers] * (1 + sc.budget.fee)))
    assert math.isclose(led.spent, paid, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(market.curve[-1].money, paid, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(led.committed, led.spent, abs_tol=1e-9)  # nothing held
    if stop is not None and "money" in stop.causes:  # no worker who may work is affordable,
        left = float(sc.budget.money or 0.0) - led.spent  # or those who are have no task left
        affordable = ~wf.stopped & (led.cost <= left * (1 + 1e-12) + 1e-12)
        assert not affordable.any() or "labelled" in stop.detail
    # Gold: nobody is handed more gold questions than there are.
    if market.gold is not None:
        gold_handed = wf.gold_answered + (led.abandoned - led.abandoned_tasks)
        assert (gold_handed <= sc.gold.count).all()  # type: ignore[union-attr]
    # "Closed every task" only when every task has its overlap in answered labels.
    if stop is not None and "closed" in stop.causes:
        policy = doc["arms"][0]["policy"]
        view = market.log.view()
        votes = np.zeros((sc.tasks.count, 2), dtype=np.int64)
        np.add.at(votes, (view.tasks, view.labels), 1)
        assert overlap_met(policy, labels_per_task(market), votes), policy
