"""Error and worker-accuracy measures shared by the estimators, the CLI, the market recorder
and the benchmarks. Worker accuracy is computed here and nowhere else."""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.aggregation._numeric import transposed_products
from marketsim.aggregation._threads import threads_for
from marketsim.data.labels import LabelSet


def error_rate(predicted: np.ndarray, truth: np.ndarray) -> float:
    """Fraction of tasks with a known truth (``truth >= 0``) whose predicted class is wrong."""
    truth = np.asarray(truth)
    known = truth >= 0
    if not known.any():
        return float("nan")
    return float(np.mean(np.asarray(predicted)[known] != truth[known]))


def expected_correct(data: LabelSet, proba: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior-expected number of correct labels per worker, and label counts.

    The one-coin M-step and :func:`estimated_skill` both divide the first by the second.
    """
    k = data.n_classes
    counts = transposed_products(data.incidence, proba, threads_for(data.n_labels))
    counts = counts.reshape(data.n_workers, k, k)  # [j, l, c]
    correct = np.einsum("jcc->j", counts)
    return correct, data.worker_degree.astype(np.float64)


def model_accuracy(estimator: Any) -> np.ndarray | None:
    """Per-worker accuracy the fitted model itself states: ``skill_``, else
    ``sum_c prior_c confusion_[j, c, c]``; ``None`` for models with no worker parameters."""
    skill = getattr(estimator, "skill_", None)
    if skill is not None:
        return np.asarray(skill, dtype=np.float64)
    conf = getattr(estimator, "confusion_", None)
    if conf is not None:
        diag = np.einsum("jcc->jc", np.asarray(conf, dtype=np.float64))
        return diag @ np.asarray(estimator.prior_, dtype=np.float64)
    return None


def estimated_skill(estimator: Any, data: LabelSet) -> np.ndarray:
    """Per-worker accuracy of a fitted estimator: :func:`model_accuracy`, else the
    posterior-expected fraction of the worker's labels that are correct (0.5 without labels).

    Used by the market's recorder and by policies, so every estimator can be compared on the
    same footing.
    """
    skill = model_accuracy(estimator)
    if skill is not None:
        return skill
    correct, n = expected_correct(data, estimator.proba_)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, correct / np.maximum(n, 1.0), 0.5)


def mean_accuracy(estimator: Any, data: LabelSet) -> float | None:
    """Label-weighted mean of :func:`model_accuracy`; ``None`` when the model has none."""
    degree = data.worker_degree.astype(np.float64)
    if degree.sum() <= 0:
        return None
    skill = model_accuracy(estimator)
    if skill is None or np.shape(skill) != degree.shape:
        return None
    return float(skill @ degree / degree.sum())
