"""The market's accounting invariants as property tests (issue #25, point 3): random scenarios
with every mechanic switched on and off, every policy of class markets.

Whatever the scenario, a unit that ends (by its budget, its money, or stuck with a named cause)
must have: money spent equal to the prices of the answers bought (initial graph and gold
included) times 1 + the platform's fee and within ``budget.money``; labels within
``budget.edges``; no worker above ``workers.capacity``; no hand-out to a blocked or departed
worker; no gold answer among the results; a curve with strictly increasing labels, ending on
the true final spend; simulated time that never decreases. The same checks run inside the
market (``marketsim.market.ledger``); these tests check them from outside, on what the market
did.
"""

from __future__ import annotations

import math
from typing import Any
from unittest.mock import patch

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marketsim.errors import InputError, MarketStuckError
from marketsim.market.market import Market
from marketsim.policies.registry import BINARY_ONLY_POLICIES, POLICIES, SCORE_ONLY_POLICIES
from marketsim.scenario.parser import parse_scenario
from marketsim.study import runner

CLASS_POLICIES = [p for p in POLICIES if p not in SCORE_ONLY_POLICIES]


class Audited(Market):
    """A market that remembers each hand-out: (worker, blocked, gone, simulated time)."""

    last: Audited | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.handouts: list[tuple[int, bool, bool, float]] = []
        Audited.last = self

    def _choose(self, worker: int) -> tuple[int | None, int | None]:
        choice = super()._choose(worker)
        if choice[0] is not None:
            wf = self.workforce
            self.handouts.append((worker, bool(wf.blocked[worker]), bool(wf.gone[worker]),
                                  float(self.env.now)))
        return choice


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A random valid scenario document of a small class market, mechanics on or off."""
    n = draw(st.integers(6, 24))
    m = draw(st.integers(2, 7))
    classes = draw(st.sampled_from([2, 2, 3]))
    policy = draw(st.sampled_from([p for p in CLASS_POLICIES
                                   if classes == 2 or p not in BINARY_ONLY_POLICIES]))
    initial = draw(st.sampled_from(["one-per-task", "bernoulli", "none"]))
    workers: dict[str, Any] = {"count": m, "model": draw(st.sampled_from(
        ["one-coin", "confusion", "spammer-hammer"]))}
    if draw(st.booleans()):
        workers["service"] = {"mean": draw(st.floats(0.1, 5.0))}
    if draw(st.booleans()):
        floor = -(-n // m) if initial == "one-per-task" else 1
        workers["capacity"] = draw(st.integers(floor, floor + n))
    if draw(st.booleans()):
        workers["session_mean"] = draw(st.floats(1.0, 40.0))
    cheapest = 1.0
    if draw(st.booleans()):
        prices = draw(st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]), min_size=2,
                               max_size=3))
        workers["tiers"] = {"cuts": sorted(draw(st.lists(st.floats(0.2, 0.95), min_size=len(
            prices) - 1, max_size=len(prices) - 1, unique=True))), "prices": prices,
            "noise": draw(st.sampled_from([0.0, 0.1]))}
        cheapest = min(prices)
    elif draw(st.booleans()):
        workers["price"] = cheapest = draw(st.sampled_from([0.5, 1.0, 2.5]))
    edges = draw(st.integers(n if initial == "one-per-task" else 1, n * m))
    budget: dict[str, Any] = {"edges": edges, "batch": draw(st.integers(1, 15)),
                              "initial": initial, "initial_probability": 0.3}
    fee = draw(st.sampled_from([0.0, 0.0, 0.2, 0.35]))
    if fee:
        budget["fee"] = fee
    if draw(st.booleans()):
        floor = (n * cheapest if initial == "one-per-task" else cheapest) * (1 + fee)
        budget["money"] = draw(st.sampled_from([floor, floor + cheapest * 7,
                                                floor * 1.37, floor * 3]))
    doc: dict[str, Any] = {
        "scenario": {"seed": draw(st.integers(0, 2**32)), "replicates": 1},
        "tasks": {"count": n, "classes": classes},
        "workers": workers,
        "budget": budget,
        "arms": [{"name": "a", "policy": policy,
                  "inference": draw(st.sampled_from(["mv", "one-coin", "ds"]))}],
    }
    if draw(st.booleans()):
        count = draw(st.integers(1, 6))
        doc["gold"] = {"count": count, "rate": draw(st.sampled_from([0.0, 0.1, 0.4])),
                       "in_inference": draw(st.booleans())}
        if draw(st.booleans()):
            doc["blocking"] = {"after": draw(st.integers(1, count)),
                               "min_accuracy": draw(st.sampled_from([0.3, 0.6, 1.0]))}
    return doc


def check_books(m: Audited, stuck: bool) -> None:
    """Every invariant of the issue, read from what the market did."""
    sc, ledger, wf = m.setup, m.ledger, m.workforce
    price = ledger.price
    gold_workers = (np.asarray(m.gold._workers, dtype=np.int64) if m.gold is not None
                    else np.zeros(0, dtype=np.int64))
    task_workers = m.log.view().workers
    # Money: the prices of what was bought, initial graph and gold included, plus the fee on
    # every one of them: the sum over labels of price × (1 + fee).
    paid = float(np.sum(price[task_workers] * (1 + sc.budget.fee))
                 + np.sum(price[gold_workers] * (1 + sc.budget.fee)))
    assert math.isclose(ledger.spent, paid, rel_tol=1e-9, abs_tol=1e-9)
    if sc.budget.money is not None:
        assert ledger.committed <= sc.budget.money * (1 + 1e-12)
    assert m.bought == task_workers.size + gold_workers.size <= sc.budget.edges
    # Capacity: hand-outs per worker, initial graph included.
    handed = np.bincount(task_workers, minlength=sc.workers.count) + np.bincount(
        gold_workers, minlength=sc.workers.count)
    if not stuck:
        assert np.array_equal(handed, ledger.handed)
    if sc.workers.capacity is not None:
        assert ledger.handed.max() <= sc.workers.capacity
    # Nobody blocked or departed before a hand-out got it.
    assert not any(blocked or gone for _, blocked, gone, _ in m.handouts)
    times = [t for *_, t in m.handouts]
    assert times == sorted(times)
    # Gold answers are never results: the log holds real tasks only.
    assert (m.log.view().tasks < sc.tasks.count).all()
    if m.estimator is not None and not sc.workers.model_class.scores:
        assert len(m.estimator.labels_) == sc.tasks.count
    # The curve: strictly increasing labels, time never decreasing, ending on the final spend.
    edges = [p.edges for p in m.curve]
    assert all(b > a for a, b in zip(edges, edges[1:], strict=False)), edges
    sim = [p.sim_time for p in m.curve]
    assert sim == sorted(sim)
    if not stuck:
        assert edges[-1] == m.bought
        assert m.curve[-1].money == ledger.spent
        assert ledger.in_flight == 0
        assert wf.spent == ledger.spent


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(doc=scenarios())
def test_every_market_keeps_its_books(doc: dict[str, Any]) -> None:
    try:
        sc = parse_scenario(doc, "random.toml")
    except InputError:
        return  # a combination the scenario rules refuse (tested elsewhere)
    Audited.last = None
    stuck = False
    with patch.object(runner, "Market", Audited):
        try:
            runner.run_unit(sc, 0, 0)
        except MarketStuckError as exc:
            stuck = True
            assert "the market is stuck" in str(exc)
    market = Audited.last
    assert market is not None
    check_books(market, stuck)
