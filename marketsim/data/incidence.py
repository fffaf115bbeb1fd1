"""The incidence build's helpers for labels that come in task order (as label files usually
list them): each task's row of the incidence matrix is then already in place, so only the
column keys ``worker * K + label`` need sorting, within rows — a fraction of a whole sort's
cost. :attr:`LabelSet.incidence <marketsim.data.labels.LabelSet.incidence>` uses them; they
give exactly the arrays of its whole-sort build, and of scipy's COO conversion.
"""

from __future__ import annotations

import numpy as np

#: Labels in task order, from this many on, are sorted within tasks only
#: (:func:`grouped_incidence`); below it, one sort of a few thousand keys costs less than the
#: row sort's extra numpy calls (3,000 labels: 100 against 110-120 us here).
ROW_SORT_MIN_LABELS = 10_000


def sort_within_rows(keys: np.ndarray, degree: np.ndarray) -> None:
    """Sort each row of ``keys`` in place: row ``i`` is the next ``degree[i]`` entries (keys
    are non-negative). 1M keys in rows of 10 take 2.5 ms, against 31 ms for ``np.sort`` on
    this machine. Rows of equal length sort as one 2-D array; others are padded to the
    longest row with the dtype's largest value (which sorts last) while that at most doubles
    the array; otherwise each key is offset by its row and a stable sort (timsort) merges the
    sorted runs."""
    n, width = degree.size, int(degree.max()) if degree.size else 0
    if n * width == keys.size:  # every row has ``width`` keys
        keys.reshape(n, width).sort(axis=1)
    elif n * width <= 2 * keys.size:
        # flat slot of each key in the padded (n, width) array: its position + row * width
        # - the row's first position
        shift = np.arange(0, n * width, width, dtype=np.int64)
        shift[1:] -= np.cumsum(degree[:-1])
        slots = np.repeat(shift, degree)
        slots += np.arange(keys.size)
        padded = np.full(n * width, np.iinfo(keys.dtype).max, dtype=keys.dtype)
        padded[slots] = keys
        padded.reshape(n, width).sort(axis=1)
        np.take(padded, slots, out=keys)
    elif keys.size:
        offsets = np.repeat(np.arange(n, dtype=np.int64) * (int(keys.max()) + 1), degree)
        merged = np.add(keys, offsets, dtype=np.int64)
        merged.sort(kind="stable")
        np.subtract(merged, offsets, out=keys, casting="unsafe")  # back in range


def grouped_incidence(
    tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray, n_classes: int,
    task_degree: np.ndarray, index_dtype: type[np.integer],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """``(data, indices, indptr, repeated pairs)`` of the canonical incidence matrix of labels
    whose ``tasks`` never decrease: the column keys ``worker * K + label``, sorted within
    rows (:func:`sort_within_rows`; not at all when they already are), are the column indices
    as they stand — no task part in the keys, no division."""
    n, k = tasks.size, n_classes
    cols = workers * k  # in int64 and then cast: faster than a mixed-type add
    cols += labels
    cols = cols.astype(index_dtype)
    indptr = np.zeros(task_degree.size + 1, dtype=index_dtype)
    np.cumsum(task_degree, out=indptr[1:])
    # the steps between rows are set to K: positive, and no repeated pair
    between = indptr[1:-1]
    between = between[(between > 0) & (between < n)] - 1
    step = np.subtract(cols[1:], cols[:-1])
    step[between] = k
    if n > 1 and not bool(step.min() > 0):
        sort_within_rows(cols, task_degree)
        np.subtract(cols[1:], cols[:-1], out=step)
        step[between] = k
    if bool(step.all()):  # no (task, worker, label) triple twice: one entry per label
        data, indices = np.ones(n, dtype=np.float64), cols
    else:
        starts = np.flatnonzero(np.concatenate([[True], step != 0]))
        indices = cols[starts]
        data = np.diff(np.append(starts, n)).astype(np.float64)
        np.cumsum(np.bincount(tasks[starts], minlength=task_degree.size), out=indptr[1:])
    return data, indices, indptr, has_repeated_pairs(cols, step, k)


def has_repeated_pairs(keys: np.ndarray, step: np.ndarray, n_classes: int) -> bool:
    """Whether sorted ``keys`` (``... * K + worker * K + label``; ``step``: their differences)
    hold a (task, worker) pair twice: only keys less than K apart can, so only those few are
    divided."""
    near = np.flatnonzero(step < n_classes)
    return bool(np.any(keys[near] // n_classes == keys[near + 1] // n_classes))
