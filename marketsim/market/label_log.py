"""Growable arrays of received labels: the array view that inference runs on."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from marketsim.data.labels import LabelSet

#: Labels a log makes room for before any arrives (at most; it grows by doubling beyond).
INITIAL_ROOM = 1 << 20


class LabelLog:
    """Append-only (task, worker, label[, score]) arrays with amortised O(1) appends.

    With ``scores=True`` (continuous markets) every label also carries a float score in [0, 1],
    and :meth:`view` hands the estimators a ``LabelSet`` whose ``scores`` column is set.
    """

    def __init__(
        self, n_tasks: int, n_workers: int, n_classes: int, capacity: int, *, scores: bool = False
    ) -> None:
        self.n_tasks = n_tasks
        self.n_workers = n_workers
        self.n_classes = n_classes
        self.size = 0
        # Room for the budget up front, up to a million labels; beyond, the arrays grow as
        # labels come (a money budget may end the run long before budget.edges).
        cap = min(max(int(capacity), 16), INITIAL_ROOM)
        self._tasks = np.empty(cap, dtype=np.int64)
        self._workers = np.empty(cap, dtype=np.int64)
        self._labels = np.empty(cap, dtype=np.int64)
        self._scores: np.ndarray | None = np.empty(cap, dtype=np.float64) if scores else None
        #: Sorted ``task * n_workers * n_classes + incidence column`` keys of the first
        #: ``_keyed`` labels: the incidence matrix kept in step with the log (see
        #: :meth:`incidence`); ``None`` once a label repeats, when the usual build is needed.
        self._keys: np.ndarray | None = np.empty(0, dtype=np.int64)
        self._keyed = 0

    @property
    def has_scores(self) -> bool:
        """Whether labels carry continuous scores."""
        return self._scores is not None

    def _grow(self, need: int) -> None:
        cap = self._tasks.shape[0]
        if need <= cap:
            return
        new_cap = max(need, 2 * cap)
        names = ("_tasks", "_workers", "_labels") + (("_scores",) if self.has_scores else ())
        for name in names:
            old = getattr(self, name)
            new = np.empty(new_cap, dtype=old.dtype)
            new[: self.size] = old[: self.size]
            setattr(self, name, new)

    def append(self, task: int, worker: int, label: int, score: float | None = None) -> None:
        """Record one label (and its score, required in a log with scores)."""
        if self.size == self._tasks.shape[0]:
            self._grow(self.size + 1)
        i = self.size
        self._tasks[i] = task
        self._workers[i] = worker
        self._labels[i] = label
        if self._scores is not None:
            if score is None:
                raise ValueError("this label log holds scores: every label needs one")
            self._scores[i] = score
        self.size = i + 1

    def extend(
        self,
        tasks: np.ndarray,
        workers: np.ndarray,
        labels: np.ndarray,
        scores: np.ndarray | None = None,
    ) -> None:
        """Record many labels at once (with their scores in a log with scores)."""
        n = len(tasks)
        if self._scores is not None and (scores is None or len(scores) != n):
            raise ValueError("this label log holds scores: every label needs one")
        self._grow(self.size + n)
        s = slice(self.size, self.size + n)
        self._tasks[s] = tasks
        self._workers[s] = workers
        self._labels[s] = labels
        if self._scores is not None:
            self._scores[s] = scores
        self.size += n

    def incidence(self) -> sp.csr_matrix | None:
        """The incidence matrix of the labels so far (what ``LabelSet.incidence`` builds), kept
        up to date by merging the labels received since the last call into sorted keys: a
        linear pass instead of a fresh sort of every label at every refresh. ``None`` when a
        (task, worker, label) triple repeats (the usual build then adds the repeats up), and
        in a log of scores (score methods do not use it)."""
        if self._keys is None or self._scores is not None:
            return None
        cols = self.n_workers * self.n_classes
        s = slice(self._keyed, self.size)
        new = np.sort(self._tasks[s] * cols + self._workers[s] * self.n_classes
                      + self._labels[s])
        keys = np.insert(self._keys, np.searchsorted(self._keys, new), new)
        if keys.size > 1 and np.any(keys[1:] == keys[:-1]):
            self._keys = None
            return None
        self._keys, self._keyed = keys, self.size
        indptr = np.searchsorted(keys, np.arange(self.n_tasks + 1, dtype=np.int64) * cols)
        return sp.csr_matrix((np.ones(keys.size), keys % cols, indptr),
                             shape=(self.n_tasks, cols))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The (tasks, workers, labels) received so far: views, no copy and no check (constant
        time, for the live state of every arrival)."""
        n = self.size
        return self._tasks[:n], self._workers[:n], self._labels[:n]

    def view(self) -> LabelSet:
        """A LabelSet over the labels received so far (shares memory, no copy)."""
        n = self.size
        return LabelSet(
            self._tasks[:n],
            self._workers[:n],
            self._labels[:n],
            self.n_tasks,
            self.n_workers,
            self.n_classes,
            scores=None if self._scores is None else self._scores[:n],
        )
