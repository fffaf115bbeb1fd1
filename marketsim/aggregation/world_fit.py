"""Fitting a crowd's world to its labels (``marketsim calibrate``): GLAD's generative model
with a log-normal difficulty distribution, and the statistics a twin is checked against.

The model (Whitehill et al. 2009, with the tasks' difficulty a random effect): label ``l`` of
worker ``j`` on task ``i`` is right with probability ``sigmoid(alpha_j * beta_i)``, ``log
beta_i ~ N(0, sigma^2)``. Given how likely each label is to be right, ``y_l`` (1/0 from a truth
file, else the Dawid–Skene posterior of the label's class), the marginal log-likelihood

    L(alpha, sigma) = sum_i log E_beta[ prod_{l in i} p_l(beta)^y_l (1 - p_l(beta))^(1 - y_l) ]

is computed on ``QUANTILES`` equally likely values of ``beta`` (mid-quantiles of the
log-normal) and maximised over every ``alpha_j`` and ``sigma`` at once (L-BFGS with the exact
gradient, all arrays (labels × quantiles): no loop over labels, tasks or workers). A N(0, 3²)
prior on each ``alpha_j`` keeps a worker who is always right finite. ``sigma = 0`` is the same
crowd on equally hard tasks (one coin per worker), fitted the same way, so the two are nested
and their BIC can be compared.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import expit, log_expit, logsumexp, ndtri

#: Equally likely values of ``beta`` the expectation over the difficulty is taken on.
QUANTILES = 64
#: Standard deviation of the N(0, s²) prior on each ``alpha_j``.
ALPHA_PRIOR_SD = 3.0
#: Largest ``sigma`` the fit considers.
MAX_SIGMA = 5.0


@dataclass(frozen=True)
class WorldFit:
    """One fitted crowd: ``alpha`` per worker, ``sigma`` (0 without difficulty), the marginal
    log-likelihood of the correctness of the labels (without the prior), its parameter count
    and BIC."""

    alpha: np.ndarray
    sigma: float
    log_likelihood: float
    n_params: int
    bic: float


def _objective(x: np.ndarray, tasks: np.ndarray, workers: np.ndarray, y: np.ndarray,
               by_task: sp.csr_matrix, z: np.ndarray, free_sigma: bool
               ) -> tuple[float, np.ndarray, float]:
    """Negative log posterior, its gradient, and the log-likelihood alone."""
    m = x.size - 1 if free_sigma else x.size
    alpha = x[:m]
    sigma = float(np.exp(x[m])) if free_sigma else 0.0
    beta = np.exp(sigma * z)  # (Q,)
    a = alpha[workers]
    logits = a[:, None] * beta[None, :]  # (labels, Q)
    log_p = y[:, None] * log_expit(logits) + (1.0 - y[:, None]) * log_expit(-logits)
    per_task = by_task @ log_p - np.log(z.size)  # (tasks, Q)
    total = logsumexp(per_task, axis=1)
    resp = np.exp(per_task - total[:, None])[tasks]  # posterior of beta, per label
    residual = resp * (y[:, None] - expit(logits))
    grad_alpha = np.bincount(workers, (residual * beta).sum(axis=1), minlength=m)
    var = ALPHA_PRIOR_SD ** 2
    loglik = float(total.sum())
    value = -loglik + 0.5 * float(alpha @ alpha) / var
    grad = -grad_alpha + alpha / var
    if free_sigma:
        grad_sigma = float((residual * a[:, None] * beta * z).sum()) * sigma
        grad = np.append(grad, -grad_sigma)
    return value, grad, loglik


def fit_world(tasks: np.ndarray, workers: np.ndarray, y: np.ndarray, n_tasks: int,
              n_workers: int, difficulty: bool) -> WorldFit:
    """Fit ``alpha`` (and ``sigma`` when ``difficulty``) to labels whose probability of being
    right is ``y`` (aligned with ``tasks`` and ``workers``)."""
    y = np.clip(np.asarray(y, dtype=np.float64), 0.0, 1.0)
    by_task = sp.csr_matrix((np.ones(tasks.size), (tasks, np.arange(tasks.size))),
                            shape=(n_tasks, tasks.size))
    u = (np.arange(QUANTILES) + 0.5) / QUANTILES
    z = np.asarray(ndtri(u))  # = scipy.stats.norm.ppf(u) if difficulty else np.zeros(1)
    share = np.bincount(workers, y, minlength=n_workers) + 0.5
    start = np.log(share / (np.bincount(workers, minlength=n_workers) + 1.0 - share + 0.5))
    x0 = np.append(start, np.log(0.5)) if difficulty else start

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad, _ = _objective(x, tasks, workers, y, by_task, z, difficulty)
        return value, grad

    bounds = [(-50.0, 50.0)] * n_workers + ([(-12.0, np.log(MAX_SIGMA))] if difficulty else [])
    result = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                      options={"maxiter": 2000})
    _, _, loglik = _objective(result.x, tasks, workers, y, by_task, z, difficulty)
    sigma = float(np.exp(result.x[n_workers])) if difficulty else 0.0
    n_params = n_workers + (1 if difficulty else 0)
    bic = -2.0 * loglik + n_params * np.log(max(tasks.size, 1))
    return WorldFit(np.asarray(result.x[:n_workers]), sigma, loglik, n_params, float(bic))


@dataclass(frozen=True)
class CrowdStats:
    """What a twin is compared on: accuracy per worker against a reference (NaN for a worker
    without labels), labels per task and per worker, and the share of agreeing label pairs
    on the same task."""

    worker_accuracy: np.ndarray
    labels_per_task: np.ndarray
    labels_per_worker: np.ndarray
    agreement: float


def crowd_stats(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                reference: np.ndarray, n_tasks: int, n_workers: int,
                n_classes: int) -> CrowdStats:
    """The statistics of one label set (``reference``: a class per task, -1 = unknown)."""
    per_worker = np.bincount(workers, minlength=n_workers)
    known = reference[tasks] >= 0
    right = np.bincount(workers[known], labels[known] == reference[tasks[known]],
                        minlength=n_workers)
    seen = np.bincount(workers[known], minlength=n_workers)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(seen > 0, right / np.maximum(seen, 1), np.nan)
    counts = np.bincount(tasks * n_classes + labels, minlength=n_tasks * n_classes)
    counts = counts.reshape(n_tasks, n_classes).astype(np.float64)
    per_task = counts.sum(axis=1)
    pairs = float((per_task * (per_task - 1)).sum())
    agree = float((counts * (counts - 1)).sum())
    return CrowdStats(accuracy, per_task.astype(np.int64), per_worker,
                      agree / pairs if pairs else float("nan"))
