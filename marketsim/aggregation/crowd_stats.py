"""The statistics a crowd's twin is checked against (``marketsim calibrate``): accuracy per
worker, labels per task and per worker, and the agreement rate, for the real labels and the
simulated ones alike. The world itself is fitted by
:mod:`marketsim.aggregation.confusion_fit`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CrowdStats:
    """What a twin is compared on: accuracy per worker against a reference (NaN for a worker
    without labels), labels per task and per worker, the share of agreeing label pairs
    on the same task, and the share of tasks (with a reference) on which most labels are
    wrong: the errors a crowd shares, which independent workers hardly ever make."""

    worker_accuracy: np.ndarray
    labels_per_task: np.ndarray
    labels_per_worker: np.ndarray
    agreement: float
    mostly_wrong: float


def crowd_stats(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                reference: np.ndarray, n_tasks: int, n_workers: int,
                n_classes: int) -> CrowdStats:
    """The statistics of one label set (``reference``: a class per task, -1 = unknown)."""
    per_worker = np.bincount(workers, minlength=n_workers)
    known = reference[tasks] >= 0
    right = np.bincount(workers[known], labels[known] == reference[tasks[known]],
                        minlength=n_workers)
    seen = np.bincount(workers[known], minlength=n_workers)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(seen > 0, right / np.maximum(seen, 1), np.nan)
    counts = np.bincount(tasks * n_classes + labels, minlength=n_tasks * n_classes)
    counts = counts.reshape(n_tasks, n_classes).astype(np.float64)
    per_task = counts.sum(axis=1)
    pairs = float((per_task * (per_task - 1)).sum())
    agree = float((counts * (counts - 1)).sum())
    right_per_task = np.bincount(tasks[known], labels[known] == reference[tasks[known]],
                                 minlength=n_tasks)
    judged = (reference >= 0) & (per_task > 0)
    wrong = float(np.mean(right_per_task[judged] < 0.5 * per_task[judged])) if judged.any() \
        else float("nan")
    return CrowdStats(accuracy, per_task.astype(np.int64), per_worker,
                      agree / pairs if pairs else float("nan"), wrong)
