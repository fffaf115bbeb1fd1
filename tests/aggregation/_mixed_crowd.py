"""A synthetic mixed crowd with known parameters: binary tasks, humans of known accuracy and
one model asked every task twice (deterministic: the same answer), whose accuracy is planted
per confidence quarter."""

from __future__ import annotations

import numpy as np

from marketsim.data.labels import LabelSet

#: The model's planted accuracy in confidence [0, .25), [.25, .5), [.5, .75), [.75, 1].
BIN_ACCURACY = (0.55, 0.7, 0.85, 0.97)


def mixed_crowd(seed: int = 0, n_tasks: int = 2000, n_humans: int = 30,
                per_task: int = 3) -> tuple[LabelSet, np.ndarray, np.ndarray]:
    """The labels, the true classes and the model's realised accuracy per confidence bin."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_tasks)
    accuracy = rng.uniform(0.65, 0.85, n_humans)
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = rng.permuted(np.tile(np.arange(n_humans), (n_tasks, 1)), axis=1)[:, :per_task]
    workers = workers.ravel()
    right = rng.random(tasks.size) < accuracy[workers]
    labels = np.where(right, truth[tasks], 1 - truth[tasks])
    quarter = rng.integers(0, 4, n_tasks)
    confidence = (quarter + rng.uniform(0.05, 0.95, n_tasks)) / 4
    model_right = rng.random(n_tasks) < np.asarray(BIN_ACCURACY)[quarter]
    model_labels = np.where(model_right, truth, 1 - truth)
    every = np.arange(n_tasks)
    data = LabelSet(np.concatenate([tasks, every, every]),
                    np.concatenate([workers, np.full(2 * n_tasks, n_humans)]),
                    np.concatenate([labels, model_labels, model_labels]),
                    n_tasks, n_humans + 1, 2,
                    confidence=np.concatenate([np.full(tasks.size, np.nan), confidence,
                                               confidence]),
                    sources=("human",) * n_humans + ("gpt",))
    realised = np.array([model_right[quarter == b].mean() for b in range(4)])
    return data, truth, realised
