"""Identifiability diagnostic: do the labels determine the answer at all?

Every estimator calls :func:`warn_if_not_identifiable` after fitting. It only decides whether
a :class:`NotIdentifiableWarning` is issued; it never changes a result.
"""

from __future__ import annotations

import contextvars
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp

from marketsim.data.labels import LabelSet

#: Fewest same-task label pairs before the chance-agreement check speaks (below it, silence).
MIN_PAIRS_FOR_CHECK = 50

#: Most same-task worker pairs for which the pairwise chi-square (a sparse worker-by-worker
#: product, one entry per overlapping pair) is computed; above it the check relies on the
#: overall z alone and says so, so memory grows with labels, not workers squared.
MAX_PAIRS_FOR_CHI2 = 5_000_000


class NotIdentifiableWarning(UserWarning):
    """The labels do not determine the answer: workers agree no more than chance, or the fit
    puts the workers below chance (the classes may be swapped). Posteriors stay valid
    probabilities but should not be trusted."""


_CHECKS_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "marketsim_identifiability_checks", default=True
)


@contextmanager
def identifiability_checks(enabled: bool) -> Iterator[None]:
    """Switch the :class:`NotIdentifiableWarning` diagnostic on or off inside a block.

    The check costs a sparse worker-by-worker product per fit, more than an EM refit of a small
    market; simulations that refit thousands of times and would discard the warning anyway
    (the market's inference service, the random-forest policy's simulated ensembles) turn it
    off. Results do not depend on it: it only decides whether a warning is issued.
    """
    token = _CHECKS_ENABLED.set(bool(enabled))
    try:
        yield
    finally:
        _CHECKS_ENABLED.reset(token)


def _presence(data: LabelSet) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """0/1 matrices task x worker and (task, class) x worker; a repeated (task, worker) pair
    (or (task, class, worker) triple) counts once."""
    m, k = data.n_workers, data.n_classes
    ones = np.ones(data.n_labels)
    g = sp.csr_matrix((ones, (data.tasks, data.workers)), shape=(data.n_tasks, m))
    g.data = np.minimum(g.data, 1.0)
    b = sp.csr_matrix((ones, (data.tasks * k + data.labels, data.workers)),
                      shape=(data.n_tasks * k, m))
    b.data = np.minimum(b.data, 1.0)
    return g, b


def excess_agreement_z(data: LabelSet) -> tuple[float, float]:
    """``(z, same-task pairs)``: the overall excess-agreement statistic of
    :func:`pair_agreement_test` without forming worker pairs.

    Summed over worker pairs, the overlaps are ``sum_i C(d_i, 2)`` (``d_i`` distinct workers on
    task i) and the agreements ``sum_(i,l) C(n_il, 2)`` (``n_il`` distinct workers giving class l
    to task i), so ``z`` costs one pass over the labels instead of a worker-by-worker product.
    Without repeated (task, worker) pairs these are the label set's cached per-task counts,
    which the EM start computes anyway; with repeats, two 0/1 sparse matrices count them.
    """
    if data.n_labels == 0 or data.n_workers < 2:
        return 0.0, 0.0
    if data.has_repeated_pairs:
        g, b = _presence(data)
        d = np.diff(g.indptr).astype(np.float64)
        r = np.diff(b.indptr).astype(np.float64)
    else:  # every label is its own (task, worker) pair: the counts the EM start uses anyway
        d = data.task_degree.astype(np.float64)
        r = data.class_counts.astype(np.float64).ravel()
    overlap = float((d * (d - 1.0)).sum() / 2.0)
    agree = float((r * (r - 1.0)).sum() / 2.0)
    # labels per class, one column at a time (exact integers; ``sum(axis=0)`` over the short
    # rows of an (n_tasks, K) array takes numpy's slow path, 1.4 ms on 100,000 tasks)
    freq = np.array([column.sum() for column in data.class_counts.T]) / data.n_labels
    c = float((freq**2).sum())
    if overlap == 0.0 or c >= 1.0:
        return 0.0, overlap
    return (agree - c * overlap) / np.sqrt(overlap * c * (1.0 - c)), overlap


def pair_agreement_test(data: LabelSet) -> tuple[float, float, float, int]:
    """Do workers agree (or disagree) more than chance? ``(z, statistic, null mean, worker
    pairs)``: ``z`` tests the overall excess agreement (all workers better than chance), the
    chi-square ``statistic`` any pair's departure from chance (a mix of good and adversarial
    workers, whose overall agreement is at chance).

    For every pair of workers (a, b) who labelled ``O_ab`` common tasks and agreed on ``A_ab``
    of them, ``(A_ab - c O_ab)^2 / (O_ab c (1 - c))`` with ``c`` the chance agreement of two
    labels drawn from the overall label frequencies (Fleiss). Summed over pairs it is about
    chi-square with one degree of freedom per pair when workers answer at random (mean = number
    of pairs, sd = sqrt(2 x pairs)). Good workers agree beyond chance, adversarial ones
    disagree; a mix of both (whose average agreement is at chance) still shows, pair by pair.
    Sparse: the cost is that of the same-task label pairs.
    """
    m = data.n_workers
    if data.n_labels == 0 or m < 2:
        return 0.0, 0.0, 0.0, 0
    g, b = _presence(data)
    overlap = sp.triu(g.T @ g, k=1).tocoo()
    if overlap.nnz == 0:
        return 0.0, 0.0, 0.0, 0
    agree = np.asarray((b.T @ b).tocsr()[overlap.row, overlap.col]).ravel()
    freq = np.bincount(data.labels, minlength=data.n_classes) / data.n_labels
    c = float((freq**2).sum())
    if c >= 1.0:
        return 0.0, 0.0, 0.0, 0
    o = overlap.data
    var = o * c * (1.0 - c)
    z = float((agree - c * o).sum() / np.sqrt(var.sum()))
    stat = float(((agree - c * o) ** 2 / var).sum())
    return z, stat, float(o.size), int(o.size)


def warn_if_not_identifiable(
    data: LabelSet, accuracy: float | None = None, *, stacklevel: int = 3
) -> None:
    """Warn (:class:`NotIdentifiableWarning`) when the answer is not identifiable from ``data``.

    Two checks: with at least :data:`MIN_PAIRS_FOR_CHECK` same-task label pairs, some pairs of
    workers must agree or disagree beyond chance (:func:`pair_agreement_test`: overall excess
    agreement, or the pairwise chi-square, three standard deviations above random; with more
    than :data:`MAX_PAIRS_FOR_CHI2` same-task pairs only the overall z is used, and the warning
    says the chi-square was skipped); and the
    fitted, label-weighted mean worker ``accuracy`` (when the model has one) must not be below
    chance, ``1/K``. Workers who
    are all adversarial in the same way (K = 2) cannot be told from good workers with the two
    classes renamed, by any method; that case is silent (docs/robustness.md).
    """
    if not _CHECKS_ENABLED.get():
        return
    k = data.n_classes
    # The overall z is cheap; the pairwise chi-square (a worker-by-worker product) is only
    # needed when z alone does not show agreement beyond chance.
    fast_z, _ = excess_agreement_z(data)
    same_task_pairs = float((data.task_degree * (data.task_degree - 1)).sum() / 2)
    if same_task_pairs > MAX_PAIRS_FOR_CHI2 and fast_z <= 3.0:
        warnings.warn(
            f"no clear sign that workers agree beyond chance (excess agreement z = "
            f"{fast_z:.1f}); the pairwise chi-square was skipped ({same_task_pairs:.3g} "
            f"same-task pairs, over the {MAX_PAIRS_FOR_CHI2:,} limit), so disagreeing "
            "workers may go unseen: the labels may not identify the classes",
            NotIdentifiableWarning,
            stacklevel=stacklevel,
        )
        return
    if same_task_pairs >= MIN_PAIRS_FOR_CHECK and fast_z <= 3.0:
        z, stat, null, pairs = pair_agreement_test(data)
    else:
        z, stat, null, pairs = fast_z, 0.0, 0.0, 0
    if same_task_pairs >= MIN_PAIRS_FOR_CHECK and pairs:
        if z <= 3.0 and stat <= null + 3.0 * np.sqrt(2.0 * null):
            warnings.warn(
                f"no clear sign that workers agree or disagree beyond chance (excess "
                f"agreement z = {z:.1f}; pairwise chi-square {stat:.1f} over {pairs} worker "
                f"pairs, {null:.0f} expected at random): the labels may not identify the "
                "classes; do not trust the posteriors",
                NotIdentifiableWarning,
                stacklevel=stacklevel,
            )
            return
    if accuracy is not None and k >= 2 and np.isfinite(accuracy) and accuracy < 1.0 / k:
        warnings.warn(
            f"estimated mean worker accuracy {accuracy:.3f} is below chance (1/{k}): the "
            "model is not identifiable here and the classes may be swapped",
            NotIdentifiableWarning,
            stacklevel=stacklevel,
        )
