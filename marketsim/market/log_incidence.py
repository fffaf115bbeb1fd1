"""The incidence matrix of a label log, built once and grown as labels arrive (issue #30).

Entry (task, worker * K + class) is 1 for each label, rows in task order, columns sorted
within a row: exactly the canonical matrix :attr:`~marketsim.data.labels.LabelSet.incidence`
builds from scratch, so every EM kernel adds the same terms in the same order. At each refresh
only the labels received since the last one are sorted (by task, then column) and their places
found by a binary search within their rows; the column indices are then merged in one pass
(:func:`insert_sorted`: ``np.insert`` without its whole-array temporaries): 4 bytes per label
for the indices and no int64 key per label. The values are one shared ``1.0``
(:func:`~marketsim.aggregation._ones.shared_ones`, which the EM kernels multiply without
reading) in a log of at least :data:`SHARED_ONES_FROM` labels when the C extension is built;
else an array of ``1.0``, 8 bytes a label.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from marketsim.aggregation._ones import NATIVE, shared_ones

#: Logs made for at least this many labels share one ``1.0`` as their matrix's values (below,
#: an array of them costs under 1 MiB, and estimators that multiply through scipy need no copy).
SHARED_ONES_FROM = 1 << 17


def _row_lower_bound(indices: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                     cols: np.ndarray) -> np.ndarray:
    """For each i, the first position in ``indices[lo[i]:hi[i]]`` (a sorted row) whose value
    is not below ``cols[i]``: a binary search run for all rows at once."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) >> 1
        below = active & (indices[np.minimum(mid, indices.size - 1)] < cols)
        lo = np.where(below, mid + 1, lo)
        hi = np.where(active & ~below, mid, hi)


#: Entries of the merged array filled at a time by :func:`insert_sorted`.
INSERT_CHUNK = 1 << 20


def insert_sorted(arr: np.ndarray, pos: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.insert(arr, pos, values)`` for non-decreasing ``pos``: the same array, made
    without ``np.insert``'s mask of the whole result and the int64 index of every old entry
    its masked assignment makes (13 bytes a label at the refresh's peak); the old entries are
    copied chunk by chunk of the result instead."""
    at = pos + np.arange(pos.size)  # where the new values land (``np.insert``'s rule)
    out = np.empty(arr.size + pos.size, dtype=arr.dtype)
    out[at] = values
    for a in range(0, out.size, INSERT_CHUNK):
        b = min(a + INSERT_CHUNK, out.size)
        lo, hi = np.searchsorted(at, [a, b])  # the new values in out[a:b]
        keep = np.ones(b - a, dtype=bool)
        keep[at[lo:hi] - a] = False
        out[a:b][keep] = arr[a - lo:b - hi]  # the old entries in between, in order
    return out


class GrowingIncidence:
    """A ``(n_tasks, n_workers * K)`` CSR matrix of labels, merged into at each :meth:`add`."""

    def __init__(self, n_tasks: int, n_cols: int, capacity: int = 0) -> None:
        self.n_tasks = n_tasks
        self.n_cols = n_cols
        self.index_dtype = np.int32 if max(n_tasks, n_cols) < 2**31 else np.int64
        self.indptr = np.zeros(n_tasks + 1, dtype=self.index_dtype)
        self.indices = np.empty(0, dtype=self.index_dtype)
        #: Entries the ``1.0`` values make room for before they grow.
        self.capacity = capacity
        #: Whether the values are one shared ``1.0`` (no values array; see the module).
        self.shared_values = NATIVE and capacity >= SHARED_ONES_FROM
        self._ones = np.empty(0)
        self._filled = 0
        self._views_of: np.ndarray | None = None
        self._views: tuple[memoryview, memoryview] = (memoryview(b""), memoryview(b""))

    @property
    def nnz(self) -> int:
        """Labels merged so far."""
        return int(self.indices.size)

    def add(self, tasks: np.ndarray, cols: np.ndarray) -> bool:
        """Merge labels at (``tasks``, ``cols``); ``False`` (and nothing merged) when one of them
        is already an entry or repeats within the new ones (the caller then builds the matrix
        the usual way, which adds repeats up)."""
        if tasks.size == 0:
            return True
        order = np.lexsort((cols, tasks))
        t = tasks[order].astype(np.int64)
        c = cols[order].astype(self.index_dtype)
        same = (t[1:] == t[:-1]) & (c[1:] == c[:-1])
        if same.any():
            return False
        lo = self.indptr[t].astype(np.int64)
        hi = self.indptr[t + 1].astype(np.int64)
        pos = _row_lower_bound(self.indices, lo, hi, c)
        if self.indices.size and bool(
                ((pos < hi) & (self.indices[np.minimum(pos, self.indices.size - 1)] == c)).any()):
            return False
        self._views_of = None  # the memoryviews must not keep the old indices alive
        self._views = (memoryview(b""), memoryview(b""))
        self.indices = insert_sorted(self.indices, pos, c)
        per_row = np.bincount(t, minlength=self.n_tasks)
        indptr = np.empty_like(self.indptr)
        indptr[0] = 0
        np.cumsum(per_row, out=indptr[1:])
        indptr += self.indptr  # a fresh array: matrices handed out earlier keep theirs
        self.indptr = indptr
        return True

    def has_rows(self, tasks: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Whether row ``tasks[i]`` has an entry in columns ``[low[i], high[i])``, for all i
        at once."""
        t = np.asarray(tasks, dtype=np.int64)
        lo = self.indptr[t].astype(np.int64)
        hi = self.indptr[t + 1].astype(np.int64)
        pos = _row_lower_bound(self.indices, lo, hi, np.asarray(low))
        if self.indices.size == 0:
            return np.zeros(t.size, dtype=bool)
        return (pos < hi) & (self.indices[np.minimum(pos, self.indices.size - 1)] < high)

    def has_entry(self, task: int, low: int, high: int) -> bool:
        """Whether row ``task`` has an entry in columns ``[low, high)`` (scalar code, for one
        hand-out: a walk over the row through memoryviews)."""
        ptr, idx = self._row_views
        for p in range(ptr[task], ptr[task + 1]):
            col = idx[p]
            if col >= low:
                return col < high
        return False

    @property
    def _row_views(self) -> tuple[memoryview, memoryview]:
        if self._views_of is not self.indices:
            self._views = (self.indptr.data, self.indices.data)
            self._views_of = self.indices
        return self._views

    def matrix(self) -> sp.csr_matrix:
        """The matrix so far on read-only views of its arrays (canonical: sorted rows, no
        duplicates); later merges make new arrays, so it never changes under its holder."""
        nnz = self.nnz
        mat = sp.csr_matrix((self._values(nnz), self.indices[:], self.indptr[:]),
                            shape=(self.n_tasks, self.n_cols), copy=False)
        for arr in (mat.data, mat.indices, mat.indptr):  # views of the log's arrays
            arr.flags.writeable = False
        mat.has_sorted_indices = True
        mat.has_canonical_format = True
        return mat

    def _values(self, nnz: int) -> np.ndarray:
        """``nnz`` values of ``1.0``: shared, or the first of an array with room for
        ``capacity`` (pages untouched are not resident, so it costs 8 bytes a label merged,
        with no copy as it grows)."""
        if self.shared_values:
            return shared_ones(nnz)
        if self._ones.size < nnz:
            ones = np.empty(max(nnz, self.capacity))
            ones[: self._filled] = 1.0
            self._ones = ones
        self._ones[self._filled: nnz] = 1.0
        self._filled = nnz
        return self._ones[:nnz]

    def degrees(self) -> np.ndarray:
        """Labels per task (int64, as ``np.bincount`` counts them)."""
        return np.diff(self.indptr).astype(np.int64)
