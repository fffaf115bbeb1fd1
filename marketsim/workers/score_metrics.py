"""What the recorder measures in a continuous-score market (Hoiem's bad-annotator model):
the RMSE of the estimated task means and the accuracy of the good/bad annotator call.

Tasks without any score have no estimate (NaN); they count with ``fill``, the mean of the
task-mean distribution (what a requester who knows that distribution would guess), so the
RMSE always covers every task and estimators are compared on the same footing.
"""

from __future__ import annotations

import numpy as np


def task_mean_rmse(estimate: np.ndarray, mu: np.ndarray, fill: float) -> float:
    """Root-mean-square error of estimated task means against the true ones (NaN → ``fill``)."""
    est = np.where(np.isnan(estimate), fill, estimate)
    return float(np.sqrt(np.mean((est - mu) ** 2))) if mu.size else 0.0


def good_call_accuracy(good_proba: np.ndarray, good: np.ndarray, seen: np.ndarray) -> float:
    """Fraction of annotators with at least one score whose call ``P(good) > 1/2`` matches
    their true type (NaN before anybody has scored)."""
    if not seen.any():
        return float("nan")
    return float(np.mean((good_proba[seen] > 0.5) == good[seen]))


def good_proba_error(good_proba: np.ndarray, good: np.ndarray, seen: np.ndarray) -> float:
    """Mean absolute error of ``P(good)`` against the 0/1 type, over annotators with a score:
    the continuous market's ``ability_error`` (0 before anybody has scored)."""
    if not seen.any():
        return 0.0
    return float(np.mean(np.abs(good_proba[seen] - good[seen].astype(np.float64))))
