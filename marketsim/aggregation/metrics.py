"""Error and worker-accuracy measures shared by the estimators, the CLI, the market recorder
and the benchmarks. Worker accuracy is computed here and nowhere else."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from marketsim.aggregation._numeric import transposed_product
from marketsim.data.labels import LabelSet


def error_rate(predicted: np.ndarray, truth: np.ndarray,
               mix: tuple[float, ...] | None = None) -> float:
    """Fraction of tasks with a known truth (``truth >= 0``) whose predicted class is wrong;
    with ``mix``, each class's fraction weighted by its share (:func:`stratified_mean`)."""
    truth = np.asarray(truth)
    known = truth >= 0
    if not known.any():
        return float("nan")
    misses = (np.asarray(predicted)[known] != truth[known]).astype(np.float64)
    return stratified_mean(misses, truth[known], mix)


def stratified_mean(values: np.ndarray, classes: np.ndarray,
                    mix: tuple[float, ...] | None) -> float:
    """The mean of ``values`` (one per judged task, e.g. its miss, whose reference class is
    ``classes``), or with ``mix`` each class's mean weighted by its share: post-stratification,
    what these tasks would show were they mixed by class as ``mix`` says (a class with no
    task here drops out, the others' shares renormalised)."""
    if mix is None:
        return float(np.mean(values)) if values.size else float("nan")
    shares = np.asarray(mix, dtype=np.float64)
    k = len(shares)
    sums = np.bincount(classes, weights=values, minlength=k)[:k]
    counts = np.bincount(classes, minlength=k)[:k]
    present = (counts > 0) & (shares > 0)
    if not present.any():
        return float("nan")
    means = sums[present] / counts[present]
    return float(np.sum(shares[present] * means) / np.sum(shares[present]))


def expected_correct(data: LabelSet, proba: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior-expected number of correct labels per worker, and label counts.

    The one-coin M-step and :func:`estimated_skill` both divide the first by the second.
    """
    k = data.n_classes
    # own[j, l] = sum of proba[i, l] over worker j's labels l, i.e. the diagonal of
    # (incidence.T @ proba)[j, l, c]; summed over l from the left as einsum("jcc->j") does.
    class_major = np.ascontiguousarray(np.asarray(proba, dtype=np.float64).T).ravel()
    own = (data.own_class_incidence @ class_major).reshape(data.n_workers, k)
    correct = functools.reduce(np.add, own.T[1:], own[:, 0].copy())
    return correct, data.worker_degree.astype(np.float64)


def binary_expected_correct(data: LabelSet, proba: np.ndarray) -> np.ndarray:
    """:func:`expected_correct`'s first result for two classes, from one sparse product with
    the class-1 posteriors: a worker's class-1 labels are right with ``q(1)``, the others with
    ``1 - q(1)``, so ``correct = n(0) - sum_{class 0} q(1) + sum_{class 1} q(1)`` (no
    ``own_class_incidence`` to build, and half the values read)."""
    one = transposed_product(data.incidence, proba[:, 1])  # per (worker, label) pair
    counts = data.worker_label_counts
    return (counts[:, 0] - one[0::2]) + one[1::2]


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
