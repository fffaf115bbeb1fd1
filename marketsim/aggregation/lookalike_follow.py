"""Look-alike tasks whose errors are partly shared, partly each worker's own: each label of a
task that looks like class ``s`` follows ``s`` with probability ``follow`` (the worker answers
from their row ``s``), else the worker answers from their row of the task's true class
(``[workers.confusion] lookalike_follow``: :mod:`~marketsim.workers.task_effects`).

Why: in a look-alike world (:mod:`~marketsim.aggregation.confusion_fit`) every label of a
look-alike task answers from the same wrong row, so a task's errors are all shared or none
are. The worlds ``calibrate`` chose for the multi-class files of issue #40 (the ambiguous share
fitted to the majority's profile, the per-label accuracy restored:
:mod:`~marketsim.aggregation.accuracy_restored`) have the file's per-label accuracy and its
share of tasks the majority gets wrong, yet their workers agree far more than the real ones:
Face's twin 79.2 % of the label pairs on a task against 64.6 % (its curve 1–1.6 points too
pessimistic at 5 labels and full), CF_amt's likewise. Real item effects are partial: a task
leads some of its annotators, not all, to the same wrong class. The model is a per-label
mixture of two known structures: the task's perceived class, shared by its annotators (Tian &
Zhu 2015, "Uncovering the latent structures of crowd labeling": latent item classes), and each
annotator's own confusion matrix of the true class (Dawid & Skene 1979); Whitehill et al.
2009's GLAD shares a task's errors through its difficulty instead, undirected.

The world: a task of class ``c`` looks like ``s ~ L'[c]`` and each label follows ``s`` with
probability ``f``, so a label of a class-``c`` task answers from the rows ``(f L' + (1 - f) I)
[c] @ M``. With ``L' = I + (L - I) / f`` that is ``L @ M``, the look-alike world's own labels:
the per-label accuracy (restored) is kept, and ``f`` moves only how much of the look-alike mass
a task's labels share — ``f = 1`` the fitted world, a smaller ``f`` more tasks that look like
another class, each leading fewer of its labels astray. ``L'`` stays a stochastic matrix for
``f >= max_c (1 - L[c, c])`` (:func:`min_follow`).

The fit, two moments of the file: the share of agreeing label pairs on a task
(``crowd_stats``' agreement rate, which needs no truth) and the share of tasks the majority
gets wrong (the ambiguous share's moment, :mod:`~marketsim.aggregation.ambiguity_share`). On
the file's own (task, worker) pairs the world's expected agreement is exact
(:func:`expected_agreement`: sums of each task's workers' rows and of their products, one
sparse product each; no draws, no loop over tasks or workers) and, the labels' look-alike mass
held, linear in ``f``, growing with it (a task's labels more often from one row), so ``f`` is
the root of the world's agreement minus the file's on ``[min_follow, 1]`` (Brent's method;
where even the smallest ``f`` agrees more, that ``f``). Sharing less lowers the share of wrong
majorities too, so the labels' look-alike mass is scaled (the matrices restored again, ``f``
refitted at each scale: :func:`follow_world`) until the world, measured as the ambiguous share
is, has the file's share. A world that already agrees no more than the file gives no candidate
(sharing less cannot help it). The world is a candidate judged on the design curve like the
others (one parameter more in its BIC: ``f``; the scale replaces the ambiguous share's).
Measured (issue #40, seventh session): Face writes it (f = 0.80, pairs agreeing 64.2 % against
64.6 %; both methods within 1.5 points at 3, 5 and full labels for the first time), CF_amt
(f = 0.91) and RTE (f = 0.48) too: docs/explanation/models/calibration/other-design-curves.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq
from scipy.special import logsumexp, softmax

from marketsim.aggregation.accuracy_restored import (
    accuracy_worlds,
    label_table,
    restored_matrices,
    restored_share_worlds,
)
from marketsim.aggregation.ambiguity_share import SCALES, ShareOf, scaled_lookalike
from marketsim.aggregation.confusion_fit import Z_GRID, ConfusionFit
from marketsim.aggregation.label_matrices import answer_matrix
from marketsim.aggregation.mapping import Mapper
from marketsim.data.labels import LabelSet

#: What the name of a world fitted here ends with.
SUFFIX = ", labels following the look-alike by the agreement rate"
#: How close to the file's agreement rate the root is taken (Brent's ``xtol`` on ``f``): far
#: below the agreement's own noise (a file of 5,000 labels: about 0.005).
TOLERANCE = 1e-4
#: The scales of the look-alike mass tried below 1 (steps of 1/8, the finest of the ambiguous
#: share's :data:`~marketsim.aggregation.ambiguity_share.SCALES`, which are tried above 1;
#: down to a quarter of the mass, far below the measured fits: Face 0.84), each world's share
#: measured once (the search stops at the first crossing: two or three measures on Face).
DOWN = (0.875, 0.75, 0.625, 0.5, 0.375, 0.25)
UP = SCALES[1:]
#: The smallest probability of a label in the log-likelihood (a label no row allows).
FLOOR = 1e-300


def pair_agreement(data: LabelSet) -> float:
    """The share of agreeing pairs among the ordered pairs of labels on the same task (nan
    without two labels on any task)."""
    counts = np.zeros((data.n_tasks, max(data.n_classes, int(data.labels.max()) + 1)))
    np.add.at(counts, (data.tasks, data.labels), 1.0)
    per_task = counts.sum(axis=1)
    pairs = float((per_task * (per_task - 1.0)).sum())
    return float((counts * (counts - 1.0)).sum() / pairs) if pairs else float("nan")


def min_follow(lookalike: np.ndarray) -> float:
    """The smallest ``f`` for which ``I + (L - I) / f`` is a stochastic matrix: the largest
    look-alike mass of a class."""
    return float(np.max(1.0 - np.diag(lookalike)))


def widened(lookalike: np.ndarray, follow: float) -> np.ndarray:
    """``I + (L - I) / follow``, clipped at 0 (rounding) and each row renormalised."""
    k = lookalike.shape[0]
    look = np.clip(np.eye(k) + (lookalike - np.eye(k)) / follow, 0.0, None)
    return np.asarray(look / look.sum(axis=1, keepdims=True))


def _task_sums(data: LabelSet, per_worker: np.ndarray) -> np.ndarray:
    """``per_worker`` (workers, ...) summed over each task's labels (tasks, ...)."""
    by_task = sp.csr_matrix((np.ones(data.n_labels), (data.tasks, data.workers)),
                            shape=(data.n_tasks, per_worker.shape[0]))
    flat = by_task @ per_worker.reshape(per_worker.shape[0], -1)
    return np.asarray(flat).reshape(data.n_tasks, *per_worker.shape[1:])


def expected_agreement(world: ConfusionFit, lookalike: np.ndarray, follow: float,
                       data: LabelSet, weights: np.ndarray) -> float:
    """The share of agreeing ordered label pairs on a task expected of ``world`` with
    look-alike matrix ``lookalike`` followed with probability ``follow``, on ``data``'s pairs,
    each task's class distributed as ``weights`` (tasks, K). Two labels of task ``i`` (class
    ``c``, looking like ``s``) from workers ``j != j'`` agree with probability ``r_j . r_j'``,
    ``r_j = f M_j[s] + (1 - f) M_j[c]``; summed over the task's pairs that is ``|sum r|^2 -
    sum |r|^2 = f^2 H[s, s] + 2 f (1 - f) H[s, c] + (1 - f)^2 H[c, c]`` with ``H = S S^T - G``,
    ``S`` the sum of the task's workers' matrices and ``G`` of their ``M_j M_j^T``."""
    m = world.confusion
    s = _task_sums(data, m)  # (tasks, K, K)
    h = np.einsum("isl,icl->isc", s, s) - _task_sums(data, np.einsum("jsl,jcl->jsc", m, m))
    diag = np.einsum("iss->is", h)
    f = follow
    agree = (f * f * diag[:, None, :] + 2.0 * f * (1.0 - f) * np.transpose(h, (0, 2, 1))
             + (1.0 - f) ** 2 * diag[:, :, None])  # (tasks, c, s)
    expected = np.einsum("ic,cs,ics->", weights, lookalike, agree)
    per_task = np.bincount(data.tasks, minlength=data.n_tasks).astype(np.float64)
    pairs = float((per_task * (per_task - 1.0)).sum())
    return float(expected / pairs) if pairs else float("nan")


def follow_log_likelihood(world: ConfusionFit, data: LabelSet, weights: np.ndarray) -> float:
    """The marginal log-likelihood of ``data`` under a world whose labels follow its
    look-alike with probability ``world.follow``: per task ``log sum_{c, s} w_ic L[c, s]
    E_beta prod_l (f T_j[s, y] + (1 - f) T_j[c, y])``, ``T_j`` worker ``j``'s matrix tempered
    by the task's inverse difficulty ``beta`` (``M_j`` itself without difficulty; with it, the
    mean over :data:`~marketsim.aggregation.confusion_fit.Z_GRID`'s quantiles of ``log beta
    ~ N(0, sigma^2)``, as :func:`~marketsim.aggregation.confusion_fit.world_log_likelihood`
    takes it); each product one sparse product of the task's (worker, answer) counts with a
    (worker, answer) × (c, s) table, one per quantile."""
    m, k = world.confusion.shape[0], weights.shape[1]
    f = world.follow
    answers = answer_matrix(data.tasks, data.workers, data.labels, data.n_tasks, m, k)
    with np.errstate(divide="ignore"):
        log_prior = np.log(weights)[:, :, None] + np.log(world.lookalike)[None]
    betas = np.exp(world.sigma * Z_GRID) if world.sigma > 0 else np.ones(1)
    per_beta = np.empty((betas.size, data.n_tasks))
    for q, beta in enumerate(betas):  # the quantiles of difficulty (16), not labels or tasks
        tempered = softmax(beta * np.log(np.maximum(world.confusion, FLOOR)), axis=2)
        rows = f * tempered[:, None, :, :] + (1.0 - f) * tempered[:, :, None, :]
        table = np.log(np.maximum(rows, FLOOR)).transpose(0, 3, 1, 2).reshape(m * k, k * k)
        per_task = np.asarray(answers @ table).reshape(data.n_tasks, k, k)
        per_beta[q] = logsumexp(per_task + log_prior, axis=(1, 2))
    return float((logsumexp(per_beta, axis=0) - np.log(betas.size)).sum())


def following(marginal: ConfusionFit, follow: float) -> ConfusionFit:
    """The world whose labels follow a look-alike with probability ``follow`` and have the
    labels of ``marginal`` (every label following its ``lookalike``): ``L' = I + (L - I) /
    follow``."""
    return replace(marginal, lookalike=widened(marginal.lookalike, follow), follow=follow)


def fitted_follow(marginal: ConfusionFit, real: float, data: LabelSet,
                  weights: np.ndarray) -> float | None:
    """The ``f`` at which :func:`following` ``marginal`` has the ``real`` agreement rate on the
    file's pairs (the smallest ``f`` where even it agrees more); None where ``marginal``
    agrees no more than the file or its look-alike mass leaves no room (a class that always
    looks like another)."""
    look = marginal.lookalike
    low = min_follow(look)
    if not np.isfinite(real) or low >= 1.0 - TOLERANCE:
        return None

    def gap(f: float) -> float:
        return expected_agreement(marginal, widened(look, f), f, data, weights) - real

    if gap(1.0) <= 0.0:
        return None
    return low if gap(low) >= 0.0 else float(brentq(gap, low, 1.0, xtol=TOLERANCE))


def rescaled(marginal: ConfusionFit, scale: float, target: np.ndarray,
             weight: np.ndarray) -> ConfusionFit | None:
    """``marginal`` with its look-alike mass times ``scale`` and its matrices restored to the
    file's table ``target`` (:func:`~marketsim.aggregation.accuracy_restored.
    restored_matrices`; ``weight``: the workers' shares of the labels); None where a row's
    mass would exceed 1."""
    look = scaled_lookalike(marginal.lookalike, scale)
    if look is None:
        return None
    moved = replace(marginal, lookalike=look)
    return replace(moved, confusion=restored_matrices(moved, target, weight))


def share_scale(world_at: Callable[[float], ConfusionFit | None], real: float,
                share_of: ShareOf) -> float:
    """The scale of the look-alike mass at which the world ``world_at(scale)`` has the
    ``real`` share of majority-wrong tasks (``share_of``): 1, then each step of :data:`DOWN`
    or :data:`UP` (whichever side the share at 1 says) until the share crosses ``real``,
    interpolated linearly between the last two; the last scale tried where it never crosses
    (or the next has no world)."""
    first = world_at(1.0)
    assert first is not None  # scale 1 is the world fitted
    last = (1.0, share_of(first))
    for scale in DOWN if last[1] > real else UP:
        world = world_at(scale)
        if world is None:
            break
        share = share_of(world)
        if (share - real) * (last[1] - real) <= 0.0:  # crossed: interpolate
            if share == last[1]:
                return scale
            return float(last[0] + (real - last[1]) / (share - last[1]) * (scale - last[0]))
        last = (scale, share)
    return last[0]


def follow_world(fit: ConfusionFit, agreement: float, majority_wrong: float,
                 share_of: ShareOf, data: LabelSet, weights: np.ndarray) -> ConfusionFit | None:
    """``fit`` (a restored look-alike world without difficulty or pulls, every label
    following) with its look-alike mass scaled and its matrices restored, each scale's ``f``
    fitted to the file's ``agreement`` rate, at the scale whose world has the file's share of
    ``majority_wrong`` tasks (module docstring); None where ``fit`` agrees no more than the
    file (or has no room to share less)."""
    target = label_table(data, weights)
    weight = np.bincount(data.workers, minlength=fit.confusion.shape[0]) / max(data.n_labels, 1)

    def world_at(scale: float) -> ConfusionFit | None:
        marginal = rescaled(fit, scale, target, weight)
        if marginal is None:
            return None
        follow = fitted_follow(marginal, agreement, data, weights)
        return marginal if follow is None else following(marginal, follow)

    if fitted_follow(fit, agreement, data, weights) is None:
        return None
    best = world_at(share_scale(world_at, majority_wrong, share_of))
    if best is None or best.follow == 1.0:
        return None
    world = replace(best, on_curve=True, name=fit.name + SUFFIX)
    loglik = follow_log_likelihood(world, data, weights)
    bic = fit.bic - 2.0 * (loglik - fit.log_likelihood) + np.log(max(data.n_labels, 1))
    return replace(world, log_likelihood=loglik, n_params=fit.n_params + 1, bic=float(bic))


def and_partly_shared(fits: tuple[ConfusionFit, ...], data: LabelSet, weights: np.ndarray,
                      share: tuple[tuple[ConfusionFit, ...], float, ShareOf],
                      dilution: float = 1.0, mapper: Mapper | None = None
                      ) -> tuple[ConfusionFit, ...]:
    """``calibrate``'s crowd candidates: ``fits``, then :func:`~marketsim.aggregation.
    accuracy_restored.accuracy_worlds` of them and :func:`~marketsim.aggregation.
    accuracy_restored.restored_share_worlds` of ``share``'s bases (its real majority-wrong
    share and how a world's is measured), then each of the latter without difficulty or pulls
    with its labels following the look-alike by the file's agreement rate
    (:func:`follow_world`). ``dilution``: :func:`~marketsim.aggregation.ambiguity_share.
    tried_scales`'; ``mapper``: the restored share's searches'."""
    bases, real, share_of = share
    restored = restored_share_worlds(bases, real, share_of, data, weights, dilution, mapper)
    agreement = pair_agreement(data)
    partly = [follow_world(w, agreement, real, share_of, data, weights) for w in restored
              if w.sigma == 0 and w.pull is None]
    return (*fits, *accuracy_worlds(fits, data, weights), *restored,
            *(w for w in partly if w is not None))
