"""Task hand-out for worker-aware policies: the policy's ``assign`` chooses per arriving worker.

The market calls :meth:`WorkerAwareRequester.assign` for every arriving idle worker instead of
the ranking requester. The policy sees the last refresh's :class:`MarketState` with the live
fields filled in (the worker record, the tasks this worker holds or labelled, the labels handed
out per task since the refresh), all read-only, and its answer is checked like a ranking
(:func:`checked_choice`): a task index in range the worker does not hold, :data:`GOLD`, or
``None`` (decline: no label, no cost). Anything else is a ``PolicyError`` naming the policy.

In a replay (:mod:`marketsim.market.replay`) a worker may only be given the tasks they answered
in the file: the others count as held from the start, and a worker with no answer of the file
left is not ``available`` (so decline rules never wait for them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from marketsim.data.compact_labels import compact_id_dtype
from marketsim.errors import PolicyError
from marketsim.market.policy_guard import call_policy, frozen_arrays, frozen_fresh, policy_label
from marketsim.policies.base import DONE, GOLD, MarketState, WorkerStats

#: The received labels as ``(tasks, workers, labels)`` arrays (the market's log), read at each
#: arrival.
Received = Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]]


def _choice_problem(raw: Any, n_tasks: int, held: np.ndarray) -> str:
    """What is wrong with ``assign``'s answer (``""`` when it is a task the worker may take)."""
    if isinstance(raw, (bool, np.bool_)) or not isinstance(raw, (int, np.integer)):
        return f"returned {raw!r} (a {type(raw).__name__})"
    if not 0 <= raw < n_tasks:
        return f"returned task index {int(raw)}, outside [0, {n_tasks})"
    if held[int(raw)]:
        return f"returned task {int(raw)}, which this worker already holds or labelled"
    return ""


def checked_choice(policy: object, raw: Any, n_tasks: int, held: np.ndarray,
                   gold_ok: bool) -> int | None:
    """``assign``'s answer as a task index, :data:`GOLD`, :data:`DONE` or ``None``; a
    ``PolicyError`` saying what was wrong otherwise (``GOLD`` is wrong when no gold question
    is left)."""
    if raw is None:
        return None
    if isinstance(raw, (int, np.integer)) and not isinstance(raw, (bool, np.bool_)) \
            and int(raw) == DONE:
        return DONE
    if isinstance(raw, (int, np.integer)) and not isinstance(raw, (bool, np.bool_)) \
            and int(raw) == GOLD:
        if gold_ok:
            return GOLD
        raise PolicyError(f"{policy_label(policy)}: assign() returned GOLD, but the scenario "
                          "has no [gold] questions or this worker answered all of them")
    problem = _choice_problem(raw, n_tasks, held)
    if problem:
        raise PolicyError(
            f"{policy_label(policy)}: assign() {problem}; expected a task index in "
            f"[0, {n_tasks}) the worker does not hold (see state.held), GOLD, DONE or None")
    return int(raw)


def _view(arr: np.ndarray) -> np.ndarray:
    """A read-only view of ``arr`` (no copy: the market's log grows only past its end, and a
    live count is read by the policy during its call, before the market changes it)."""
    view = arr.view()
    view.flags.writeable = False
    return view


class HeldTasks:
    """The tasks each worker holds or labelled, in the order handed: one growing index array
    per worker (capacity doubled when full), so the arriving worker's tasks are a slice, not a
    Python list turned into an array at every arrival (which made a market of many labels per
    worker quadratic).

    A worker who holds at least :attr:`dense_from` tasks also gets a dense boolean row, kept
    up to date at each :meth:`add`: their ``held`` mask is then that row, not one rebuilt
    from their (long) index array at every arrival, which made the market quadratic in the
    labels per worker (a 1,000,000-label file of 110 workers: 9,000 writes an arrival). A row
    costs ``n_tasks`` bytes and is only given to a worker of ``n_tasks / DENSE_SHARE`` tasks
    or more, so the rows never exceed :attr:`DENSE_SHARE` bytes per label handed."""

    #: Tasks held (as a share of all tasks: 1 / DENSE_SHARE) from which a worker's mask is a
    #: dense row kept up to date. Below it a rebuild costs one ``n_tasks``-byte fill and at
    #: most ``n_tasks / 16`` writes; the rows cost at most 16 bytes per label handed.
    DENSE_SHARE = 16

    def __init__(self, n_workers: int, n_tasks: int) -> None:
        self.dtype = compact_id_dtype(n_tasks)
        self.n_tasks = n_tasks
        self.rows = [np.empty(0, dtype=self.dtype) for _ in range(n_workers)]
        self.sizes = np.zeros(n_workers, dtype=np.int64)
        self.dense_from = max(1, n_tasks // self.DENSE_SHARE)
        #: The dense rows of the workers who hold :attr:`dense_from` tasks or more.
        self.dense: dict[int, np.ndarray] = {}

    def add(self, worker: int, task: int) -> None:
        """``worker`` now holds ``task``."""
        row, size = self.rows[worker], int(self.sizes[worker])
        if size == row.size:
            row = self.rows[worker] = np.resize(row, max(8, 2 * size))
        row[size] = task
        self.sizes[worker] = size + 1
        dense = self.dense.get(worker)
        if dense is not None:
            dense[task] = True
        elif size + 1 >= self.dense_from:
            dense = self.dense[worker] = np.zeros(self.n_tasks, dtype=bool)
            dense[row[: size + 1]] = True

    def __getitem__(self, worker: int) -> np.ndarray:
        """The tasks ``worker`` holds or labelled (a view: valid until the next :meth:`add`)."""
        return self.rows[worker][: self.sizes[worker]]

    def mask(self, worker: int) -> np.ndarray:
        """Whether ``worker`` holds or labelled each task (bool, ``n_tasks``), read-only: a
        view of the worker's dense row (valid until the next :meth:`add`) or a fresh array."""
        dense = self.dense.get(worker)
        if dense is None:
            dense = np.zeros(self.n_tasks, dtype=bool)
            dense[self[worker]] = True
        return _view(dense)


class WorkerAwareRequester:
    """Asks a worker-aware policy for the arriving worker's task; remembers who holds what."""

    def __init__(self, policy: Any, n_tasks: int, n_workers: int, n_classes: int,
                 rng: np.random.Generator, workers: Callable[[], WorkerStats],
                 gold_ok: Callable[[int], bool], received: Received,
                 only: list[np.ndarray] | None = None) -> None:
        self.policy = policy
        self.n_tasks = n_tasks
        self.rng = rng
        self.workers = workers
        self.gold_ok = gold_ok
        self.held = HeldTasks(n_workers, n_tasks)
        self.handed = np.zeros(n_tasks, dtype=np.int64)
        #: Labels handed out per task since the start (the initial graph included).
        self.task_handed = np.zeros(n_tasks, dtype=np.int64)
        #: Task labels received per task and class: one increment per label (:meth:`voted`).
        self.task_votes = np.zeros((n_tasks, max(n_classes, 1)), dtype=np.int64)
        #: Hand-outs of each task that were abandoned (:meth:`release`).
        self.abandoned = np.zeros(n_tasks, dtype=np.int64)
        self.received = received
        self.state: MarketState | None = None
        #: The tasks each worker may ever be given (a replay: those they answered in the
        #: file), ``None``: every task; and how many of them each worker does not hold yet.
        self.only = only
        self.left = None if only is None else np.array([t.size for t in only], dtype=np.int64)

    def refreshed(self, state: MarketState) -> None:
        """A refresh's view (read-only); hand-outs since then are counted from zero."""
        self.state = frozen_arrays(state)
        self.handed[:] = 0

    def mark(self, task: int, worker: int) -> None:
        """``worker`` holds or labelled ``task``: never hand them that task again."""
        self.held.add(worker, task)
        self.task_handed[task] += 1
        if self.left is not None:
            self.left[worker] -= 1

    def release(self, task: int, worker: int) -> None:
        """``worker`` abandoned ``task`` unlabelled: it no longer counts as handed out (the
        worker still holds it in ``state.held``: never offered it again)."""
        self.task_handed[task] -= 1
        self.handed[task] = max(int(self.handed[task]) - 1, 0)
        self.abandoned[task] += 1

    def voted(self, task: int | np.ndarray, label: int | np.ndarray) -> None:
        """Labels of class ``label`` were received for ``task`` (one, or arrays of them)."""
        if isinstance(task, np.ndarray):
            np.add.at(self.task_votes, (task, np.asarray(label)), 1)
        else:
            self.task_votes[task, label] += 1

    def live_workers(self) -> WorkerStats:
        """The market's worker record; with :attr:`only`, a worker who holds every task they
        may be given is not ``available``."""
        stats = self.workers()
        if self.left is None:
            return stats
        may = (~np.asarray(stats.blocked, dtype=bool) & (np.asarray(stats.capacity_left) != 0)
               if stats.available is None else np.asarray(stats.available, dtype=bool))
        return replace(stats, available=may & (self.left > 0))

    def assign(self, worker: int) -> int | None:
        """The policy's answer for ``worker``, checked: a task (marked as held), ``GOLD`` or
        ``None``."""
        assert self.state is not None, "the market refreshes before the first arrival"
        if self.only is None:
            held = self.held.mask(worker)
        else:  # a replay: the tasks this worker did not answer in the file count as held
            held = np.ones(self.n_tasks, dtype=bool)
            held[self.only[worker]] = False
            held[self.held[worker]] = True
            held.flags.writeable = False  # the check below reads it: no view of it may write
        # the live counts as read-only views, not copies: a copy of (n_tasks, K) votes at every
        # arrival made the market quadratic in tasks × labels
        state = replace(self.state, workers=frozen_fresh(self.live_workers()), held=held,
                        handed_since_refresh=_view(self.handed),
                        task_votes=_view(self.task_votes), task_handed=_view(self.task_handed),
                        received=tuple(_view(a) for a in self.received()))  # type: ignore[arg-type]
        raw = call_policy(self.policy, "assign",
                          lambda: self.policy.assign(worker, state, self.rng))
        choice = checked_choice(self.policy, raw, self.n_tasks, held, self.gold_ok(worker))
        if choice is not None and choice not in (GOLD, DONE):
            self.mark(choice, worker)
            self.handed[choice] += 1
        return choice
