"""The requester's rules for who may work: capacity, drop-out, blocking, prices and the money
budget (issue #16), on top of the market's :class:`~marketsim.market.ledger.Ledger`.

One :class:`Workforce` per market. It draws each worker's price (flat, or by qualification
tier), decides at each arrival whether the worker may be handed a label, and applies the rules
that close a worker's account — drop-out (``workers.session_mean``) and the blocking rule
(``[blocking]``). The books (labels, money, capacity used) are the ledger's. With none of these
keys every worker may always work, no random number is drawn and the money spent is the number
of labels (flat price 1), so existing scenarios run exactly as before.

Every per-arrival question is answered in constant time (counters per price level), so a pool of
millions of workers costs nothing per label.
"""

from __future__ import annotations

import numpy as np

from marketsim.market.ledger import MONEY_SLACK, Ledger
from marketsim.market.setup import MarketSetup
from marketsim.policies.base import WorkerStats
from marketsim.scenario.crowd_specs import TiersSpec, Workers
from marketsim.scenario.market_specs import BlockingSpec


def draw_tiers(tiers: TiersSpec, ability: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each worker's qualification tier: the number of ``cuts`` at or below a noisy
    observation ``ability + N(0, noise²)`` of their hidden accuracy (one draw per worker)."""
    seen = ability + rng.normal(0.0, tiers.noise, size=ability.shape)
    return np.searchsorted(np.asarray(tiers.cuts), seen, side="right").astype(np.int64)


def worker_prices(wk: Workers, ability: np.ndarray,
                  tier_rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(tier, price) of every worker of ``[workers]`` ``wk``: tier 0 and the flat price
    without ``[workers.tiers]``."""
    if wk.tiers is None:
        return np.zeros(wk.count, dtype=np.int64), np.full(wk.count, wk.price)
    tier = draw_tiers(wk.tiers, np.asarray(ability, dtype=np.float64), tier_rng)
    return tier, np.asarray(wk.tiers.prices, dtype=np.float64)[tier]


class Workforce:
    """Who may be handed a label now, and the rules that stop a worker for good.

    ``hand_out`` is called when a label (task or gold) is handed out, ``received`` when it comes
    back; both go through the ledger, which charges capacity and money at hand-out (so labels in
    flight count) and pays at receipt (what the curve records)."""

    def __init__(self, setup: MarketSetup, ledger: Ledger, tier: np.ndarray,
                 rng: np.random.Generator) -> None:
        wk = setup.workers
        self.ledger = ledger
        self.capacity = wk.capacity
        self.leave_p = None if wk.session_mean is None else 1.0 / wk.session_mean
        self.blocking: BlockingSpec | None = setup.blocking
        self.money = setup.budget.money
        self.rng = rng
        self.tier = tier
        self.price = ledger.price
        #: What a label of each worker costs (the price plus the platform's fee).
        self.cost = ledger.cost
        m = self.price.size
        self.gold_answered = np.zeros(m, dtype=np.int64)
        self.gold_correct = np.zeros(m, dtype=np.int64)
        self.blocked = np.zeros(m, dtype=bool)
        self.gone = np.zeros(m, dtype=bool)
        #: Workers stopped for good (blocked, gone or full), and the active ones per price level.
        self.stopped = np.zeros(m, dtype=bool)
        self._levels, self._level_of = np.unique(self.cost, return_inverse=True)
        self._active = np.bincount(self._level_of, minlength=self._levels.size)
        #: Whether any rule may ever stop a worker (else ``may_work`` is always true).
        self.ruled = (self.capacity is not None or self.leave_p is not None
                      or self.blocking is not None or self.money is not None)
        #: ``capacity_left`` without a capacity: -1 everywhere, one read-only array for every
        #: :meth:`stats` (it never changes).
        self._unlimited = np.full(m, -1, dtype=np.int64)
        self._unlimited.flags.writeable = False

    @property
    def spent(self) -> float:
        """Money paid so far (gold included)."""
        return self.ledger.spent

    @property
    def gold_spent(self) -> float:
        """Money paid for gold answers (part of ``spent``)."""
        return self.ledger.gold_spent

    def _stop(self, worker: int) -> None:
        """``worker`` will never work again (blocked, gone or full): one less active worker."""
        if not self.stopped[worker]:
            self.stopped[worker] = True
            self._active[self._level_of[worker]] -= 1

    def may_work(self, worker: int) -> bool:
        """Whether ``worker`` may be handed a label now (constant time)."""
        if not self.ruled:
            return True
        return not self.stopped[worker] and self.ledger.affordable(float(self.cost[worker]))

    def n_available(self) -> int:
        """Workers who may be handed a label now (all of them without rules)."""
        if not self.ruled:
            return len(self.price)
        if self.money is None:
            return int(self._active.sum())
        fits = self.ledger.committed + self._levels <= self.money * (1 + MONEY_SLACK)
        return int(self._active[fits].sum())

    def n_active(self) -> int:
        """Workers no rule has stopped for good, whether or not the money can pay them."""
        return int(self._active.sum())

    def out_of_money(self) -> bool:
        """Some worker could still work, but none of them can be paid: the money budget is
        spent."""
        return self.money is not None and self.n_active() > 0 and self.n_available() == 0

    def exhausted(self) -> str | None:
        """Which rule left no worker able to work (``None`` while some worker can)."""
        if not self.ruled or self.n_active():
            return None
        return "every worker is stopped: " + self.exhausted_rules()

    def exhausted_causes(self) -> tuple[str, ...]:
        """The rules that have stopped some worker for good: ``blocking``, ``capacity``,
        ``sessions`` (in that order; the ``causes`` of a recorded stop)."""
        handed = self.ledger.handed
        return tuple(cause for cause, hit in (
            ("blocking", self.blocking is not None and bool(self.blocked.any())),
            ("capacity", self.capacity is not None and bool((handed >= self.capacity).any())),
            ("sessions", self.leave_p is not None and bool(self.gone.any()))) if hit)

    def exhausted_rules(self) -> str:
        """The workers each rule has stopped for good, with what to change ("" when none)."""
        rules = []
        if self.blocking is not None and self.blocked.any():
            rules.append(f"{int(self.blocked.sum())} blocked by [blocking] (lower "
                         "blocking.min_accuracy or raise blocking.after)")
        handed = self.ledger.handed
        if self.capacity is not None and (handed >= self.capacity).any():
            rules.append(f"{int((handed >= self.capacity).sum())} at workers.capacity = "
                         f"{self.capacity} (raise it)")
        if self.leave_p is not None and self.gone.any():
            rules.append(f"{int(self.gone.sum())} left after their session (raise "
                         "workers.session_mean)")
        return "; ".join(rules)

    def initial(self, workers: np.ndarray) -> np.ndarray:
        """Buy the initial graph's labels (``workers``: who gave each) like any label; the mask
        of those the capacity and money allow (see :meth:`Ledger.buy_initial`)."""
        keep = self.ledger.buy_initial(workers)
        if self.capacity is not None:
            for worker in np.flatnonzero(self.ledger.handed >= self.capacity).tolist():
                self._stop(worker)
        return keep

    def hand_out(self, worker: int, now: float) -> None:
        """Charge a hand-out (task or gold) to ``worker``: capacity, committed money, and the
        drop-out draw (after this label they leave with probability 1 / session_mean)."""
        ledger = self.ledger
        ledger.hand_out(worker, now)
        if self.capacity is not None and ledger.full(worker):
            self._stop(worker)
        if self.leave_p is not None and self.rng.random() < self.leave_p:
            self.gone[worker] = True
            self.ledger.close(worker)
            self._stop(worker)

    def received(self, worker: int, now: float, *, gold: bool = False,
                 correct: bool = False) -> None:
        """A label from ``worker`` came back: pay it, count it, apply the blocking rule."""
        self.ledger.receive(worker, now, gold=gold)
        if not gold:
            return
        self.gold_answered[worker] += 1
        self.gold_correct[worker] += int(correct)
        rule = self.blocking
        if rule is not None and self.gold_answered[worker] >= rule.after and (
            self.gold_correct[worker] < rule.min_accuracy * self.gold_answered[worker]
        ):
            self.blocked[worker] = True
            self.ledger.close(worker)
            self._stop(worker)

    def stats(self) -> WorkerStats:
        """The live record as policies see it (copies, and the constant unlimited capacity; the
        market makes them read-only)."""
        handed = self.ledger.handed
        left = (self._unlimited if self.capacity is None
                else np.maximum(self.capacity - handed, 0))
        available = ~self.stopped
        if self.money is not None:
            available &= self.ledger.committed + self.cost <= self.money * (1 + MONEY_SLACK)
        abandoned = self.ledger.abandoned_tasks
        return WorkerStats(self.ledger.labels.copy(), self.gold_answered.copy(),
                           self.gold_correct.copy(), self.blocked.copy(), self.price.copy(),
                           self.tier.copy(), left, available, abandoned.copy(),
                           self.ledger.abandoned - abandoned)
