"""Error measures shared by the CLI, the market recorder and the benchmarks."""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.data.labels import LabelSet


def error_rate(predicted: np.ndarray, truth: np.ndarray) -> float:
    """Fraction of tasks with a known truth (``truth >= 0``) whose predicted class is wrong."""
    truth = np.asarray(truth)
    known = truth >= 0
    if not known.any():
        return float("nan")
    return float(np.mean(np.asarray(predicted)[known] != truth[known]))


def estimated_skill(estimator: Any, data: LabelSet) -> np.ndarray:
    """Per-worker accuracy of a fitted estimator: ``skill_``, else the accuracy implied by
    ``confusion_`` and ``prior_``, else the posterior-expected fraction of correct labels.

    Used by the market's recorder and by policies, so every estimator can be compared on the
    same footing.
    """
    if hasattr(estimator, "skill_"):
        return np.asarray(estimator.skill_, dtype=np.float64)
    if hasattr(estimator, "confusion_"):
        diag = np.einsum("jcc->jc", estimator.confusion_)
        return diag @ np.asarray(estimator.prior_, dtype=np.float64)
    from marketsim.aggregation.one_coin import expected_correct

    correct, n = expected_correct(data, estimator.proba_)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, correct / np.maximum(n, 1.0), 0.5)
