"""What platform presets share: an overlap rule per task, applied to every arriving worker.

A preset (``fixed-overlap``, ``dynamic-overlap``, ``until-agreement``) is a worker-aware policy
(``assign``) because a platform decides per answer, not per batch: each task *wants* a number of
labels (its current overlap), is judged when all the labels it was handed have come back, and
is then either **closed** (never labelled again) or given one more label, up to a cap. An
arriving worker gets the first task in index order (the order the tasks were uploaded) that is
open, wants more labels than it was handed and that the worker has not labelled; with none for
them they are declined (their next arrival may find one). When no task can ever want another
label the policy returns :data:`~marketsim.policies.base.DONE` and the requester stops spending:
a preset may finish under budget.

A label handed out is outstanding until it is answered or abandoned (``workers.service.abandon``,
issue #38): an abandoned label no longer counts as handed (``task_handed``), so its task wants
it again and is handed to a worker who has not held it; a task is judged, and closed, only with
nothing outstanding. When labels may be abandoned the market takes ``DONE`` only once none is
outstanding (:meth:`marketsim.market.market.Market._choose`), so "closed every task" means
every task has its overlap in answered labels. :meth:`OverlapRule.wanted_tasks` tells the
market which tasks still want labels, so a crowd whose every worker who may work has held all
of them ends as a recorded stop (ran out of workers), not as a preset that declines.

The policy reads the market's live counts (``MarketState.task_votes``, ``task_handed``) and the
received labels past its own cursor (``MarketState.received``), so its work per arrival is the
new labels and the tasks from the first open one to the one it hands out (read in blocks).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from marketsim.options import OptionError, Options, OptionsT
from marketsim.policies.base import DONE, MarketInfo, MarketState, Policy

#: Tasks read at once when an arriving worker's task is looked for (then twice as many, and
#: so on): large enough that numpy's per-call cost is small beside it, small enough that the
#: usual arrival (a task near the first open one) reads a few microseconds' worth.
SCAN_BLOCK = 1024


class OverlapRule(Policy[OptionsT]):
    """The bookkeeping of a preset; subclasses say how many labels a task wants first
    (:meth:`first`), at most (:meth:`cap`), when a judged task is settled (:meth:`satisfied`),
    and that rule in words with the option values (:meth:`rule`)."""

    #: (smaller, larger): two options where the larger may not be below the smaller (a
    #: minimum and a maximum overlap); refused when the policy is built.
    ordered_options: ClassVar[tuple[str, str] | None] = None

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        if self.ordered_options is not None:
            low, high = self.ordered_options
            low_value, high_value = getattr(self.options, low), getattr(self.options, high)
            if high_value < low_value:
                raise OptionError(type(self).__name__,
                                  f"{high} = {high_value} must be >= {low} = {low_value}")

    @classmethod
    def rule(cls, options: OptionsT) -> str:
        """The overlap rule with these option values, as a clause (``every task gets ...``)."""
        raise NotImplementedError

    @classmethod
    def describe(cls, options: Options | None = None) -> str:
        """The preset's paragraph; with ``options``, its overlap rule with their values."""
        text = super().describe()
        if options is None:
            return text
        return f"{text} With these options, {cls.rule(options)}."  # type: ignore[arg-type]

    def first(self) -> int | np.ndarray:
        """Labels every task is handed before it is first judged (the minimum overlap; one
        count, or one per task)."""
        raise NotImplementedError

    def cap(self) -> int | np.ndarray:
        """Labels a task gets at most (the maximum overlap; one count, or one per task)."""
        raise NotImplementedError

    def satisfied(self, tasks: np.ndarray, state: MarketState) -> np.ndarray:
        """Whether each of ``tasks`` (judged: at least :meth:`first` labels, none in flight)
        meets the preset's stopping rule."""
        raise NotImplementedError

    def bind(self, info: MarketInfo) -> None:
        """Every task open, wanting :meth:`first` labels (each task's first and cap read once)."""
        n = info.n_tasks
        self.n_tasks, self.n_classes, self.n_workers = n, info.n_classes, info.n_workers
        self.closed = np.zeros(n, dtype=bool)
        self.floor = np.broadcast_to(np.asarray(self.first(), dtype=np.int64), (n,))
        self.ceiling = np.broadcast_to(np.asarray(self.cap(), dtype=np.int64), (n,))
        self.wanted = self.floor.copy()
        self.cursor = 0
        #: Every task before it is closed: the scan for a free task starts there.
        self.first_open = 0
        #: The market's labels handed per task (a live read-only view), read at the last
        #: :meth:`assign`; ``None`` before the first.
        self._handed: np.ndarray | None = None
        #: (worker, label) pairs of each task's received labels, in order of receipt.
        self.by_task: list[list[tuple[int, int]]] = [[] for _ in range(n)]

    def _ingest(self, state: MarketState) -> np.ndarray:
        """Read the labels received since the last call; the tasks they touched."""
        assert state.received is not None, "presets need the market's live label counts"
        tasks, workers, labels = state.received
        new = slice(self.cursor, tasks.shape[0])
        t, w, lab = tasks[new].tolist(), workers[new].tolist(), labels[new].tolist()
        for task, worker, label in zip(t, w, lab, strict=True):
            self.by_task[task].append((worker, label))
        self.cursor = tasks.shape[0]
        if len(t) == 1:  # one label since the last arrival, the usual case: no sort needed
            return np.array(t, dtype=np.int64)
        return np.unique(np.asarray(t, dtype=np.int64))

    def judge(self, state: MarketState) -> None:
        """Judge the tasks that received labels since the last call and have none in flight:
        close those the rule settles or that reached the cap; the others want one more."""
        touched = self._ingest(state)
        if touched.size == 0:
            return
        assert state.task_votes is not None and state.task_handed is not None
        got = np.asarray(state.task_votes)[touched].sum(axis=1)
        ready = ~self.closed[touched] & (got == np.asarray(state.task_handed)[touched]) \
            & (got >= self.floor[touched])
        tasks, got = touched[ready], got[ready]
        if tasks.size == 0:
            return
        done = (got >= self.ceiling[tasks]) | self.satisfied(tasks, state)
        self.closed[tasks[done]] = True
        self.wanted[tasks[~done]] = np.maximum(self.wanted[tasks[~done]], got[~done] + 1)

    def _skip_closed(self) -> None:
        """Move :attr:`first_open` past the tasks closed at the front (a closed task never
        reopens), a block of :data:`SCAN_BLOCK` at a time."""
        while self.first_open < self.n_tasks:
            block = self.closed[self.first_open:self.first_open + SCAN_BLOCK]
            if not block.all():
                self.first_open += int(np.argmin(block))
                return
            self.first_open += block.size

    def _wants(self, handed: np.ndarray, start: int, stop: int) -> np.ndarray:
        """Whether each task of ``[start, stop)`` wants a label: open, and handed fewer labels
        than it wants (an abandoned label is not handed)."""
        limit = np.minimum(self.wanted[start:stop], self.ceiling[start:stop])
        return ~self.closed[start:stop] & (handed[start:stop] < limit)

    def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> int | None:
        """The first open task (index order) wanting a label this worker may give; ``DONE``
        when no task can ever want another label; else ``None`` (wait for answers due).

        The tasks are read in blocks from the first open one, doubling, so an arrival costs
        the tasks up to the one it gets, not every task: a market of many tasks and labels
        stays linear in its labels."""
        self.judge(state)
        assert state.task_handed is not None and state.held is not None
        handed, held = np.asarray(state.task_handed), np.asarray(state.held)
        self._handed = handed
        self._skip_closed()
        start, size, wanted = self.first_open, SCAN_BLOCK, False
        while start < self.n_tasks:
            stop = min(self.n_tasks, start + size)
            wants = self._wants(handed, start, stop)
            free = np.flatnonzero(wants & ~held[start:stop])
            if free.size:
                return start + int(free[0])
            wanted |= bool(wants.any())  # the tasks before first_open are closed: none wants
            start, size = stop, 2 * size
        if not wanted and bool((self.closed | (handed >= self.ceiling)).all()):
            return DONE  # the market waits for labels still out that may be abandoned
        return None

    def wanted_tasks(self) -> np.ndarray:
        """Tasks that want a label at the market's counts of the last :meth:`assign` (bool):
        open, and handed fewer labels than they want (an abandoned label is not handed). The
        market's test of a crowd that ran out: every worker who may work holds all of them
        (:mod:`marketsim.market.stuck`)."""
        if self._handed is None:
            return ~self.closed
        return self._wants(self._handed, 0, self.n_tasks)
