"""A compact, immutable container of crowd labels.

Labels are three aligned integer arrays (task, worker, class index), plus the maps back to the
original ids. Estimators only ever see integer codes; ids are translated once, at the boundary.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from marketsim.data.frames import as_object_column, coded, frame_columns
from marketsim.data.incidence import (
    BLOCK_SORT_MIN_LABELS,
    ROW_SORT_MIN_LABELS,
    grouped_incidence,
    has_repeated_pairs,
    rows_fit_padding,
    sort_by_task,
)
from marketsim.data.sources import HUMAN, machine_columns


@dataclass(frozen=True, eq=False)
class LabelSet:
    """Crowd labels as integer arrays.

    Attributes
    ----------
    tasks, workers, labels : int64 arrays of equal length
        Task index, worker index and class index (0..n_classes-1) of each label.
    n_tasks, n_workers, n_classes : int
        Sizes; tasks or workers without any label are allowed.
    task_ids, worker_ids, class_ids : arrays, optional
        Original identifiers (index ``k`` maps back to ``task_ids[k]``); default ``arange``.
    scores : float array, optional
        Continuous score per label (for continuous-task models).
    confidence : float array, optional
        The confidence in [0, 1] that came with each label (NaN where a label has none), as a
        machine annotator states it; ``None`` when no label has one.
    sources : tuple of str, optional
        Who each worker is: :data:`HUMAN`, or the name of the model whose answers the worker
        index holds (one model may hold several worker indices, e.g. one per prompt);
        ``None`` for a crowd of humans only.
    """

    tasks: np.ndarray
    workers: np.ndarray
    labels: np.ndarray
    n_tasks: int
    n_workers: int
    n_classes: int
    # Given as None, the id arrays are filled in by __post_init__: never None afterwards.
    task_ids: np.ndarray = None  # type: ignore[assignment]
    worker_ids: np.ndarray = None  # type: ignore[assignment]
    class_ids: np.ndarray = None  # type: ignore[assignment]
    scores: np.ndarray | None = None
    confidence: np.ndarray | None = None
    sources: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("tasks", "workers", "labels"):
            arr = np.ascontiguousarray(getattr(self, name), dtype=np.int64)
            object.__setattr__(self, name, arr)
        n = self.tasks.shape[0]
        if self.workers.shape[0] != n or self.labels.shape[0] != n:
            raise ValueError("tasks, workers and labels must have the same length")
        if self.n_classes < 1:
            raise ValueError(f"n_classes must be >= 1, got {self.n_classes}")
        checks = ((self.tasks, self.n_tasks, "task index out of range [0, n_tasks)"),
                  (self.workers, self.n_workers, "worker index out of range [0, n_workers)"),
                  (self.labels, self.n_classes, "class index out of range [0, n_classes)"))
        for codes, size, message in checks:
            # one pass per array: seen as unsigned, a negative code is a huge one
            if n and int(codes.view(np.uint64).max()) >= max(size, 0):
                raise ValueError(message)
        if self.task_ids is None:
            object.__setattr__(self, "task_ids", np.arange(self.n_tasks))
        if self.worker_ids is None:
            object.__setattr__(self, "worker_ids", np.arange(self.n_workers))
        if self.class_ids is None:
            object.__setattr__(self, "class_ids", np.arange(1, self.n_classes + 1))
        confidence, sources = machine_columns(self.confidence, self.sources, n, self.n_workers)
        object.__setattr__(self, "confidence", confidence)
        object.__setattr__(self, "sources", sources)

    @classmethod
    def from_arrays(
        cls,
        tasks: np.ndarray,
        workers: np.ndarray,
        labels: np.ndarray,
        *,
        n_tasks: int | None = None,
        n_workers: int | None = None,
        n_classes: int | None = None,
    ) -> LabelSet:
        """Build from 0-based integer arrays, inferring sizes from the maxima when not given."""
        tasks = np.asarray(tasks, dtype=np.int64)
        workers = np.asarray(workers, dtype=np.int64)
        labels = np.asarray(labels, dtype=np.int64)

        def size(arr: np.ndarray, given: int | None) -> int:
            if given is not None:
                return int(given)
            return int(arr.max()) + 1 if arr.size else 0

        return cls(
            tasks,
            workers,
            labels,
            size(tasks, n_tasks),
            size(workers, n_workers),
            max(size(labels, n_classes), 1),
        )

    @classmethod
    def from_records(cls, records: Iterable[tuple[Any, ...]]) -> LabelSet:
        """Build from ``(task, worker, label)`` triples with ids and labels of any hashable type,
        or from ``(task, worker, label, source[, confidence])`` records of a mixed crowd
        (``source``: ``"human"`` or a model's name, one per worker; ``confidence``: a number
        in [0, 1], None for none), which set :attr:`sources` and :attr:`confidence`.

        Tasks and workers are numbered in order of first appearance, classes in sorted order of
        their values (first appearance when they cannot be sorted); ``task_ids``,
        ``worker_ids`` and ``class_values`` map the codes back. Needs no pandas.
        """
        rows = list(records)
        width = len(rows[0]) if rows else 3
        if width not in (3, 4, 5) or any(len(r) != width for r in rows):
            bad = next(i for i, r in enumerate(rows) if len(r) != width or width not in (3, 4, 5))
            raise ValueError(f"record {bad} is not a (task, worker, label[, source[, confidence]]"
                             f") record of the first's length {width}: {rows[bad]!r}")
        names = ("task", "worker", "label", "source", "confidence")[:width]
        columns = zip(*rows, strict=True) if rows else ((), (), ())
        return cls._from_values(dict(zip(names, map(as_object_column, columns), strict=True)))

    @classmethod
    def from_frame(  # noqa: PLR0913 - one name per column role
        cls, frame: Any, *, task: str = "task", worker: str = "worker", label: str = "label",
        source: str | None = None, confidence: str | None = None,
    ) -> LabelSet:
        """Build from a pandas DataFrame with one row per label (column names configurable;
        ``source`` and ``confidence`` name a mixed crowd's columns, as in :meth:`from_records`).

        Codes are assigned as in :meth:`from_records`. Needs pandas (``marketsim[pandas]``).
        """
        columns = frame_columns(frame, task, worker, label, source=source, confidence=confidence)
        given = {"task": task, "worker": worker, "label": label, "source": source,
                 "confidence": confidence}
        return cls._from_values(columns, {role: str(given[role]) for role in columns})

    @classmethod
    def _from_values(cls, columns: dict[str, np.ndarray],
                     names: dict[str, str] | None = None) -> LabelSet:
        """The set of per-label values by role (see :func:`~marketsim.data.frames.coded`)."""
        return cls(**coded(columns, names or {role: role for role in columns}))

    def stack(self, answers: np.ndarray) -> LabelSet:
        """``E`` instances on this graph as one disjoint union: instance ``e`` answers
        ``answers[e]`` on the same (task, worker) pairs, its tasks and workers offset by
        ``e * n_tasks`` and ``e * n_workers``, each with this set's :attr:`confidence` and
        :attr:`sources`, a model's named ``name#e`` in instance ``e`` (the instances share no
        model, so a source-aware fit learns none of its parameters across them).

        The union's :attr:`incidence` is laid out from this graph's order once, without the
        per-call sort of a fresh build; it has the same index arrays as that build, so every
        EM kernel gives each instance bit for bit what a separate fit gives it. (With a
        repeated (task, worker) pair the generic build is used.)
        """
        answers = np.asarray(answers, dtype=np.int64)
        e_count, n, m, k = answers.shape[0], self.n_tasks, self.n_workers, self.n_classes
        if answers.ndim != 2 or answers.shape[1] != self.n_labels:
            raise ValueError(f"answers must have shape (E, {self.n_labels}), got {answers.shape}")
        offsets = np.arange(e_count, dtype=np.int64)[:, None]
        union = LabelSet((self.tasks[None, :] + offsets * n).ravel(),
                         (self.workers[None, :] + offsets * m).ravel(), answers.ravel(),
                         e_count * n, e_count * m, k, confidence=None if self.confidence is None
                         else np.tile(self.confidence, e_count),
                         sources=None if self.sources is None else tuple(
                             s if s == HUMAN else f"{s}#{e}" for e in range(e_count)
                             for s in self.sources))
        # (task, worker) order: a stable sort of one integer key is lexsort's permutation
        pairs = self.tasks * m + self.workers
        order = np.argsort(pairs, kind="stable")
        pairs = pairs[order]
        if pairs.size > 1 and np.any(pairs[1:] == pairs[:-1]):
            return union  # repeated pairs: let sum_duplicates merge them as usual
        cols = np.take(answers, order, axis=1)  # answers[:, order], at a fraction of the time
        cols += (np.take(self.workers, order)[None, :] + offsets * m) * k
        indptr = np.zeros(e_count * n + 1, dtype=np.int64)
        np.cumsum(np.tile(self.task_degree, e_count), out=indptr[1:])
        mat = sp.csr_matrix((np.ones(cols.size), cols.ravel(), indptr),
                            shape=(e_count * n, e_count * m * k))
        union.preset_incidence(mat)
        return union

    def preset_incidence(self, mat: sp.csr_matrix) -> None:
        """Fill the cached :attr:`incidence` with ``mat``, built elsewhere from these labels
        (sorted column indices per row, no duplicates: exactly what :attr:`incidence` would
        build), so that it is not built again."""
        if mat.shape != (self.n_tasks, self.n_workers * self.n_classes) or mat.nnz != (
            self.n_labels
        ):
            raise ValueError(f"preset incidence of shape {mat.shape} with {mat.nnz} entries does "
                             f"not fit {self.n_labels} labels of this set")
        mat.has_canonical_format = True  # sorted, no duplicates: the caller's promise
        self.__dict__["incidence"] = mat  # the cached property's slot

    def compact_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(tasks, workers, labels) in the types they are held in (int64 here; int32 and int8 in
        a :class:`~marketsim.data.compact_labels.CompactLabels`), without a copy: for passes
        that read them a block at a time."""
        return self.tasks, self.workers, self.labels

    @property
    def class_values(self) -> np.ndarray:
        """The label value of each class index (the same array as ``class_ids``)."""
        return self.class_ids

    @property
    def worker_sources(self) -> tuple[str, ...]:
        """Each worker's source: :attr:`sources`, or :data:`HUMAN` for every worker."""
        return self.sources if self.sources is not None else (HUMAN,) * self.n_workers

    @property
    def has_models(self) -> bool:
        """Whether some worker is a model (a source other than :data:`HUMAN`)."""
        return self.sources is not None and any(s != HUMAN for s in self.sources)

    @property
    def n_labels(self) -> int:
        """Number of (task, worker, label) triples."""
        return int(self.tasks.shape[0])

    @cached_property
    def task_degree(self) -> np.ndarray:
        """Number of labels per task."""
        return np.bincount(self.tasks, minlength=self.n_tasks)

    @cached_property
    def worker_degree(self) -> np.ndarray:
        """Number of labels per worker."""
        return self.worker_label_counts.sum(axis=1)

    @cached_property
    def worker_label_counts(self) -> np.ndarray:
        """``(n_workers, n_classes)`` int64 number of labels of each class given by each
        worker (the column sums of :attr:`incidence`, as a matrix; cached, read-only)."""
        k = self.n_classes
        keys = self.workers * k
        keys += self.labels  # in place: one fresh array, not two
        counts = np.bincount(keys, minlength=self.n_workers * k)
        counts = counts.reshape(self.n_workers, k)
        counts.flags.writeable = False
        return counts

    @cached_property
    def incidence(self) -> sp.csr_matrix:
        """Sparse ``(n_tasks, n_workers * n_classes)`` matrix: entry (i, j*K + l) = 1 iff worker j
        gave class l to task i.

        Every EM kernel is a product with this matrix or its transpose: the E-step is
        ``incidence @ R`` with ``R[(j, l), c] = log P(label l | true class c, worker j)`` and the
        M-step counts are ``incidence.T @ posterior``. Repeated (task, worker) pairs add up.
        In canonical form: rows in task order, columns sorted within a row, repeats summed.
        """
        return self._canonical_incidence[0]

    @cached_property
    def incidence_t(self) -> sp.csr_matrix:
        """Transpose of :attr:`incidence`, stored as CSR for fast M-step products."""
        return self.incidence.T.tocsr()

    @cached_property
    def own_class_incidence(self) -> sp.csr_matrix:
        """Sparse ``(n_workers * n_classes, n_classes * n_tasks)`` matrix: row ``j*K + l`` holds
        worker j's labels of class l, at column ``l * n_tasks + task`` (tasks in increasing
        order, repeats summed as in :attr:`incidence`).

        Times the class-major posteriors ``proba.T.ravel()`` it gives, in one mat-vec,
        ``sum_i proba[i, l]`` over the tasks to which worker j gave class l: the diagonal
        ``(incidence.T @ proba)[j*K + l, l]`` that the one-coin M-step reads, added in the same
        order (task by task from 0), without the off-diagonal half of that product.
        """
        by_worker = self.incidence_t
        k = self.n_classes
        own = np.repeat(np.arange(by_worker.shape[0]) % k, np.diff(by_worker.indptr))
        index_dtype = np.int32 if k * self.n_tasks < 2**31 else np.int64
        indices = np.add(by_worker.indices, own * self.n_tasks, dtype=index_dtype)
        mat = sp.csr_matrix((by_worker.data, indices, by_worker.indptr),
                            shape=(by_worker.shape[0], k * self.n_tasks), copy=False)
        mat.has_sorted_indices = True
        mat.has_canonical_format = True
        return mat

    @property
    def has_repeated_pairs(self) -> bool:
        """Whether some worker labelled some task more than once."""
        return self._canonical_incidence[1]

    @cached_property
    def _canonical_incidence(self) -> tuple[sp.csr_matrix, bool]:
        """:attr:`incidence` and :attr:`has_repeated_pairs`, the matrix scipy's COO conversion
        builds at a fraction of its cost, from the sorted integer keys
        ``task * (n_workers * K) + worker * K + label`` (not sorted when they already are).
        From :data:`ROW_SORT_MIN_LABELS` labels on, labels in task order are only sorted
        within tasks (:func:`~marketsim.data.incidence.grouped_incidence`; unless a few tasks
        have many times the mean number of labels); from :data:`BLOCK_SORT_MIN_LABELS` on,
        others by blocks of tasks (:func:`~marketsim.data.incidence.sort_by_task`)."""
        n_cols, k = self.n_workers * self.n_classes, self.n_classes
        index_dtype = np.int32 if max(n_cols, self.n_tasks, self.n_labels) < 2**31 else np.int64
        grouped = self.n_labels < 2 or bool((self.tasks[1:] >= self.tasks[:-1]).all())
        if grouped and self.n_labels >= ROW_SORT_MIN_LABELS and rows_fit_padding(
                self.task_degree, self.n_labels):
            data, indices, indptr, repeated = grouped_incidence(
                self.tasks, self.workers, self.labels, k, self.task_degree, index_dtype)
            return self._csr(data, indices, indptr), repeated
        key_dtype = np.int32 if self.n_tasks * n_cols < 2**31 else np.int64
        # keys built in their final dtype, the int64 codes cast on the fly (no int32 copies)
        base = np.multiply(self.tasks, n_cols, dtype=key_dtype, casting="same_kind")
        keys = np.multiply(self.workers, k, dtype=key_dtype, casting="same_kind")
        np.add(keys, self.labels, out=keys, casting="same_kind")
        keys += base
        step = np.subtract(keys[1:], keys[:-1])
        if keys.size > 1 and not bool(step.min() > 0):
            if self.n_labels >= BLOCK_SORT_MIN_LABELS:
                keys = sort_by_task(keys, self.tasks, self.task_degree)
            else:
                keys.sort()
            np.subtract(keys[1:], keys[:-1], out=step)
        indptr = np.zeros(self.n_tasks + 1, dtype=index_dtype)
        if bool(step.all()):  # no (task, worker, label) triple twice: one entry per label
            entries, data = keys, np.ones(keys.size, dtype=np.float64)
            np.cumsum(self.task_degree, out=indptr[1:])
        else:
            starts = np.flatnonzero(np.concatenate([[True], step != 0]))
            entries = keys[starts]
            data = np.diff(np.append(starts, keys.size)).astype(np.float64)
            np.cumsum(np.bincount(entries // n_cols, minlength=self.n_tasks), out=indptr[1:])
            grouped = False
        if grouped:  # labels in task order: the sort kept every label's task, so its row
            indices = np.subtract(entries, base, dtype=index_dtype)
        else:
            rows = entries // n_cols
            rows *= n_cols
            indices = np.subtract(entries, rows, dtype=index_dtype)
        return self._csr(data, indices, indptr), has_repeated_pairs(keys, step, k)

    def _csr(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray) -> sp.csr_matrix:
        """The incidence matrix on its canonical arrays (sorted rows, no duplicates)."""
        mat = sp.csr_matrix((data, indices, indptr),
                            shape=(self.n_tasks, self.n_workers * self.n_classes), copy=False)
        mat.has_sorted_indices = True
        mat.has_canonical_format = True
        return mat

    @cached_property
    def class_counts(self) -> np.ndarray:
        """``(n_tasks, n_classes)`` int64 label counts per task and class (cached; read-only)."""
        keys = self.tasks * self.n_classes
        keys += self.labels  # in place: one fresh array, not two
        counts = np.bincount(keys, minlength=self.n_tasks * self.n_classes)
        counts = counts.reshape(self.n_tasks, self.n_classes)
        counts.flags.writeable = False
        return counts

    def vote_counts(self) -> np.ndarray:
        """``(n_tasks, n_classes)`` matrix of label counts per task and class (a fresh float
        array)."""
        return self.class_counts.astype(np.float64)

    def subset(self, mask: np.ndarray) -> LabelSet:
        """Labels selected by a boolean mask; sizes and id maps are kept."""
        return LabelSet(
            self.tasks[mask],
            self.workers[mask],
            self.labels[mask],
            self.n_tasks,
            self.n_workers,
            self.n_classes,
            self.task_ids,
            self.worker_ids,
            self.class_ids,
            None if self.scores is None else self.scores[mask],
            None if self.confidence is None else self.confidence[mask],
            self.sources,
        )
