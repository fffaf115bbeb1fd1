"""Fixed overlap: every task gets exactly ``overlap`` labels, in arrival order (the default of
every crowdsourcing platform: Toloka's pool overlap, MTurk's assignments per HIT) — or, with
``overlaps``, each task its own count from a labels-per-task distribution (what a real file's
tasks got: ``marketsim calibrate``'s "as collected" arm)."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field, model_validator

from marketsim.options import F, OptionError, Options
from marketsim.policies.base import MarketState
from marketsim.policies.overlap import OverlapRule

#: One entry of a labels-per-task distribution: ``[labels, tasks]``.
OverlapCount = Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=2, max_length=2)]
#: The golden ratio's fractional part: the deal's low-discrepancy step (see :func:`deal`).
_GOLDEN = (5 ** 0.5 - 1) / 2


class FixedOverlapOptions(Options):
    """``fixed-overlap`` (Toloka's pool overlap, MTurk's assignments per task)."""

    overlap: int = F(3, "labels per task, the initial graph's included (Toloka recommends 3 "
                     "for simple tasks, 3 to 5 with automatic acceptance)", ge=1, le=1000)
    overlaps: list[OverlapCount] | None = F(
        None, "instead of one `overlap`, a labels-per-task distribution as `[labels, tasks]` "
        "pairs, each >= 1 (e.g. `[[5, 200], [6, 600]]`: 200 tasks get 5 labels, 600 get 6), "
        "the tasks summing to `tasks.count`; the counts are dealt to the tasks spread evenly "
        "over their order (what `marketsim calibrate` writes for a file's labels per task)",
        shown="none")

    @model_validator(mode="after")
    def _one_rule(self) -> FixedOverlapOptions:
        if self.overlaps is not None:
            if "overlap" in self.model_fields_set:
                raise ValueError("give overlap or overlaps, not both")
            if len({labels for labels, _ in self.overlaps}) != len(self.overlaps):
                raise ValueError("overlaps names a number of labels twice")
        return self


def deal(overlaps: list[list[int]], n_tasks: int) -> np.ndarray:
    """Each task's labels from ``[labels, tasks]`` pairs: the counts in increasing order dealt
    to the tasks at the golden-ratio points ``frac(i * 0.618...)``, so every stretch of the task
    order holds the distribution's mix (the world draws every task alike, so which task gets
    which count does not matter; the spread keeps a hand-out in task order from giving the
    low counts first). Vectorised; the same every replicate."""
    pairs = np.asarray(overlaps, dtype=np.int64).reshape(-1, 2)
    pairs = pairs[np.argsort(pairs[:, 0])]
    counts = np.repeat(pairs[:, 0], pairs[:, 1])
    slots = np.argsort((np.arange(n_tasks) * _GOLDEN) % 1.0, kind="stable")
    per_task = np.empty(n_tasks, dtype=np.int64)
    per_task[slots] = counts
    return per_task


class FixedOverlapPolicy(OverlapRule[FixedOverlapOptions]):
    """Every task gets exactly ``overlap`` labels (or its count of ``overlaps``), tasks in index
    order; then the run stops."""

    name = "fixed-overlap"
    Options = FixedOverlapOptions
    #: Options counting a task's labels, each from a distinct worker (at most workers.count).
    per_task_options = ("overlap",)
    description = (
        "Fixed-overlap is a platform's plain preset: every task gets exactly `overlap` labels "
        "(the initial graph's included), or its own count of a labels-per-task distribution "
        "(`overlaps`), handed out in task order to workers who have not labelled it; a task "
        "with its labels is closed, and the requester stops spending once every task is."
    )

    @classmethod
    def rule(cls, options: FixedOverlapOptions) -> str:
        """Exactly ``overlap`` labels a task, or the distribution's counts."""
        if options.overlaps is None:
            return f"every task gets exactly {options.overlap} labels"
        spread = ", ".join(f"{tasks} tasks {labels}" for labels, tasks in
                           sorted(options.overlaps))
        return f"every task gets exactly its count of labels ({spread})"

    @classmethod
    def crowd_problem(cls, options: FixedOverlapOptions, n_tasks: int, n_workers: int
                      ) -> tuple[str, str] | None:
        """``overlaps`` must give every task a count, each from distinct workers."""
        if options.overlaps is None:
            return None
        tasks = sum(t for _, t in options.overlaps)
        if tasks != n_tasks:
            return "overlaps", (f"counts {tasks} tasks, must count tasks.count = {n_tasks} "
                                "(each task's labels)")
        most = max(labels for labels, _ in options.overlaps)
        if most > n_workers:
            return "overlaps", (f"gives a task {most} labels, at most workers.count = "
                                f"{n_workers}: a task's labels come from distinct workers")
        return None

    def first(self) -> int | np.ndarray:
        """Every task wants its labels from the start: ``overlap``, or its dealt count."""
        if self.options.overlaps is None:
            return self.options.overlap
        problem = self.crowd_problem(self.options, self.n_tasks, self.n_workers)
        if problem is not None:  # a policy object built in Python, never checked by a scenario
            raise OptionError(type(self).__name__, " ".join(problem))
        return deal(self.options.overlaps, self.n_tasks)

    def cap(self) -> int | np.ndarray:
        """And never more."""
        return self.first()

    def satisfied(self, tasks: np.ndarray, state: MarketState) -> np.ndarray:
        """A task with its labels is done."""
        return np.ones(tasks.shape[0], dtype=bool)
