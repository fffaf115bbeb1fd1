"""Growable arrays of received labels: what inference runs on.

Compact by design (issue #30): int32 task and worker ids and int8 classes (9 bytes a label,
wider types only when the sizes need them), and the incidence matrix the EM kernels read is
kept in step with the log (:class:`~marketsim.market.log_incidence.GrowingIncidence`), with the
per-task and per-worker counts, so a refresh hands the estimator a
:class:`~marketsim.data.compact_labels.CompactLabels` without copying a label.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from marketsim.data.compact_labels import CompactLabels, compact_class_dtype, compact_id_dtype
from marketsim.data.labels import LabelSet
from marketsim.market.log_incidence import GrowingIncidence

#: Labels a log makes room for before any arrives (at most; it grows by doubling beyond). The
#: room is ``np.empty``: pages no label was written to are not resident, so a market's memory
#: grows with the labels it received, and a big market never copies its log to grow it.
INITIAL_ROOM = 1 << 28


def _read_only(arr: np.ndarray) -> np.ndarray:
    view = arr.view()
    view.flags.writeable = False
    return view


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
        # Room for the budget up front (untouched, it costs address space only), up to
        # INITIAL_ROOM labels; beyond, the arrays grow as labels come.
        cap = min(max(int(capacity), 16), INITIAL_ROOM)
        self._tasks = np.empty(cap, dtype=compact_id_dtype(n_tasks))
        self._workers = np.empty(cap, dtype=compact_id_dtype(n_workers))
        self._labels = np.empty(cap, dtype=compact_class_dtype(n_classes))
        self._scores: np.ndarray | None = np.empty(cap, dtype=np.float64) if scores else None
        #: The incidence matrix of the first ``_merged`` labels (see :meth:`incidence`);
        #: ``None`` once a label repeats (the usual build, which adds repeats up, is needed),
        #: and in a log of scores (score methods do not use it).
        self._incidence: GrowingIncidence | None = (
            None if scores else GrowingIncidence(n_tasks, n_workers * n_classes, cap))
        self._merged = 0
        #: Labels of each class per worker, ``(n_workers, K)``, of the first ``_merged`` labels.
        self._worker_counts = np.zeros((n_workers, max(n_classes, 1)), dtype=np.int64)

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

    def _merge(self) -> None:
        """Bring the incidence matrix and the counts up to the labels received so far."""
        s = slice(self._merged, self.size)
        k = self.n_classes
        cols = self._workers[s].astype(np.int64) * k
        cols += self._labels[s]
        if self._incidence is not None and not self._incidence.add(self._tasks[s], cols):
            self._incidence = None
        self._worker_counts.ravel()[:] += np.bincount(cols, minlength=self._worker_counts.size)
        self._merged = self.size

    def incidence(self) -> sp.csr_matrix | None:
        """The incidence matrix of the labels so far (what ``LabelSet.incidence`` builds), kept
        up to date by merging the labels received since the last call into it: a linear pass
        instead of a fresh sort of every label at every refresh. ``None`` when a (task,
        worker, label) triple repeats (the usual build then adds the repeats up), and in a
        log of scores."""
        self._merge()
        return None if self._incidence is None else self._incidence.matrix()

    def received_pairs(self, tasks: np.ndarray, workers: np.ndarray) -> np.ndarray | None:
        """Whether each (task, worker) pair is among the labels merged so far (at the last
        refresh); ``None`` when the log keeps no incidence matrix."""
        if self._incidence is None:
            return None
        low = np.asarray(workers, dtype=np.int64) * self.n_classes
        return self._incidence.has_rows(tasks, low, low + self.n_classes)

    def received_pair(self, task: int, worker: int) -> bool:
        """Whether ``worker`` labelled ``task`` among the labels merged so far (scalar code;
        ``False`` when the log keeps no incidence matrix)."""
        if self._incidence is None:
            return False
        low = worker * self.n_classes
        return self._incidence.has_entry(task, low, low + self.n_classes)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The (tasks, workers, labels) received so far, in their compact types: views, no copy
        and no check (constant time, for the live state of every arrival)."""
        n = self.size
        return self._tasks[:n], self._workers[:n], self._labels[:n]

    def labels(self) -> CompactLabels:
        """The labels so far for a refit: read-only views of the log (no copy), with the
        incidence matrix, the task degrees and the worker counts preset."""
        mat = self.incidence()
        n = self.size
        scores = None if self._scores is None else _read_only(self._scores[:n])
        counts = self._worker_counts.copy()
        counts.flags.writeable = False
        return CompactLabels(
            (_read_only(self._tasks[:n]), _read_only(self._workers[:n]),
             _read_only(self._labels[:n])),
            self.n_tasks, self.n_workers, self.n_classes, scores=scores, incidence=mat,
            task_degree=None if self._incidence is None else self._incidence.degrees(),
            worker_label_counts=counts)

    def view(self) -> LabelSet:
        """A plain LabelSet over the labels received so far (int64 copies)."""
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
