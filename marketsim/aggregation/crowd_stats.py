"""The statistics a crowd's twin is checked against (``marketsim calibrate``): accuracy per
worker, labels per task and per worker, and the agreement rate, for the real labels and the
simulated ones alike. The world itself is fitted by
:mod:`marketsim.aggregation.confusion_fit`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marketsim.aggregation.metrics import stratified_mean


@dataclass(frozen=True)
class CrowdStats:
    """What a twin is compared on: accuracy per worker against a reference (NaN for a worker
    without labels) and over all labels, labels per task and per worker, the share of
    agreeing label pairs on the same task, and the share of tasks (with a reference) on which
    most labels are wrong: the errors a crowd shares, which independent workers hardly ever
    make."""

    worker_accuracy: np.ndarray
    labels_per_task: np.ndarray
    labels_per_worker: np.ndarray
    agreement: float
    mostly_wrong: float
    accuracy: float


def crowd_stats(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                reference: np.ndarray, n_tasks: int, n_workers: int,
                n_classes: int, judged: np.ndarray | None = None,
                mix: tuple[float, ...] | None = None) -> CrowdStats:
    """The statistics of one label set (``reference``: a class per task, -1 = unknown).

    The overall accuracy and the share of mostly-wrong tasks are measured against ``judged``
    (a class per task, -1 = unknown; default ``reference``) and, with ``mix``, weighted by
    class to it: a truth on some tasks is the only reference on which a label can be shown
    wrong where the whole crowd errs (against Dawid–Skene's posterior a task's majority is
    nearly always right), and a twin is judged as those tasks are mixed
    (:func:`~marketsim.aggregation.design_curve.judged_mix`)."""
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
    weighted = judged is not None or mix is not None
    judged = reference if judged is None else judged
    on_judged = judged[tasks] >= 0
    hits = (labels[on_judged] == judged[tasks[on_judged]]).astype(np.float64)
    if weighted:
        overall = stratified_mean(hits, judged[tasks[on_judged]], mix)
    else:  # the label-weighted mean of the workers' accuracies
        ok = ~np.isnan(accuracy)
        overall = float(np.average(accuracy[ok], weights=per_worker[ok])) if ok.any() \
            else float("nan")
    right_per_task = np.bincount(tasks[on_judged], hits, minlength=n_tasks)
    scored = (judged >= 0) & (per_task > 0)
    wrong = stratified_mean((right_per_task[scored] < 0.5 * per_task[scored]).astype(
        np.float64), judged[scored], mix)
    return CrowdStats(accuracy, per_task.astype(np.int64), per_worker,
                      agree / pairs if pairs else float("nan"), wrong, overall)
