"""The per-label accuracy restored in a look-alike world: its workers' matrices moved so that
the world's labels, class by class, are as often right (and wrong the same way) as the file's.

Why: in a look-alike world (:mod:`~marketsim.aggregation.confusion_fit`) a task of class ``c``
looks like ``s ~ lookalike[c]`` and a worker answers from their matrix's row ``s``, so the
world's labels of class-``c`` tasks follow ``(lookalike @ M)[c]``, with ``M`` the workers'
matrices averaged by their share of the labels. The likelihood does not tie that product to
the file's own table of labels against classes: the worker matrices keep much of the errors the
look-alikes also explain, and the ambiguous share (:mod:`~marketsim.aggregation.
ambiguity_share`) adds look-alike mass on top. Measured (issue #40, sixth session), the worlds
``calibrate`` chose give labels 5 points less accurate than the file's: Face (4 classes)
53.2 % against 58.6 % (per class 72/82/33/26 % against 77/84/40/34 %), CF_amt (5 classes)
65.5 % against 70.5 % — a twin that is too pessimistic at one label per task and, its
labels' errors independent enough, too pessimistic at 3 (Face +5.3, CF_amt +5.6 points).

The restoration: ``C`` the file's table (row ``c``: the labels of class-``c`` tasks, each task's
class distributed as the reference ``weights``, rows summing to 1), the world's
``lookalike @ M`` matched to it by one shift ``D`` of every worker's matrix, the solution of
``lookalike @ D = C - lookalike @ M`` (least squares; its rows sum to 0). Each worker keeps
their distance from the crowd (the spread the fit found); the probabilities are clipped at
:data:`MIN_PROBABILITY` and each row renormalised. The look-alikes (which tasks share their
errors) are left as fitted. Task difficulty, where the world has it, lowers the accuracy a
little more (its ``beta`` spreads each label toward a guess); the restoration does not undo
that. Restoring alone makes the labels' errors less shared than the real ones (the accuracy
comes back, the look-alikes do not grow: Face's restored worlds were 1.2 to 3.3 spreads too
good as collected), so the ambiguous share is fitted *on the restored world*
(:func:`restored_share_worlds`): the look-alike mass scaled until the world, restored at that
scale, has the file's share of tasks the majority gets wrong. Each world is a candidate judged
on the design curve like the others.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.special import log_softmax

from marketsim.aggregation.ambiguity_share import (
    ShareOf,
    ambiguity_share,
    with_ambiguity_share,
)
from marketsim.aggregation.confusion_fit import Z_GRID, ConfusionFit, world_log_likelihood
from marketsim.aggregation.mapping import Mapper, mapped
from marketsim.data.labels import LabelSet

#: The smallest probability a restored matrix keeps: no answer impossible for a worker (the
#: simulator and Dawid–Skene's log-likelihood take logs of it); 1e-4 is below any rate a file
#: of up to 10,000 labels per worker could show.
MIN_PROBABILITY = 1e-4
#: What the name of a world restored here ends with.
SUFFIX = ", per-label accuracy restored"
#: Rounds of :func:`restored_with_difficulty`: each moves the matrices by the gap left
#: between the tempered world's table and the file's; measured on CF (5 classes, sigma 0.25 to
#: 1.5) the gap in accuracy falls under 0.01 by the fourth round and stays (clipping at
#: :data:`MIN_PROBABILITY` bounds what a round can still move).
DIFFICULTY_ROUNDS = 8


def label_table(data: LabelSet, weights: np.ndarray) -> np.ndarray:
    """The file's labels against the classes, (K, K): row ``c`` the distribution of the labels
    of class-``c`` tasks, each task's class distributed as ``weights`` (tasks, K); a class no
    task has gets the identity row."""
    k = weights.shape[1]
    table = np.zeros((k, k))
    np.add.at(table.T, data.labels, weights[data.tasks])
    totals = table.sum(axis=1, keepdims=True)
    return np.where(totals > 0, table / np.maximum(totals, 1e-300), np.eye(k))


def world_table(fit: ConfusionFit, share: np.ndarray) -> np.ndarray:
    """The world's labels against the classes, (K, K), without task difficulty:
    ``lookalike @ M``, ``M`` the workers' matrices weighted by ``share`` (their share of the
    labels)."""
    return np.asarray(fit.lookalike @ np.einsum("j,jsc->sc", share, fit.confusion))


def tempered_table(fit: ConfusionFit, share: np.ndarray) -> np.ndarray:
    """The world's labels against the classes, (K, K), with its task difficulty: each worker's
    rows tempered by the ``beta`` of every quantile the likelihood integrates on
    (:data:`~marketsim.aggregation.confusion_fit.Z_GRID`) and averaged, weighted by ``share``;
    :func:`world_table` where the world has none."""
    if fit.sigma <= 0.0:
        return world_table(fit, share)
    beta = np.exp(fit.sigma * Z_GRID)
    log_rows = np.log(np.clip(fit.confusion, 1e-300, None))[:, :, None, :]
    rows = np.exp(log_softmax(beta[None, None, :, None] * log_rows, axis=3)).mean(axis=2)
    return np.asarray(fit.lookalike @ np.einsum("j,jsc->sc", share, rows))


def restored_with_difficulty(fit: ConfusionFit, sigma: float, target: np.ndarray,
                             share: np.ndarray) -> ConfusionFit:
    """``fit`` with task difficulty ``sigma`` and its matrices shifted so that its labels,
    *tempered by the difficulty*, follow ``target`` (:func:`tempered_table`): tempering moves
    each label toward a guess, so a restored world given a difficulty loses accuracy (CF, 5
    classes: 77.1 % of its labels right at sigma 0, 72.9 % at 0.75), and the design curve would
    size the difficulty against that loss rather than against how the errors gather on tasks.
    :data:`DIFFICULTY_ROUNDS` rounds of :func:`restored_matrices`, each aiming the untempered
    table at ``target`` plus the gap the tempering leaves."""
    world = replace(fit, sigma=sigma)
    for _ in range(DIFFICULTY_ROUNDS):
        aim = target + world_table(world, share) - tempered_table(world, share)
        world = replace(world, confusion=restored_matrices(world, aim, share))
    return world


def restored_matrices(fit: ConfusionFit, target: np.ndarray, share: np.ndarray) -> np.ndarray:
    """``fit``'s worker matrices shifted so that :func:`world_table` is ``target`` (module
    docstring), clipped at :data:`MIN_PROBABILITY` and renormalised."""
    gap = target - world_table(fit, share)
    shift = np.linalg.lstsq(fit.lookalike, gap, rcond=None)[0]
    moved = np.clip(fit.confusion + shift[None, :, :], MIN_PROBABILITY, None)
    return np.asarray(moved / moved.sum(axis=2, keepdims=True))


def with_accuracy_restored(fit: ConfusionFit, data: LabelSet,
                           weights: np.ndarray) -> ConfusionFit | None:
    """``fit`` with its per-label accuracy restored (module docstring), its log-likelihood of
    ``data`` and BIC moved by the change and ``K (K - 1)`` parameters more (the table
    matched); None where ``fit`` has no look-alikes (its matrices are the table already)."""
    if not fit.with_lookalike:
        return None
    share = np.bincount(data.workers, minlength=fit.confusion.shape[0]) / max(data.n_labels, 1)
    k = weights.shape[1]
    world = replace(fit, confusion=restored_matrices(fit, label_table(data, weights), share),
                    on_curve=True, name=fit.name + SUFFIX)
    loglik = world_log_likelihood(world, data.tasks, data.workers, data.labels, weights)
    extra = k * (k - 1)
    bic = fit.bic - 2.0 * (loglik - fit.log_likelihood) + extra * np.log(max(data.n_labels, 1))
    return replace(world, log_likelihood=loglik, n_params=fit.n_params + extra, bic=float(bic))


def accuracy_worlds(bases: tuple[ConfusionFit, ...], data: LabelSet,
                    weights: np.ndarray) -> tuple[ConfusionFit, ...]:
    """Each look-alike world of ``bases`` fitted by likelihood with its per-label accuracy
    restored: not those sized on the design curve or the majority's profile (the ambiguous
    share: :func:`restored_share_worlds` fits it with the restoration), nor the worlds with
    task difficulty (the restoration ignores it, and their log-likelihood holds labels x K^2
    x quantiles numbers: 1127 against 374 MiB peak on a 200,000-label file), nor those with
    pulls."""
    worlds = [with_accuracy_restored(fit, data, weights) for fit in bases
              if fit.pull is None and not fit.on_curve and not fit.with_difficulty]
    return tuple(w for w in worlds if w is not None)


def restorable_per_worker(fits: tuple[ConfusionFit, ...]) -> tuple[ConfusionFit, ...]:
    """The worlds fitted by likelihood with one matrix per worker whose ambiguous share and
    per-label accuracy :func:`restored_share_worlds` also fits, beside the crowd-shrunk ones:
    those with look-alikes and without task difficulty (the restoration ignores it). Not the
    one-ability worlds: the shift moves every matrix off its one-ability form, so the world
    restored is a per-worker one anyway. Why: shrinking toward the crowd narrows the workers'
    spread, and Dawid–Skene gains from extra labels as much as it can tell workers apart —
    RTE's crowd-shrunk restored world followed the curve to 3 labels and then gained too
    little (8.4 % as collected against 7.25), where the per-worker one follows it throughout
    (issue #40's seventh session: Σ z² 13.6 against 52.0)."""
    return tuple(f for f in fits
                 if f.with_lookalike and not f.coins and not f.with_difficulty and f.pull is None
                 and f.crowd is None)


def restoring(share_of: ShareOf, data: LabelSet, weights: np.ndarray) -> ShareOf:
    """``share_of`` measured on each world with its per-label accuracy restored."""
    target = label_table(data, weights)

    def share(fit: ConfusionFit) -> float:
        n_workers = fit.confusion.shape[0]
        weight = np.bincount(data.workers, minlength=n_workers) / max(data.n_labels, 1)
        return share_of(replace(fit, confusion=restored_matrices(fit, target, weight)))
    return share


def restored_share_worlds(bases: tuple[ConfusionFit, ...], real: float, share_of: ShareOf,
                          data: LabelSet, weights: np.ndarray, dilution: float = 1.0,
                          mapper: Mapper | None = None) -> tuple[ConfusionFit, ...]:
    """Each look-alike world of ``bases`` with its ambiguous share and its per-label accuracy
    fitted together: the look-alike mass scaled until the world, *restored* at that scale, has
    the ``real`` share of majority-wrong tasks (:func:`~marketsim.aggregation.ambiguity_share.
    ambiguity_share` measuring with :func:`restoring`), then restored. Restoring alone makes
    the labels' errors less shared (the accuracy comes back, the look-alikes do not grow), so
    the share is fitted on the restored world, not before it (Face, issue #40: the world
    restored after its share was fitted was 2 to 6 points too good as collected). ``dilution``:
    :func:`~marketsim.aggregation.ambiguity_share.tried_scales`'; each base is one call of
    ``mapper``."""
    searched = [fit for fit in bases if fit.with_lookalike and fit.pull is None]
    worlds = mapped(mapper, restored_share_world, [(fit, real, share_of, data, weights, dilution)
                                                   for fit in searched])
    return tuple(w for w in worlds if w is not None)


def restored_share_world(fit: ConfusionFit, real: float, share_of: ShareOf, data: LabelSet,
                         weights: np.ndarray, dilution: float = 1.0) -> ConfusionFit | None:
    """One base of :func:`restored_share_worlds`: its share fitted restored, then restored
    (None where the scale is 1)."""
    estimate = ambiguity_share(fit, real, restoring(share_of, data, weights), dilution)
    scaled = with_ambiguity_share(fit, estimate, data, weights)
    return None if scaled is None else with_accuracy_restored(scaled, data, weights)
