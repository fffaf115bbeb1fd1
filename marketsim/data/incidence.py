"""Sorting helpers of the incidence build on many labels. In task order (as label files
usually list them) each task's row of the incidence matrix is already in place, so only the
column keys ``worker * K + label`` need sorting, within rows: a fraction of a whole sort's
cost. In any other order, a radix pass groups the labels by blocks of tasks first.
:attr:`LabelSet.incidence <marketsim.data.labels.LabelSet.incidence>` uses them; they give
exactly the arrays of its whole-sort build, and of scipy's COO conversion.
"""

from __future__ import annotations

import numpy as np

#: From this many labels on, labels in task order are sorted within tasks only
#: (:func:`grouped_incidence`); below it, one ``np.sort`` of a few thousand keys costs less
#: than the row sort's extra numpy calls (3,000 labels: 100 against 110-120 us here).
ROW_SORT_MIN_LABELS = 10_000

#: From this many labels on, labels in no task order are sorted by blocks of tasks
#: (:func:`sort_by_task`). Whole incidence build of labels in random order, here: 30,000
#: labels 1.2-1.3 ms either way, 50,000 2.1 -> 1.9 ms, 100,000 4.7 -> 2.4 ms; 10,000
#: 0.27-0.29 -> 0.32 ms.
BLOCK_SORT_MIN_LABELS = 50_000


def rows_fit_padding(degree: np.ndarray, size: int) -> bool:
    """Whether rows of ``degree`` entries (``size`` in all), padded to the longest, make an
    array at most four times ``size``: then :func:`sort_within_rows` sorts them as one 2-D
    array, well below a whole sort's cost; otherwise (a few long rows) a whole sort is
    about as cheap."""
    return degree.size * (int(degree.max()) if degree.size else 0) <= 4 * size


def sort_within_rows(keys: np.ndarray, degree: np.ndarray) -> None:
    """Sort each row of ``keys`` in place: row ``i`` is the next ``degree[i]`` entries (keys
    are non-negative). 1M keys in rows of 10 take 2.5 ms, against 31 ms for ``np.sort`` on
    this machine. Rows of equal length sort as one 2-D array; others are padded to the
    longest row with the dtype's largest value (which sorts last) while that at most
    quadruples the array (1M keys in rows of Poisson(10) lengths: 9.6 ms). Otherwise each key
    is offset by its row and the whole array sorted: by timsort, which merges sorted short
    rows almost linearly, when no row is longer than 128, else by numpy's default sort."""
    n, width = degree.size, int(degree.max()) if degree.size else 0
    if n * width == keys.size:  # every row has ``width`` keys
        keys.reshape(n, width).sort(axis=1)
    elif rows_fit_padding(degree, keys.size):
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
        span = int(keys.max()) + 1
        dtype = np.int32 if n * span < 2**31 else np.int64
        offsets = np.repeat(np.arange(0, n * span, span, dtype=dtype), degree)
        merged = np.add(keys, offsets, dtype=dtype)
        merged.sort(kind="stable" if width <= 128 else None)
        np.subtract(merged, offsets, out=keys, casting="unsafe")  # back in range


def sort_by_task(keys: np.ndarray, tasks: np.ndarray, task_degree: np.ndarray) -> np.ndarray:
    """``np.sort(keys)`` for the keys ``task * n_columns + column`` of labels in any order:
    numpy's stable argsort of 16-bit values (a radix sort) groups the labels by blocks of
    ``2**s`` consecutive tasks (at most 65,536 blocks), then each block is sorted
    (:func:`sort_within_rows`). 1M shuffled keys, 10 or Poisson(10) per task: 15-19 ms
    against 31-35 ms for ``np.sort`` here. When the padded blocks would take more than four
    times the keys (:func:`rows_fit_padding`), ``np.sort``: a whole sort costs as much."""
    n_tasks = task_degree.size
    shift = max((n_tasks - 1).bit_length() - 16, 0)
    # labels per block (exact integer sums of the tasks' degrees)
    degree = np.add.reduceat(task_degree, np.arange(0, n_tasks, 1 << shift)) if shift else (
        task_degree)
    if not rows_fit_padding(degree, keys.size):  # a few long blocks: not worth it
        return np.sort(keys)
    blocks = np.right_shift(tasks, shift).astype(np.uint16)  # < 2**16 by the choice of shift
    out = np.take(keys, np.argsort(blocks, kind="stable"))
    sort_within_rows(out, degree)
    return out


def grouped_incidence(
    tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray, n_classes: int,
    task_degree: np.ndarray, index_dtype: type[np.integer],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """``(data, indices, indptr, repeated pairs)`` of the canonical incidence matrix of labels
    whose ``tasks`` never decrease (used when :func:`rows_fit_padding`): the column keys
    ``worker * K + label``, sorted within rows (:func:`sort_within_rows`; not at all when they
    already are), are the column indices as they stand — no task part, no division."""
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
