"""QASCA (Zheng et al., SIGMOD 2015): give the arriving worker the task whose answer would raise
the expected accuracy most, given that worker's estimated confusion matrix."""

from __future__ import annotations

import numpy as np

from marketsim.policies.base import MarketInfo, MarketState
from marketsim.policies.worker_aware import (
    GainMemo,
    best_gain_task,
    declines,
    worker_confusion,
)


class QascaPolicy:
    """Quality-aware assignment: the task whose answer by this worker gains most accuracy."""

    name = "qasca"
    needs_truth = False
    UNIT_COST = 15.0  # a choice per arrival over every task; see policies.base.unit_cost
    DESCRIPTION = (
        "QASCA (Zheng et al. 2015) gives each arriving worker the task whose answer, under that "
        "worker's estimated confusion matrix, would raise the expected accuracy of the current "
        "estimate most. Worker-aware; with `min_gain` > 0 it declines workers whose best gain is "
        "below it, with `min_tier` > 0 workers below that qualification tier (a platform's "
        "qualification requirement)."
    )

    def __init__(self, *, min_gain: float = 0.0, min_tier: int = 0) -> None:
        self.min_gain = float(min_gain)
        self.min_tier = int(min_tier)
        self._memo = GainMemo()

    def bind(self, info: MarketInfo) -> None:
        """Nothing to prepare."""
        self.n_classes = info.n_classes

    def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> int | None:
        """The best-gain task for ``worker``, or ``None`` when their best gain is below
        ``min_gain`` or their tier below ``min_tier`` (or no task is left for them). Workers
        below the tier are taken only when no qualified worker may still work (the market must
        not stall)."""
        if self.min_tier > 0 and state.workers is not None:
            tier = np.asarray(state.workers.tier, dtype=np.float64)
            if declines(worker, tier, float(self.min_tier), state):
                return None
        task, gain = best_gain_task(state, worker_confusion(state, worker), rng,
                                    self._memo)
        return None if task is None or gain < self.min_gain else task
