"""What a fitted estimator says about a label set, as a JSON-ready dict.

Pure computations (estimator + labels + truth -> dict), shared by ``marketsim infer`` and the
Python API: :func:`class_summary` for class methods, :func:`score_summary` for the continuous
score methods; both start from :func:`fit_summary`, the fields every fit has.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from marketsim.aggregation.bad_annotators import plain_means
from marketsim.aggregation.base import BaseAggregator
from marketsim.aggregation.majority_vote import fractional_tie_error
from marketsim.aggregation.metrics import error_rate
from marketsim.aggregation.source_accuracy import confidence_bin_accuracy, source_accuracy
from marketsim.data.labels import LabelSet


def finite(x: float | None) -> float | None:
    """``x`` as a float, or None when missing or not finite (JSON has no NaN)."""
    return None if x is None or not math.isfinite(x) else float(x)


def fit_summary(
    est: BaseAggregator,
    data: LabelSet,
    *,
    method: str,
    seconds: float,
    labels_file: str,
    truth_file: str | None,
    sizes: dict[str, int],
) -> dict[str, Any]:
    """The fields of every fit: method, files, sizes (``sizes`` after ``n_labels``),
    iterations, convergence, seconds and the final log-likelihood."""
    history = list(getattr(est, "log_likelihood_", []) or [])
    return {
        "method": method,
        "labels_file": labels_file,
        "truth_file": truth_file,
        "n_tasks": data.n_tasks,
        "n_workers": data.n_workers,
        "n_labels": data.n_labels,
        **sizes,
        "iterations": int(getattr(est, "n_iter_", 0)),
        "converged": bool(getattr(est, "converged_", True)),
        "seconds": round(seconds, 6),
        "log_likelihood": finite(history[-1]) if history else None,
    }


def class_summary(
    est: BaseAggregator,
    data: LabelSet,
    truth: np.ndarray | None,
    *,
    method: str,
    seconds: float,
    labels_file: str,
    truth_file: str | None,
) -> dict[str, Any]:
    """The result of a class method. With truth (class index, -1 unknown): ``error_rate`` over
    the ``n_tasks_with_truth`` tasks (and, for ``mv``, the error counting ties as fractions).
    With models among the workers, each source's accuracy (``sources``) and, for
    ``ds-confidence``, each model's per confidence bin (``confidence_bins``)."""
    result = fit_summary(est, data, method=method, seconds=seconds, labels_file=labels_file,
                         truth_file=truth_file, sizes={"n_classes": data.n_classes})
    if getattr(est, "init_used_", None) is not None:
        result["init"] = est.init_used_
    if truth is not None:
        known = truth >= 0
        result["n_tasks_with_truth"] = int(known.sum())
        result["error_rate"] = finite(error_rate(est.labels_, truth))
        if method == "mv":
            result["error_rate_fractional_ties"] = finite(
                fractional_tie_error(data.vote_counts(), truth)
            )
    if data.has_models:
        result["sources"] = source_accuracy(est, data, truth)
    if getattr(est, "bin_labels_", None) is not None and len(est.models_):
        result["confidence_bins"] = confidence_bin_accuracy(est)
    return result


def _rmse(estimate: np.ndarray, truth: np.ndarray, known: np.ndarray) -> float | None:
    """Root-mean-square error over the tasks ``known``; None when there are none."""
    if not known.any():
        return None
    diff = estimate[known] - truth[known]
    return finite(float(np.sqrt(np.mean(diff * diff))))


def score_summary(
    est: BaseAggregator,
    data: LabelSet,
    truth: np.ndarray | None,
    *,
    method: str,
    seconds: float,
    labels_file: str,
    truth_file: str | None,
) -> dict[str, Any]:
    """The result of a score method.

    ``n_good`` counts annotators with ``P(good) > 0.5``. With true means, ``rmse`` (the
    method's means) and ``rmse_plain_mean`` (unweighted mean per task) are over the tasks that
    have both a true mean and at least one score (``n_tasks_with_truth``).
    """
    scores = np.asarray(data.scores)
    result = fit_summary(
        est, data, method=method, seconds=seconds, labels_file=labels_file,
        truth_file=truth_file, sizes={"n_scores": int(np.count_nonzero(~np.isnan(scores)))},
    )
    result["sigma"] = finite(float(est.sigma_))
    result["pi"] = finite(float(est.pi_))
    result["n_good"] = int(np.count_nonzero(np.asarray(est.good_proba_) > 0.5))
    if truth is not None:
        means = np.asarray(est.means_, dtype=np.float64)
        known = ~np.isnan(truth) & ~np.isnan(means)
        result["n_tasks_with_truth"] = int(known.sum())
        result["rmse"] = _rmse(means, truth, known)
        result["rmse_plain_mean"] = _rmse(plain_means(data), truth, known)
    return result
