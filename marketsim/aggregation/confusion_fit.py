"""Fitting a crowd of per-worker confusion matrices to its labels (``marketsim calibrate``),
with two task effects that make real errors shared: look-alike tasks and task difficulty.

The model (``workers.model = "confusion"``, ``design = "per-worker"``): task ``i`` of true
class ``c_i`` *looks like* class ``s_i ~ lookalike[c_i]`` to the whole crowd (a grosbeak that
looks like a bunting: every worker sees the same wrong class, which no independent-worker
model can produce); its inverse difficulty is ``beta_i`` with ``log beta_i ~ N(0, sigma^2)``;
worker ``j`` answers ``l`` with probability ``softmax(beta_i * log pi_j[s_i])[l]`` (the
worker's confusion row tempered by the task: ``beta = 1`` the row itself, ``beta -> 0`` a
uniform guess, ``beta -> inf`` the row's most likely class). Without look-alikes
(``lookalike`` the identity) and difficulty (``sigma = 0``) it is Dawid and Skene's model with
the truth known.

The marginal log-likelihood of the labels given each task's reference class (one-hot from a
truth file, else Dawid–Skene's posterior),

    L = sum_i log sum_{c, s, q} w_ic lookalike[c, s] / Q prod_{l in i} P(y_l | j_l, s, beta_q),

is computed on ``QUANTILES`` equally likely ``beta_q`` and maximised over every worker's
matrix, the look-alike matrix and ``sigma`` at once (L-BFGS with the exact gradient: a label's
terms depend only on its worker and answer, so they are computed once per (worker, answer) —
arrays workers × classes × quantiles × classes — and summed over each task's labels, and the
gradient over each (worker, answer)'s tasks, by sparse products with the tasks × (worker,
answer) count matrix: no loop over labels, tasks or workers, no array of labels × classes ×
quantiles). Rows are log-softmax of
free logits with a N(0, 3^2) prior (a worker who is always right stays finite). The nested
worlds (with or without each effect) are compared by BIC.

The crowd-shrunk worlds (:mod:`~marketsim.aggregation.crowd_confusion`) draw every worker's
matrix around a fitted crowd-level matrix: the worker's rows start from ``s * crowd`` labels'
worth of the crowd (the Dirichlet prior's pseudo-counts replace the logit prior), so the pairs
or blocks of classes the crowd confuses shape every worker's errors. Their BIC is the
marginal likelihood's (the worker matrices integrated out; with task effects, plus the
effects' gain in ``L`` over the shrunk matrices) with the crowd matrix, the concentration and
the effects as its free numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import log_softmax, logsumexp, ndtri, softmax

from marketsim.aggregation._ones import transposed_matvecs
from marketsim.aggregation.crowd_confusion import CrowdPrior, answer_counts
from marketsim.aggregation.label_matrices import answer_matrix
from marketsim.aggregation.mapping import Mapper, mapped

#: Equally likely values of ``beta`` the expectation over the difficulty is taken on.
QUANTILES = 16
#: Standard deviation of the N(0, s^2) prior on every logit.
LOGIT_PRIOR_SD = 3.0
#: Largest ``sigma`` the fit considers.
MAX_SIGMA = 5.0
#: Smallest ``sigma`` (log scale bound) while ``sigma`` is free.
MIN_SIGMA = 1e-4
#: The standard normal's ``QUANTILES`` mid-quantiles: ``log beta_q = sigma * Z_GRID[q]``.
Z_GRID = np.asarray(ndtri((np.arange(QUANTILES) + 0.5) / QUANTILES))


@dataclass(frozen=True)
class ConfusionFit:
    """One fitted crowd: per-worker matrices ``confusion`` (workers, K, K), the ``lookalike``
    matrix (K, K; the identity when not fitted), ``sigma`` (0 without difficulty), the marginal
    log-likelihood (without the prior), its free parameter count and BIC."""

    confusion: np.ndarray
    lookalike: np.ndarray
    sigma: float
    log_likelihood: float
    n_params: int
    bic: float
    name: str
    #: Which world of the eight: one ability per worker, look-alikes fitted, difficulty fitted.
    coins: bool = False
    with_lookalike: bool = False
    with_difficulty: bool = False
    #: The crowd-shrunk worlds' population (None: the worker matrices are free).
    crowd: CrowdPrior | None = None
    #: A task effect sized beyond the likelihood: ``sigma`` on the design curve
    #: (curve_difficulty) or the look-alike share from the majority's profile
    #: (ambiguity_share); judged on the curve whatever the number of task types.
    on_curve: bool = False
    #: The crowd's spread restored in the worker matrices (:meth:`CrowdPrior.spread`).
    spread_restored: bool = False
    #: Ambiguous tasks (:mod:`~marketsim.aggregation.pull_fit`): the K×K ``pull`` rows (None:
    #: no pull), the strengths and their weights.
    pull: np.ndarray | None = None
    pull_strengths: tuple[float, ...] = ()
    pull_weights: tuple[float, ...] = ()
    #: The chance a label follows its task's look-alike class, else its worker's row of the
    #: true class (:mod:`~marketsim.aggregation.lookalike_follow`; 1: every label).
    follow: float = 1.0


@dataclass(frozen=True)
class _Problem:
    tasks: np.ndarray
    workers: np.ndarray
    labels: np.ndarray
    weights: np.ndarray  # (tasks, K): reference class distribution
    #: (tasks, workers * K): how many labels of task i worker j gave with answer y (column
    #: j * K + y).
    answers: sp.csr_matrix
    z: np.ndarray  # (Q,)
    n_workers: int
    k: int
    lookalike: bool
    difficulty: bool
    coins: bool
    pseudo: np.ndarray | None = None  # (K, K): the crowd's pseudo-counts, else the logit prior

    @property
    def n_worker_params(self) -> int:
        """Free numbers per worker: one ability (coins) or the K x K logits."""
        return 1 if self.coins else self.k * self.k


def _unpack(x: np.ndarray, p: _Problem) -> tuple[np.ndarray, np.ndarray, float]:
    k, m = p.k, p.n_workers
    at = m * p.n_worker_params
    theta = (x[:m, None, None] * np.eye(k)[None] if p.coins
             else x[:at].reshape(m, k, k))
    lam = x[at:at + k * k].reshape(k, k) if p.lookalike else np.zeros((k, k))
    at += k * k if p.lookalike else 0
    sigma = float(np.exp(x[at])) if p.difficulty else 0.0
    return theta, lam, sigma


def answer_table(log_pi: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each worker's log answer probabilities ``log P(Y | worker, S, beta_q)`` (m, S, Q, Y):
    the confusion rows ``log_pi`` (m, S, Y) tempered by each ``beta``; and the same as one
    table, row ``j * K + y`` (a label's worker and answer), columns (S, Q), which the count
    matrix of each task's labels by (worker, answer) sums over its labels."""
    m, k = log_pi.shape[0], log_pi.shape[1]
    scaled = beta[None, None, :, None] * log_pi[:, :, None, :]
    log_rho = log_softmax(scaled, axis=3)
    return log_rho, log_rho.transpose(0, 3, 1, 2).reshape(m * k, k * beta.size)


def _objective(x: np.ndarray, p: _Problem) -> tuple[float, np.ndarray, float]:
    """Negative log posterior, its gradient and the log-likelihood alone."""
    k = p.k
    theta, lam, sigma = _unpack(x, p)
    log_pi = log_softmax(theta, axis=2)  # (m, K, K)
    if p.lookalike:
        log_t = log_softmax(lam, axis=1)
    else:
        log_t = np.where(np.eye(k, dtype=bool), 0.0, -np.inf)
    beta = np.exp(sigma * p.z)  # (Q,)
    m, q = p.n_workers, p.z.size
    log_rho, table = answer_table(log_pi, beta)
    rho = np.exp(log_rho)
    # The (tasks, S, Q) arrays are the large ones (a million labels: 100,000 tasks x 64 at
    # K = 4 with difficulty): each is computed in place in the one array the sparse product
    # returns (the same operations in the same order as out-of-place: the same bits).
    joint = (p.answers @ table).reshape(-1, k, q)  # (n, S, Q): each task's labels' sum
    t = np.exp(log_t)
    prior_s = p.weights @ t  # (n, S): P(task i looks like s)
    with np.errstate(divide="ignore"):
        log_prior = np.log(prior_s)
    joint += log_prior[:, :, None]
    joint -= np.log(q)
    top = joint.max(axis=(1, 2))  # finite: every task looks like some class
    joint -= top[:, None, None]
    post = np.exp(joint, out=joint)
    norm = post.sum(axis=(1, 2))
    post /= norm[:, None, None]  # (n, S, Q)
    total = top + np.log(norm)
    # Each (worker, answer)'s posterior mass, summed over its labels: (m, Y, S, Q); scattered
    # from the tasks' rows in task order (scipy's csc kernel on the CSR arrays: the sums of
    # the transposed matrix's product in the same order, a quarter of its time at 1M labels).
    mass = transposed_matvecs(p.answers, post.reshape(-1, k * q)).reshape(m, k, k, q)
    mass_all = mass.sum(axis=1)  # (m, S, Q)
    # d log p / d theta[j, s, y'] = beta_q (1[y' = y] - rho_y'), summed with the posterior.
    grad_theta = (np.einsum("q,jysq->jsy", beta, mass)
                  - np.einsum("q,jsqy,jsq->jsy", beta, rho, mass_all))
    var = LOGIT_PRIOR_SD ** 2
    loglik = float(total.sum())
    if p.coins:
        a = x[:p.n_workers]
        value = -loglik + 0.5 * float(a @ a) / var
        grads = [-np.trace(grad_theta, axis1=1, axis2=2) + a / var]
    elif p.pseudo is not None:  # log Dirichlet(pseudo + 1): the posterior mode of its mean
        value = -loglik - float((p.pseudo[None] * log_pi).sum())
        pulled = p.pseudo[None] - np.exp(log_pi) * p.pseudo.sum(axis=1)[None, :, None]
        grads = [(-grad_theta - pulled).ravel()]
    else:
        value = -loglik + 0.5 * float((theta ** 2).sum()) / var
        grads = [(-grad_theta + theta / var).ravel()]
    if p.lookalike:
        value += 0.5 * float((lam ** 2).sum()) / var
        post_s = post.sum(axis=2)  # (n, S)
        # posterior of (c, s) per task: w_ic t_cs / prior_is * post_is
        resp = p.weights[:, :, None] * t[None, :, :] * (post_s / np.maximum(prior_s, 1e-300)
                                                         )[:, None, :]  # (n, C, S)
        counts = resp.sum(axis=0)  # (C, S)
        grad_lam = counts - t * counts.sum(axis=1, keepdims=True)
        grads.append((-grad_lam + lam / var).ravel())
    if p.difficulty:
        # d log p / d beta_q = log pi[s, y] - sum_y' rho_y' log pi[s, y'].
        expected = np.einsum("jsqy,jsy->jsq", rho, log_pi)
        answered = np.einsum("jysq,jsy->jsq", mass, log_pi)
        d_beta = answered - mass_all * expected  # (m, S, Q)
        grad_sigma = float(np.einsum("jsq,q->", d_beta, beta * p.z))
        grads.append(np.array([-grad_sigma * sigma]))
    return value, np.concatenate(grads), loglik


def fit_confusion_world(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                        weights: np.ndarray, n_workers: int, start: np.ndarray, *,
                        coins: bool, lookalike: bool, difficulty: bool,
                        look_start: np.ndarray | None = None,
                        crowd: CrowdPrior | None = None) -> ConfusionFit:
    """Fit the crowd to ``labels`` of ``workers`` on ``tasks``, each task's reference class
    distributed as ``weights`` (tasks, K). ``coins``: one ability per worker (a one-coin
    matrix, GLAD's worker for K = 2), else a full matrix per worker; ``lookalike`` and
    ``difficulty`` add the task effects. ``start`` (workers, K, K) is the first guess of the
    matrices (:func:`counted_confusion`, or a simpler fit's: warm starts), ``look_start`` the
    look-alike matrix's (default: mostly the identity). ``crowd``: the matrices are drawn
    around that crowd (its pseudo-counts replace the logit prior; not with ``coins``)."""
    n, k = weights.shape
    z = Z_GRID if difficulty else np.zeros(1)
    answers = answer_matrix(tasks, workers, labels, n, n_workers, k)
    prob = _Problem(tasks, workers, labels, weights, answers, z, n_workers,
                    k, lookalike, difficulty, coins,
                    None if crowd is None else crowd.pseudo_counts)
    start = np.clip(start, 1e-3, 1.0)
    if coins:
        right = np.trace(start, axis1=1, axis2=2) / k
        x0 = [np.log(right * (k - 1) / np.maximum(1.0 - right, 1e-3))]
    else:
        x0 = [np.log(start).ravel()]
    bounds = [(-30.0, 30.0)] * (n_workers * prob.n_worker_params)
    if lookalike:
        look = 0.95 * np.eye(k) + 0.05 / k if look_start is None else look_start
        x0.append(np.log(np.clip(look, 1e-6, 1.0)).ravel())
        bounds += [(-30.0, 30.0)] * (k * k)
    if difficulty:
        x0.append(np.array([np.log(0.5)]))
        bounds.append((np.log(MIN_SIGMA), np.log(MAX_SIGMA)))

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad, _ = _objective(x, prob)
        return value, grad

    result = minimize(fun, np.concatenate(x0), jac=True, method="L-BFGS-B", bounds=bounds,
                      options={"maxiter": 500})
    _, _, loglik = _objective(result.x, prob)
    theta, lam, sigma = _unpack(result.x, prob)
    per_worker = 1 if coins else k * (k - 1)
    n_params = n_workers * per_worker + (k * (k - 1) if lookalike else 0) + int(difficulty)
    bic = -2.0 * loglik + n_params * np.log(max(tasks.size, 1))
    name = ("one ability per worker" if coins else "per-worker confusion") \
        + (", look-alike tasks" if lookalike else "") \
        + (", task difficulty" if difficulty else "")
    look = softmax(lam, axis=1) if lookalike else np.eye(k)
    return ConfusionFit(softmax(theta, axis=2), look, sigma, loglik, n_params, float(bic),
                        name, coins, lookalike, difficulty)


def world_log_likelihood(fit: ConfusionFit, tasks: np.ndarray, workers: np.ndarray,
                         labels: np.ndarray, weights: np.ndarray) -> float:
    """The marginal log-likelihood of ``labels`` under the fitted world ``fit``, each task's
    class distributed as ``weights`` (tasks, K): the module's ``L`` for labels the world was
    not fitted to (held-out tasks). As in the fit, a label's terms depend only on its worker
    and answer: one table per (worker, answer) (workers x K rows of K x Q numbers), summed
    over each task's labels by one product with the count matrix (a million labels: 0.3 s,
    where a label's terms one by one took 15 s)."""
    n, k = weights.shape
    m = fit.confusion.shape[0]
    beta = np.exp(fit.sigma * Z_GRID) if fit.sigma > 0 else np.ones(1)
    with np.errstate(divide="ignore"):
        log_pi = np.log(fit.confusion)
    answers = answer_matrix(tasks, workers, labels, n, m, k)
    _, table = answer_table(log_pi, beta)
    per_task = (answers @ table).reshape(n, k, beta.size)
    with np.errstate(divide="ignore"):
        log_prior = logsumexp(np.log(weights)[:, :, None] + np.log(fit.lookalike)[None], axis=1)
    return float(logsumexp(per_task + log_prior[:, :, None] - np.log(beta.size),
                           axis=(1, 2)).sum())


def counted_confusion(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                      weights: np.ndarray, n_workers: int, smoothing: float = 0.5
                      ) -> np.ndarray:
    """Each worker's confusion matrix counted against the reference classes ``weights``
    (tasks, K), with ``smoothing`` added to every cell: the fits' first guess."""
    counts = answer_counts(tasks, workers, labels, weights, n_workers) + smoothing
    return counts / counts.sum(axis=2, keepdims=True)


def candidate_worlds(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                     weights: np.ndarray, n_workers: int,
                     advance: Callable[[], object] | None = None,
                     mapper: Mapper | None = None) -> tuple[ConfusionFit, ...]:
    """The eight nested worlds ``marketsim calibrate`` chooses from by BIC: one ability or a
    full matrix per worker, with or without look-alike tasks, with or without difficulty
    (each world with difficulty starts from the same world without it; the crowd-shrunk
    worlds are :func:`~marketsim.aggregation.crowd_worlds.crowd_worlds`); the four pairs
    fitted by ``mapper`` (:mod:`~marketsim.aggregation.mapping`); ``advance`` is called once
    per world fitted (a progress bar's)."""
    start = counted_confusion(tasks, workers, labels, weights, n_workers)
    pairs = mapped(mapper, _plain_and_hard, [
        (tasks, workers, labels, weights, n_workers, start, coins, lookalike)
        for coins in (True, False) for lookalike in (False, True)],
        None if advance is None else lambda: (advance(), advance()))
    return tuple(fit for pair in pairs for fit in pair)


def _plain_and_hard(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                    weights: np.ndarray, n_workers: int, start: np.ndarray, coins: bool,
                    lookalike: bool) -> tuple[ConfusionFit, ConfusionFit]:
    """A world without difficulty, and the same with difficulty started from it."""
    plain = fit_confusion_world(tasks, workers, labels, weights, n_workers, start,
                                coins=coins, lookalike=lookalike, difficulty=False)
    hard = fit_confusion_world(tasks, workers, labels, weights, n_workers, plain.confusion,
                               coins=coins, lookalike=lookalike, difficulty=True,
                               look_start=plain.lookalike)
    return plain, hard
