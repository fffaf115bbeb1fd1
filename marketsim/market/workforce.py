"""The requester's record of every worker: who may still work, what they cost, their gold
results (issue #16).

One :class:`Workforce` per market. It applies the scenario's worker rules at each hand-out —
capacity (``workers.capacity``), drop-out (``workers.session_mean``), the blocking rule
(``[blocking]``) and the money budget (``budget.money``) — and keeps the money spent. With none
of these keys every worker may always work, no random number is drawn and the money spent is the
number of labels (flat price 1), so existing scenarios run exactly as before.
"""

from __future__ import annotations

import numpy as np

from marketsim.policies.base import WorkerStats
from marketsim.scenario.specs import BlockingSpec, Scenario, TiersSpec


def draw_tiers(tiers: TiersSpec, ability: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each worker's qualification tier: the number of ``cuts`` at or below a noisy
    observation ``ability + N(0, noise²)`` of their hidden accuracy (one draw per worker)."""
    seen = ability + rng.normal(0.0, tiers.noise, size=ability.shape)
    return np.searchsorted(np.asarray(tiers.cuts), seen, side="right").astype(np.int64)


class Workforce:
    """Per-worker counts (arrays of length ``n_workers``) and the rules that stop a worker.

    ``hand_out`` is called when a label (task or gold) is handed out, ``received`` when it comes
    back; capacity, drop-out and money are charged at hand-out (so labels in flight count),
    the money *spent* at receipt (what the curve records)."""

    def __init__(self, scenario: Scenario, ability: np.ndarray,
                 tier_rng: np.random.Generator, rng: np.random.Generator) -> None:
        wk = scenario.workers
        m = wk.count
        self.capacity = wk.capacity
        self.leave_p = None if wk.session_mean is None else 1.0 / wk.session_mean
        self.blocking: BlockingSpec | None = scenario.blocking
        self.money = scenario.budget.money
        self.rng = rng
        if wk.tiers is None:
            self.tier = np.zeros(m, dtype=np.int64)
            self.price = np.full(m, wk.price)
        else:
            self.tier = draw_tiers(wk.tiers, np.asarray(ability, dtype=np.float64), tier_rng)
            self.price = np.asarray(wk.tiers.prices, dtype=np.float64)[self.tier]
        self.labels = np.zeros(m, dtype=np.int64)
        self.gold_answered = np.zeros(m, dtype=np.int64)
        self.gold_correct = np.zeros(m, dtype=np.int64)
        self.blocked = np.zeros(m, dtype=bool)
        self.gone = np.zeros(m, dtype=bool)
        self.handed = np.zeros(m, dtype=np.int64)
        #: Money of the labels handed out (in flight included), and of those received.
        self.committed = 0.0
        self.spent = 0.0
        #: Whether any rule may ever stop a worker (else ``may_work`` is always true).
        self.ruled = (self.capacity is not None or self.leave_p is not None
                      or self.blocking is not None or self.money is not None)

    def _able(self) -> np.ndarray:
        """Workers no rule has stopped for good (blocked, gone, full)."""
        able = ~(self.blocked | self.gone)
        if self.capacity is not None:
            able &= self.handed < self.capacity
        return able

    def _affordable(self) -> np.ndarray:
        """Workers whose next label fits in the money left."""
        if self.money is None:
            return np.ones(self.price.shape, dtype=bool)
        return self.committed + self.price <= self.money * (1 + 1e-12)

    def may_work(self, worker: int) -> bool:
        """Whether ``worker`` may be handed a label now."""
        if not self.ruled:
            return True
        if self.blocked[worker] or self.gone[worker]:
            return False
        if self.capacity is not None and self.handed[worker] >= self.capacity:
            return False
        return self.money is None or bool(self._affordable()[worker])

    def n_available(self) -> int:
        """Workers who may be handed a label now (all of them without rules)."""
        if not self.ruled:
            return len(self.price)
        return int(np.count_nonzero(self._able() & self._affordable()))

    def out_of_money(self) -> bool:
        """Some worker could still work, but none of them can be paid: the money budget is
        spent."""
        able = self._able()
        return self.money is not None and bool(able.any()) and not (able & self._affordable()).any()

    def exhausted(self) -> str | None:
        """Which rule left no worker able to work (``None`` while some worker can)."""
        if not self.ruled or self._able().any():
            return None
        rules = []
        if self.blocking is not None and self.blocked.any():
            rules.append(f"{int(self.blocked.sum())} blocked by [blocking] (lower "
                         "blocking.min_accuracy or raise blocking.after)")
        if self.capacity is not None and (self.handed >= self.capacity).any():
            rules.append(f"{int((self.handed >= self.capacity).sum())} at workers.capacity = "
                         f"{self.capacity} (raise it)")
        if self.leave_p is not None and self.gone.any():
            rules.append(f"{int(self.gone.sum())} left after their session (raise "
                         "workers.session_mean)")
        return "every worker is stopped: " + "; ".join(rules)

    def initial(self, workers: np.ndarray) -> None:
        """The initial graph's labels (``workers``: who gave each): bought and paid like any."""
        counts = np.bincount(workers, minlength=self.handed.size)
        self.handed += counts
        self.labels += counts
        paid = float(self.price[workers].sum())
        self.committed += paid
        self.spent += paid

    def hand_out(self, worker: int) -> None:
        """Charge a hand-out (task or gold) to ``worker``: capacity, committed money, and the
        drop-out draw (after this label they leave with probability 1 / session_mean)."""
        self.handed[worker] += 1
        self.committed += float(self.price[worker])
        if self.leave_p is not None and self.rng.random() < self.leave_p:
            self.gone[worker] = True

    def received(self, worker: int, *, gold: bool = False, correct: bool = False) -> None:
        """A label from ``worker`` came back: pay it, count it, apply the blocking rule."""
        self.spent += float(self.price[worker])
        if not gold:
            self.labels[worker] += 1
            return
        self.gold_answered[worker] += 1
        self.gold_correct[worker] += int(correct)
        rule = self.blocking
        if rule is not None and self.gold_answered[worker] >= rule.after and (
            self.gold_correct[worker] < rule.min_accuracy * self.gold_answered[worker]
        ):
            self.blocked[worker] = True

    def stats(self) -> WorkerStats:
        """The live record as policies see it (copies; the market makes them read-only)."""
        left = (np.full(self.handed.shape, -1, dtype=np.int64) if self.capacity is None
                else np.maximum(self.capacity - self.handed, 0))
        return WorkerStats(self.labels.copy(), self.gold_answered.copy(),
                           self.gold_correct.copy(), self.blocked.copy(), self.price.copy(),
                           self.tier.copy(), left)
