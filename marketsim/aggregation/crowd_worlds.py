"""The crowd-shrunk worlds ``marketsim calibrate`` fits (Paun et al. 2018): every worker's
confusion matrix drawn around one crowd-level matrix (:mod:`~marketsim.aggregation.crowd_confusion`,
its Dirichlet prior by empirical Bayes), each worker's matrix its posterior mean, then that
world with task effects (look-alikes, difficulty: :mod:`~marketsim.aggregation.confusion_fit`)
and with the crowd's spread restored.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from marketsim.aggregation.confusion_fit import (
    ConfusionFit,
    fit_confusion_world,
    world_log_likelihood,
)
from marketsim.aggregation.crowd_confusion import CrowdPrior, answer_counts, fit_crowd_prior
from marketsim.aggregation.mapping import Mapper, mapped


def crowd_worlds(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                 weights: np.ndarray, n_workers: int, *,
                 effects: tuple[tuple[bool, bool], ...] = ((True, False), (True, True)),
                 restored: bool = True, mapper: Mapper | None = None
                 ) -> tuple[ConfusionFit, ...]:
    """The crowd-shrunk worlds: the crowd matrix and concentration by empirical Bayes, each
    worker's matrix its posterior mean (closed form), then that world with each pair of
    task effects (look-alikes, difficulty) in ``effects``, fitted from it (by default
    look-alikes, then both: the look-alike world is the one whose twin followed Dog's real
    design curve; the fits are independent, made by ``mapper``:
    :mod:`~marketsim.aggregation.mapping`), then the look-alike world with the crowd's spread
    restored (:func:`spread_world`; with ``restored`` and look-alikes in ``effects``)."""
    n, k = weights.shape
    counts = answer_counts(tasks, workers, labels, weights, n_workers)
    prior = fit_crowd_prior(counts)
    shrunk = prior.shrunk(counts)
    flat = ConfusionFit(shrunk, np.eye(k), 0.0, 0.0, 0, 0.0, "")
    plain_loglik = world_log_likelihood(flat, tasks, workers, labels, weights)
    log_n = np.log(max(tasks.size, 1))
    crowd_params = k * (k - 1) + 1
    fits = [ConfusionFit(shrunk, np.eye(k), 0.0, plain_loglik, crowd_params,
                         float(-2.0 * prior.log_marginal + crowd_params * log_n),
                         "crowd-shrunk confusion", crowd=prior)]
    fitted = mapped(mapper, _crowd_effect_world, [
        (tasks, workers, labels, weights, n_workers, shrunk, prior, lookalike, difficulty)
        for lookalike, difficulty in effects])
    for fit, (lookalike, difficulty) in zip(fitted, effects, strict=True):
        params = crowd_params + (k * (k - 1) if lookalike else 0) + int(difficulty)
        marginal = prior.log_marginal + fit.log_likelihood - plain_loglik
        fits.append(replace(fit, name=fit.name.replace("per-worker", "crowd-shrunk"),
                            n_params=params, bic=float(-2.0 * marginal + params * log_n),
                            crowd=prior))
    look = [f for f in fits if f.with_lookalike and not f.with_difficulty]
    if restored and look:
        fits.append(spread_world(look[0], counts, tasks, workers, labels, weights))
    return tuple(fits)


def _crowd_effect_world(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                        weights: np.ndarray, n_workers: int, shrunk: np.ndarray,
                        prior: CrowdPrior, lookalike: bool, difficulty: bool) -> ConfusionFit:
    """One crowd-shrunk world with its task effects, fitted from the shrunk matrices (a
    top-level function: a mapper's worker process runs it)."""
    return fit_confusion_world(tasks, workers, labels, weights, n_workers, shrunk,
                               coins=False, lookalike=lookalike, difficulty=difficulty,
                               crowd=prior)


def spread_world(fit: ConfusionFit, counts: np.ndarray, tasks: np.ndarray,
                 workers: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> ConfusionFit:
    """The crowd-shrunk world ``fit`` with the crowd's spread restored in its worker matrices
    (:meth:`~marketsim.aggregation.crowd_confusion.CrowdPrior.spread` of the answer
    ``counts``: the deconvolved spread, not the posterior means' narrower one), its task
    effects kept; the log-likelihood of the labels under it, and BIC with ``fit``'s free
    numbers (the scaling is fixed by the fit: no parameter more). Listed with its BIC, chosen
    on the design curve like every crowd-shrunk world."""
    assert fit.crowd is not None
    world = replace(fit, confusion=fit.crowd.spread(fit.confusion, counts),
                    spread_restored=True, name=fit.name + ", the crowd's spread restored")
    loglik = world_log_likelihood(world, tasks, workers, labels, weights)
    bic = fit.bic - 2.0 * (loglik - fit.log_likelihood)
    return replace(world, log_likelihood=loglik, bic=float(bic))
