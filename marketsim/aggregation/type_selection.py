"""How many task types ``marketsim calibrate --task-types auto`` writes: by the errors the
twin reproduces when the file has a truth (:func:`choose_by_moments`), else by held-out
likelihood, K-fold cross-validation over tasks (:func:`select_types`), rather than by BIC.

**By simulated moments** (with a truth; indirect inference, Gourieroux, Monfort & Renault,
J. Appl. Econometrics 1993): every number of types proposes its world (the lowest BIC with
that many types), each world's "as collected" twin is simulated on replicates the written
scenario does not use, and the world chosen is the one whose twin best reproduces two
statistics of the real labels on the tasks with a truth: the **majority-vote error** (how
often most of a task's labels are wrong: the errors the crowd shares) and the **Dawid–Skene
error** (what the data's aggregator makes of them), summed absolute discrepancy in points;
more types only when they lower it by more than the replicates' noise (two standard errors
of the difference, at least :data:`MOMENT_MARGIN`). Why: both likelihood
criteria answer "which world predicts the labels best", and the twin is for another question,
"what would this crowd give a requester's aggregator". Measured
(docs/explanation/models/calibration/calibrate.md): on RTE held-out likelihood prefers two
types, whose over-fitted per-type matrices make the twin's workers too easy to tell apart
(its Dawid–Skene error 3.0 % against the real 7.25 %, majority vote 8.1 % against 10.3 %);
one type with difficulty reproduces both (7.0 %, 10.4 %). On ZenCrowd_us every world reproduces
the majority-vote error (13.4–14.0 % against 13.9 %), and only task types reproduce
Dawid–Skene's being *worse* than the vote (17.6–18.1 % against 17.75 %; one type: 12.0 %). The
Dawid–Skene error is a moment of the selection, so a chosen twin matching it is partly by
construction; no parameter is fitted to it (four candidate worlds at most, every one fitted by
likelihood), and the majority-vote error is matched too.

**By held-out likelihood** (no truth: no errors to reproduce):

Why not BIC: the mixture's types shrink each worker's rows toward the worker's pooled matrix
(a Dirichlet prior worth :data:`~marketsim.aggregation.task_types.SHRINKAGE` labels), so a
worker who gave a few labels has a second matrix that is mostly the prior and costs the data
far fewer than the ``K(K-1)`` free parameters BIC charges for it. With many sparse workers
(ZenCrowd: half the workers gave 15 labels or fewer) the nominal count is wrong and BIC keeps
one type whatever the data say. Held-out likelihood asks the question directly: does the
mixture, fitted on some tasks, predict the labels of tasks it has not seen better?

The procedure: tasks are dealt into :data:`FOLDS` folds by a seeded permutation; for each
number of types the world is fitted on the other folds and each held-out task scores its
labels' marginal log-likelihood given its class, ``w`` its truth (one-hot) or, without a
truth, the class prior (the class marginalised too): for K = 1 the one-matrix world BIC chose
among :func:`~marketsim.aggregation.confusion_fit.candidate_worlds` (the same kind of world
refitted per fold: look-alikes and difficulty marginalised as in its fit), for K = 2 ..
MAX_TYPES the mixture with shares shared by the classes,
``log sum_c w_c sum_z rho_z prod_l pi_{j_l}^(z)[c, y_l]``. The K with the highest
summed score is compared with K = 1 by the **one-standard-error rule** (Breiman et al. 1984;
Hastie, Tibshirani & Friedman, *Elements of Statistical Learning*, 7.10): more types are kept
only when their gain over one type exceeds one standard error of the gain, estimated from the
spread of the per-fold differences (``sqrt(F) * sd``) — a gain within the folds' noise is no
evidence for a more complex world. Everything is vectorised over labels, tasks and workers
(loops over folds, K and EM iterations only); the same seed deals the same folds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from marketsim.aggregation.confusion_fit import (
    ConfusionFit,
    counted_confusion,
    fit_confusion_world,
    world_log_likelihood,
)
from marketsim.aggregation.crowd_worlds import crowd_worlds
from marketsim.aggregation.task_types import MAX_TYPES, fit_task_types, mixture_log_likelihood

#: Folds of the cross-validation over tasks.
FOLDS = 5
#: Replicates each candidate world's twin is simulated for (replicate numbers after the
#: written scenario's, so the choice and the check draw different markets).
MOMENT_REPLICATES = 5
#: Points of summed discrepancy a world with more task types must gain to be chosen.
MOMENT_MARGIN = 0.5


@dataclass(frozen=True)
class HeldOut:
    """The cross-validation's outcome: summed held-out log-likelihood per number of types
    (``totals[K - 1]``; empty when not run), per fold (``per_fold`` (MAX_TYPES, FOLDS)), the
    best K's gain over one type and its standard error, the K chosen and a note."""

    totals: tuple[float, ...]
    per_fold: tuple[tuple[float, ...], ...]
    gain: float
    standard_error: float
    chosen: int
    note: str


def refit_world(fit: ConfusionFit, tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                weights: np.ndarray, n_workers: int) -> ConfusionFit:
    """The same kind of world as ``fit`` (ability or matrix, task effects) fitted to other
    labels, warm-started as :func:`~marketsim.aggregation.confusion_fit.candidate_worlds`
    does (cross-validation's refits)."""
    if fit.crowd is not None:
        effects = (fit.with_lookalike, fit.with_difficulty)
        return crowd_worlds(tasks, workers, labels, weights, n_workers,
                            effects=() if effects == (False, False) else (effects,),
                            restored=fit.spread_restored)[-1]
    start = counted_confusion(tasks, workers, labels, weights, n_workers)
    plain = fit_confusion_world(tasks, workers, labels, weights, n_workers, start,
                                coins=fit.coins, lookalike=fit.with_lookalike, difficulty=False)
    if not fit.with_difficulty:
        return plain
    return fit_confusion_world(tasks, workers, labels, weights, n_workers, plain.confusion,
                               coins=fit.coins, lookalike=fit.with_lookalike, difficulty=True,
                               look_start=plain.lookalike)


def fold_of_tasks(n_tasks: int, folds: int, seed: int) -> np.ndarray:
    """Each task's fold (0 .. folds-1): a seeded permutation dealt round-robin, so the folds
    differ in size by at most one task."""
    fold = np.empty(n_tasks, dtype=np.int64)
    fold[np.random.default_rng(seed).permutation(n_tasks)] = np.arange(n_tasks) % folds
    return fold


def select_types(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                 weights: np.ndarray, known: np.ndarray, prior: np.ndarray, n_workers: int,
                 one: ConfusionFit, seed: int = 0, folds: int = FOLDS,
                 max_types: int = MAX_TYPES,
                 advance: Callable[[], object] | None = None) -> HeldOut:
    """The number of task types by held-out likelihood (see the module's docstring):
    ``weights`` (tasks, K) each task's class as the fit uses it (truth one-hot or the
    posterior), ``known`` which tasks have a truth (the others are scored against
    ``prior``), ``one`` the one-matrix world that stands for one type; ``advance`` is called
    once per world refitted on a fold (``folds * max_types`` in all: a progress bar's)."""
    n_tasks, k = weights.shape
    if n_tasks < folds:
        return HeldOut((), (), 0.0, 0.0, 1,
                       f"{n_tasks} tasks, fewer than {folds} folds: one type kept without "
                       "cross-validation")
    fold = fold_of_tasks(n_tasks, folds, seed)
    scoring = np.where(known[:, None], weights, np.asarray(prior, dtype=np.float64)[None, :])
    scores = np.zeros((max_types, folds))
    for f in range(folds):
        train_task = fold != f
        in_train = train_task[tasks]
        t_ids, t_idx = np.unique(tasks[in_train], return_inverse=True)
        h_ids, h_idx = np.unique(tasks[~in_train], return_inverse=True)
        train = (t_idx, workers[in_train], labels[in_train], weights[t_ids])
        held = (h_idx, workers[~in_train], labels[~in_train], scoring[h_ids])
        scores[0, f] = world_log_likelihood(refit_world(one, *train, n_workers), *held)
        if advance is not None:
            advance()
        for n_types in range(2, max_types + 1):
            fit = fit_task_types(*train, n_workers, n_types, per_class=False, seed=seed)
            scores[n_types - 1, f] = mixture_log_likelihood(fit.matrices, fit.shares, *held)
            if advance is not None:
                advance()
    totals = scores.sum(axis=1)
    best = int(np.argmax(totals[1:])) + 2 if max_types > 1 else 1
    diffs = scores[best - 1] - scores[0]
    gain = float(diffs.sum())
    se = float(np.sqrt(folds) * np.std(diffs, ddof=1))
    chosen = best if gain > se else 1
    note = (f"{best} types gain {gain:.1f} over one type, standard error {se:.1f}: "
            + (f"{best} types kept" if chosen > 1 else "within one standard error, one type "
               "kept"))
    return HeldOut(tuple(float(v) for v in totals),
                   tuple(tuple(float(v) for v in row) for row in scores), gain, se, chosen,
                   note)


@dataclass(frozen=True)
class MomentChoice:
    """The choice by simulated moments: the real labels' majority-vote and Dawid–Skene
    errors, each number of types' twin's mean errors (``twin[K - 1]``, same order) and the
    replicates' standard deviation of its Dawid–Skene error, the summed discrepancy in
    points, the K chosen and a note."""

    real: tuple[float, float]
    twin: tuple[tuple[float, float], ...]
    twin_sd: tuple[float, ...]
    discrepancy: tuple[float, ...]
    replicates: int
    chosen: int
    note: str


def noise_kept(choice: MomentChoice, margin: float = MOMENT_MARGIN) -> tuple[int, ...]:
    """The numbers of task types whose twin reproduced the real errors better than the chosen
    one's by more than ``margin`` points, passed over only because the difference was within
    the replicates' noise (two standard errors): the moments have not decided between them,
    so ``calibrate``'s design curve judges their worlds too
    (:attr:`~marketsim.scenario.calibration.Calibration.eligible`), with its points and
    replicates. Why: on ZenCrowd_in (2,040 tasks) three types reproduced both errors within
    0.36 points against one type's 2.27 on 5 replicates, one type was kept on that noise, and
    its twin's majority vote is 1.3–1.8 points too good at k = 5 and the full data where the
    three-type world with shares per class is within 0.6 (Σ z² 3.7 against 23.4 on the curve:
    docs/explanation/models/calibration/other-design-curves.md). Empty where the moments
    decided (the chosen world's gap is the smallest or within the margin of it)."""
    gaps = np.asarray(choice.discrepancy)
    return tuple(int(k) + 1 for k in np.flatnonzero(gaps < gaps[choice.chosen - 1] - margin))


def choose_by_moments(real_vote: float, real_ds: float, twin_vote: np.ndarray,
                      twin_ds: np.ndarray, margin: float = MOMENT_MARGIN) -> MomentChoice:
    """The number of task types whose twin best reproduces the real majority-vote and
    Dawid–Skene errors (fractions; ``twin_vote`` and ``twin_ds`` (types, replicates), row
    ``K - 1`` for K types): the fewest types whose summed absolute discrepancy is within the
    noise of the smallest — ``margin`` points or two standard errors of the difference
    (from the replicates' spread), whichever is larger."""
    vote = np.asarray(twin_vote, dtype=np.float64)
    ds = np.asarray(twin_ds, dtype=np.float64)
    reps = ds.shape[1]
    gap = 100.0 * (np.abs(vote.mean(axis=1) - real_vote) + np.abs(ds.mean(axis=1) - real_ds))
    if reps > 1:
        se = 100.0 * np.sqrt((vote.var(axis=1, ddof=1) + ds.var(axis=1, ddof=1)) / reps)
    else:
        se = np.zeros(gap.size)
    best = int(np.argmin(gap))
    allowed = gap[best] + np.maximum(margin, 2.0 * np.sqrt(se ** 2 + se[best] ** 2))
    chosen = int(np.flatnonzero(gap <= allowed)[0]) + 1
    note = (f"{chosen} type(s): twin's errors {100 * vote[chosen - 1].mean():.2f} % (majority "
            f"vote) and {100 * ds[chosen - 1].mean():.2f} % (Dawid-Skene) against the real "
            f"{100 * real_vote:.2f} % and {100 * real_ds:.2f} %, discrepancy "
            f"{gap[chosen - 1]:.2f} points (smallest {gap[best]:.2f}, {best + 1} type(s))")
    sd = ds.std(axis=1, ddof=1) if reps > 1 else np.zeros(ds.shape[0])
    return MomentChoice((float(real_vote), float(real_ds)),
                        tuple((float(v), float(d)) for v, d in zip(vote.mean(axis=1),
                                                                   ds.mean(axis=1),
                                                                   strict=True)),
                        tuple(float(v) for v in sd), tuple(float(g) for g in gap), reps,
                        chosen, note)
