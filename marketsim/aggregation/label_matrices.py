"""The sparse incidence matrices of a label file that the world fits sum over: labels by task
(:func:`label_rows`) and each task's labels by (worker, answer) (:func:`answer_matrix`): a sum
over each task's labels, or over each (worker, answer)'s tasks, is one sparse product."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def label_rows(rows: np.ndarray, n_rows: int) -> sp.csr_matrix:
    """The (n_rows, labels) 0/1 matrix putting label ``l`` in row ``rows[l]`` (its task, or
    its worker and answer): sums over each row's labels as one sparse product."""
    return sp.csr_matrix((np.ones(rows.size), (rows, np.arange(rows.size))),
                         shape=(n_rows, rows.size))


def answer_matrix(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray, n_tasks: int,
                  n_workers: int, k: int) -> sp.csr_matrix:
    """The (n_tasks, n_workers * K) count matrix of each task's labels by (worker, answer),
    column ``j * K + y``: a label's terms depend only on its worker and answer, so a sum over
    each task's labels is one product with a table per (worker, answer)."""
    counts = sp.csr_matrix((np.ones(tasks.size), (tasks, workers * k + labels)),
                           shape=(n_tasks, n_workers * k))
    counts.sum_duplicates()
    return counts
