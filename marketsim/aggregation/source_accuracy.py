"""What each source of a mixed crowd is worth: the humans' and each model's accuracy, as the
fitted estimator states it and, where the truth is known, as measured on it.

Read by ``marketsim infer`` on a label file with a source column (:mod:`marketsim.data.sources`)
and, for ``ds-confidence``, each model's accuracy per confidence bin (its calibration as learnt
from the humans). A source's accuracy against the truth (:func:`share_right`) is the one
``marketsim calibrate`` measures a model's by.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.aggregation.metrics import estimated_skill
from marketsim.aggregation.model_repeats import source_codes
from marketsim.data.labels import LabelSet
from marketsim.data.sources import HUMAN


def _number(x: float) -> float | None:
    """``x`` rounded for a report, None when not finite (JSON has no NaN)."""
    return round(float(x), 6) if np.isfinite(x) else None


def share_right(group: np.ndarray, labels: np.ndarray, reference: np.ndarray, n_groups: int
                ) -> np.ndarray:
    """Per group (0..n_groups-1 of each label), the share of its labels whose ``reference``
    class is known (>= 0) that give it (NaN: none known): a source's accuracy against the
    truth, as ``infer`` prints it and ``calibrate`` measures a model's."""
    known = reference >= 0
    n_known = np.bincount(group, weights=known, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(group, weights=known & (reference == labels),
                           minlength=n_groups) / n_known


def source_accuracy(est: Any, data: LabelSet, truth: np.ndarray | None) -> list[dict[str, Any]]:
    """One row per source (the humans first, then the models by name): its workers and labels,
    ``estimated_accuracy`` (the label-weighted mean of its workers' accuracy as the fitted
    estimator states it, :func:`~marketsim.aggregation.metrics.estimated_skill`) and, with
    ``truth`` (class index, -1 unknown), ``accuracy_vs_truth``: the share of its labels on
    tasks of known class that are right (None without such labels)."""
    codes, models = source_codes(data)
    group = np.where(codes >= 0, codes + 1, 0)  # 0: the humans, m + 1: model m
    n_groups = len(models) + 1
    label_group = group[data.workers]
    degree = data.worker_degree.astype(np.float64)
    skill = np.asarray(estimated_skill(est, data), dtype=np.float64)
    weighted = np.bincount(group, weights=skill * degree, minlength=n_groups)
    labels = np.bincount(label_group, minlength=n_groups)
    workers = np.bincount(group, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimated = weighted / labels
    measured = np.full(n_groups, np.nan) if truth is None else \
        share_right(label_group, data.labels, truth[data.tasks], n_groups)
    rows = []
    for g, name in enumerate((HUMAN, *models)):
        if workers[g] == 0:
            continue
        row: dict[str, Any] = {"source": name, "workers": int(workers[g]),
                               "labels": int(labels[g]),
                               "estimated_accuracy": _number(estimated[g])}
        if truth is not None:
            row["accuracy_vs_truth"] = _number(measured[g])
        rows.append(row)
    return rows


def confidence_bin_accuracy(est: Any) -> list[dict[str, Any]]:
    """One row per non-empty (model, confidence bin) of a fitted ``ds-confidence``: the
    model, the bin (``none``: labels without a confidence), its confidence range, labels and
    estimated accuracy."""
    rows = []
    n_bins = est.bin_labels_.shape[1] - 1
    for m, model in enumerate(est.models_):
        for b in np.flatnonzero(est.bin_labels_[m] > 0).tolist():
            low, high = est.bin_range_[m, b]
            rows.append({"source": model, "bin": "none" if b == n_bins else b + 1,
                         "confidence_min": _number(low), "confidence_max": _number(high),
                         "labels": int(est.bin_labels_[m, b]),
                         "estimated_accuracy": _number(est.bin_accuracy_[m, b])})
    return rows
