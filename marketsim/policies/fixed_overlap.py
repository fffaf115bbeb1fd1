"""Fixed overlap: every task gets exactly ``overlap`` labels, in arrival order (the default of
every crowdsourcing platform: Toloka's pool overlap, MTurk's assignments per HIT)."""

from __future__ import annotations

import numpy as np

from marketsim.options import F, Options
from marketsim.policies.base import MarketState
from marketsim.policies.overlap import OverlapRule


class FixedOverlapOptions(Options):
    """``fixed-overlap`` (Toloka's pool overlap, MTurk's assignments per task)."""

    overlap: int = F(3, "labels per task, the initial graph's included (Toloka recommends 3 "
                     "for simple tasks, 3 to 5 with automatic acceptance)", ge=1, le=1000)


class FixedOverlapPolicy(OverlapRule[FixedOverlapOptions]):
    """Every task gets exactly ``overlap`` labels, tasks in index order; then the run stops."""

    name = "fixed-overlap"
    Options = FixedOverlapOptions
    #: Options counting a task's labels, each from a distinct worker (at most workers.count).
    per_task_options = ("overlap",)
    description = (
        "Fixed-overlap is a platform's plain preset: every task gets exactly `overlap` labels "
        "(the initial graph's included), handed out in task order to workers who have not "
        "labelled it; a task with its labels is closed, and the requester stops spending once "
        "every task is."
    )

    @classmethod
    def rule(cls, options: FixedOverlapOptions) -> str:
        """Exactly ``overlap`` labels a task."""
        return f"every task gets exactly {options.overlap} labels"

    def first(self) -> int:
        """Every task wants ``overlap`` labels from the start."""
        return self.options.overlap

    def cap(self) -> int:
        """And never more."""
        return self.options.overlap

    def satisfied(self, tasks: np.ndarray, state: MarketState) -> np.ndarray:
        """A task with its ``overlap`` labels is done."""
        return np.ones(tasks.shape[0], dtype=bool)
