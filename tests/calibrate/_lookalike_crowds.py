"""A planted three-class look-alike world and its crowd, for the tests of the worlds
``calibrate`` builds on look-alikes (accuracy restored, labels following the look-alike)."""

from __future__ import annotations

import numpy as np

from marketsim.aggregation.confusion_fit import ConfusionFit
from marketsim.aggregation.world_replay import world_labels
from marketsim.data.labels import LabelSet

N_WORKERS = 30


def lookalike_world(right: float, lookalike: np.ndarray) -> ConfusionFit:
    """:data:`N_WORKERS` workers right on ``right`` of the tasks that look like their class
    (half of them a little better, half a little worse), the tasks' look-alikes
    ``lookalike``."""
    spread = np.where(np.arange(N_WORKERS) % 2 == 0, 0.05, -0.05)[:, None, None]
    base = (right + spread) * np.eye(3) + (1 - right - spread) / 2 * (1 - np.eye(3))
    return ConfusionFit(base, lookalike, 0.0, -1000.0, 10, 2100.0,
                        "crowd-shrunk confusion, look-alike tasks", with_lookalike=True)


def lookalike_crowd(true_world: ConfusionFit, seed: int, n_tasks: int, per_task: int
                    ) -> tuple[LabelSet, np.ndarray]:
    """Labels of ``true_world`` on random pairs, and the truth as one-hot weights."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n_tasks)
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.argsort(rng.random((n_tasks, N_WORKERS)), axis=1)[:, :per_task].ravel()
    labels = world_labels(true_world, tasks, workers, truth, rng)
    return LabelSet(tasks, workers, labels, n_tasks, N_WORKERS, 3), np.eye(3)[truth]
