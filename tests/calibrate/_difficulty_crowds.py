"""Crowds whose tasks differ in difficulty, drawn without the replay's code: the test files of
task difficulty on the design curve (``test_curve_difficulty``, ``test_restored_difficulty``)
check the estimate against the spread a crowd was drawn with."""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

from marketsim.data.labels import LabelSet


def difficulty_crowd(crowd: np.ndarray, concentration: float, n_workers: int, sigma: float,
                     seed: int, n_tasks: int, per_task: int
                     ) -> tuple[LabelSet, np.ndarray, np.ndarray]:
    """Labels of ``n_workers`` workers whose rows are drawn around ``crowd`` (K × K; Dirichlet
    of ``concentration`` times each row), ``per_task`` distinct workers on each of ``n_tasks``
    tasks whose inverse difficulty has ``log beta ~ N(0, sigma^2)`` (each label
    ``~ softmax(beta log pi_j[c])``: the errors gather on the hard tasks); the labels, the
    truth and the workers' matrices (workers, K, K)."""
    k = crowd.shape[0]
    rng = np.random.default_rng(seed)
    matrices = np.stack([rng.dirichlet(concentration * row, size=n_workers) for row in crowd],
                        axis=1)
    truth = rng.integers(0, k, n_tasks)
    beta = np.exp(sigma * rng.standard_normal(n_tasks))
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.concatenate([rng.choice(n_workers, per_task, replace=False)
                              for _ in range(n_tasks)])
    rows = softmax(beta[tasks, None] * np.log(matrices[workers, truth[tasks]]), axis=1)
    labels = (np.cumsum(rows, axis=1) < rng.random((tasks.size, 1))).sum(axis=1)
    return LabelSet(tasks, workers, np.minimum(labels, k - 1), n_tasks, n_workers, k), truth, \
        matrices
