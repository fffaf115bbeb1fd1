"""A :class:`~marketsim.data.labels.LabelSet` over compact arrays (int32 ids, int8 classes), as a
big market's label log holds them: the int64 arrays every estimator may read are made only
when one is read, so a fit that needs only the incidence matrix and the per-worker counts
(one-coin EM, warm-started) never holds a second copy of the labels (issue #30)."""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from marketsim.data.labels import LabelSet
from marketsim.data.sources import machine_columns


def _wide(arr: np.ndarray) -> np.ndarray:
    """``arr`` as a fresh read-only int64 array (what a plain LabelSet holds)."""
    out = arr.astype(np.int64)
    out.flags.writeable = False
    return out


def compact_id_dtype(size: int) -> type[np.signedinteger]:
    """The smallest of int32 and int64 holding indices below ``size``."""
    return np.int32 if size < 2**31 else np.int64


def compact_class_dtype(n_classes: int) -> type[np.signedinteger]:
    """The smallest signed integer type holding class indices below ``n_classes``."""
    return np.int8 if n_classes <= 2**7 else np.int16 if n_classes <= 2**15 else np.int32


class CompactLabels(LabelSet):
    """Labels on read-only compact arrays, with what the caller already knows preset.

    ``tasks``, ``workers`` and ``labels`` read as the usual int64 arrays (made, read-only, at
    the first read and kept); :meth:`compact_arrays` gives the compact ones without a copy.
    ``incidence`` (a canonical CSR matrix of these labels), ``task_degree`` and
    ``worker_label_counts`` are taken as given when passed: the label log keeps them up to date
    as labels arrive. The caller vouches that the codes are in range (the market wrote them).
    ``confidence`` and ``sources`` are :class:`LabelSet`'s (a market's machine annotators).
    """

    _compact: tuple[np.ndarray, np.ndarray, np.ndarray]

    def __init__(  # noqa: PLR0913 - the LabelSet's sizes and the preset results
        self,
        arrays: tuple[np.ndarray, np.ndarray, np.ndarray],
        n_tasks: int,
        n_workers: int,
        n_classes: int,
        *,
        scores: np.ndarray | None = None,
        incidence: sp.csr_matrix | None = None,
        task_degree: np.ndarray | None = None,
        worker_label_counts: np.ndarray | None = None,
        confidence: np.ndarray | None = None,
        sources: tuple[str, ...] | None = None,
    ) -> None:
        put = object.__setattr__  # a frozen dataclass underneath
        confidence, sources = machine_columns(confidence, sources, arrays[0].shape[0],
                                              int(n_workers))
        put(self, "confidence", confidence)
        put(self, "sources", sources)
        put(self, "_compact", arrays)
        put(self, "n_tasks", int(n_tasks))
        put(self, "n_workers", int(n_workers))
        put(self, "n_classes", int(n_classes))
        put(self, "scores", scores)
        if incidence is not None:
            self.preset_incidence(incidence)
        if task_degree is not None:
            self.__dict__["task_degree"] = task_degree
        if worker_label_counts is not None:
            self.__dict__["worker_label_counts"] = worker_label_counts

    def compact_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(tasks, workers, labels) in their compact types, read-only, no copy."""
        return self._compact

    @property
    def n_labels(self) -> int:
        """Number of labels, without widening the arrays."""
        return int(self._compact[0].shape[0])

    @cached_property
    def tasks(self) -> np.ndarray:
        """Task index of each label (int64, read-only; made at the first read)."""
        return _wide(self._compact[0])

    @cached_property
    def workers(self) -> np.ndarray:
        """Worker index of each label (int64, read-only; made at the first read)."""
        return _wide(self._compact[1])

    @cached_property
    def labels(self) -> np.ndarray:
        """Class index of each label (int64, read-only; made at the first read)."""
        return _wide(self._compact[2])

    @cached_property
    def task_ids(self) -> np.ndarray:
        """Identity map of the tasks (as a plain LabelSet's default)."""
        return np.arange(self.n_tasks)

    @cached_property
    def worker_ids(self) -> np.ndarray:
        """Identity map of the workers."""
        return np.arange(self.n_workers)

    @cached_property
    def class_ids(self) -> np.ndarray:
        """Class values 1..K (as a plain LabelSet's default)."""
        return np.arange(1, self.n_classes + 1)
