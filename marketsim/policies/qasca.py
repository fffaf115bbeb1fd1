"""QASCA (Zheng et al., SIGMOD 2015): give the arriving worker the task whose answer would raise
the expected accuracy most, given that worker's estimated confusion matrix."""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.options import F, Options
from marketsim.policies.base import MarketInfo, MarketState, Policy
from marketsim.policies.worker_aware import (
    GainMemo,
    best_gain_task,
    declines,
    worker_confusion,
)


class QascaOptions(Options):
    """``qasca`` (Zheng et al.'s quality-aware assignment)."""

    min_gain: float = F(0.0, "decline a worker whose best expected accuracy gain is below this "
                        "(0: never decline; not in the paper: with a positive value the market "
                        "stalls, `MarketStuckError`, if no arriving worker reaches it)", ge=0,
                        le=1)
    min_tier: int = F(0, "decline workers whose qualification tier ([workers.tiers], "
                      "`WorkerStats.tier`) is below this, as a platform's qualification "
                      "requirement does, unless no qualified worker may still work (blocked, at "
                      "capacity, gone), so the market never stalls (0: everyone)", ge=0, le=100)


class QascaPolicy(Policy[QascaOptions]):
    """Quality-aware assignment: the task whose answer by this worker gains most accuracy."""

    name = "qasca"
    unit_cost = 15.0  # a choice per arrival over every task
    description = (
        "QASCA (Zheng et al. 2015) gives each arriving worker the task whose answer, under that "
        "worker's estimated confusion matrix, would raise the expected accuracy of the current "
        "estimate most. Worker-aware; with `min_gain` > 0 it declines workers whose best gain is "
        "below it, with `min_tier` > 0 workers below that qualification tier (a platform's "
        "qualification requirement)."
    )

    Options = QascaOptions
    #: Options naming a qualification tier (at most the highest tier of [workers.tiers]).
    tier_options = ("min_tier",)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._memo = GainMemo()

    def bind(self, info: MarketInfo) -> None:
        """Nothing to prepare."""
        self.n_classes = info.n_classes

    def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> int | None:
        """The best-gain task for ``worker``, or ``None`` when their best gain is below
        ``min_gain`` or their tier below ``min_tier`` (or no task is left for them). Workers
        below the tier are taken only when no qualified worker may still work (the market must
        not stall)."""
        if self.options.min_tier > 0 and state.workers is not None:
            tier = np.asarray(state.workers.tier, dtype=np.float64)
            if declines(worker, tier, float(self.options.min_tier), state):
                return None
        task, gain = best_gain_task(state, worker_confusion(state, worker), rng,
                                    self._memo)
        return None if task is None or gain < self.options.min_gain else task
