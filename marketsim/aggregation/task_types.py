"""A latent mixture of task types for ``marketsim calibrate``: each worker has one confusion
matrix per type of task (the latent-class assumption of Tian & Zhu, "Uncovering the latent
structures of crowd labeling", PAKDD 2015; a discrete form of Welinder, Branson, Belongie &
Perona's "multidimensional wisdom of crowds", NIPS 2010: workers are good at some kinds of
task and bad at others).

The model: task ``i`` of class ``c_i`` has a type ``z_i ~ Categorical(rho[c_i])`` (shares per
true class, ``rho`` (K, T)) or ``z_i ~ Categorical(rho)`` (one row of shares for every class);
worker ``j`` answers ``l`` with probability ``pi_j^(z_i)[c_i, l]``. With one type it is
Dawid and Skene's model with the classes known. Where a data set pools tasks from several
sources on which the same workers are differently accurate (ZenCrowd's four sources), one
matrix per worker is misspecified and the labels are worth less than it says; the mixture
can represent that.

Each task's class is distributed as ``weights`` (one-hot from a truth file, else the
Dawid–Skene posterior), and the marginal log-likelihood of the labels given the classes,

    L = sum_i log sum_c w_ic sum_z rho[c, z] prod_{l in i} pi_{j_l}^(z)[c, y_l],

is maximised by EM from several seeded random starts (responsibilities per task × type ×
class; the M-step's counts are one sparse product over the labels: no loop over labels,
tasks or workers). Sparse workers: each type's row is shrunk toward the worker's pooled row
(:func:`~marketsim.aggregation.confusion_fit.counted_confusion`, the same counted matrix
the one-matrix fits start from) by a Dirichlet prior worth :data:`SHRINKAGE` labels, so a
worker who did three tasks of a type keeps, on that type, mostly their overall matrix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from marketsim.aggregation._ones import transposed_matvecs
from marketsim.aggregation.confusion_fit import answer_matrix, counted_confusion
from marketsim.aggregation.mapping import Mapper, mapped

#: Pseudo-labels of the worker's pooled row added to each type's row of counts (the prior's
#: weight: below it a type's own counts matter less than the worker's overall matrix).
SHRINKAGE = 2.0
#: Seeded random starts per number of types; the start with the highest posterior is kept.
STARTS = 8
#: EM iterations per start at most, and the relative change of the log posterior that stops it.
MAX_ITER = 300
TOL = 1e-6
#: Labels above which the starts run :data:`SHORT_ITER` iterations each and only the best on
#: (:func:`_best_run`): a full run from every start costs up to ``STARTS * MAX_ITER``
#: iterations, each a pass over the labels (a 1,000,000-label file's six mixtures took over
#: six CPU minutes); every shipped data set (Web: 15,567 labels) runs every start to the end.
SHORT_RUNS_LABELS = 200_000
SHORT_ITER = 20
#: Most types ``calibrate`` tries (one type is the one-matrix world it fits anyway).
MAX_TYPES = 4
#: Shares are kept at least this large (a type no task of a class takes stays finite in logs).
FLOOR = 1e-12


@dataclass(frozen=True)
class TypesFit:
    """A fitted mixture: ``shares`` (1 or K rows of T type shares), ``matrices`` (T, workers,
    K, K), the marginal log-likelihood (without the prior), free parameter count and BIC."""

    shares: np.ndarray
    matrices: np.ndarray
    log_likelihood: float
    n_params: int
    bic: float
    name: str

    @property
    def n_types(self) -> int:
        """How many task types."""
        return int(self.matrices.shape[0])

    @property
    def per_class(self) -> bool:
        """The shares depend on the task's true class (one row per class)."""
        return self.shares.shape[0] > 1


@dataclass(frozen=True)
class _Labels:
    tasks: np.ndarray
    workers: np.ndarray
    labels: np.ndarray
    log_w: np.ndarray  # (n, K)
    answers: sp.csr_matrix  # (n, m * K): each task's labels by (worker, answer), j * K + y
    pooled: np.ndarray  # (m, K, K)
    n_workers: int


def _joint(answers: sp.csr_matrix, log_w: np.ndarray, log_pi: np.ndarray,
           log_rho: np.ndarray) -> np.ndarray:
    """``log w_ic + log rho[c, z] + sum_{l in i} log pi_{j_l}^(z)[c, y_l]`` per task, type and
    class, (n, T, K): ``answers`` each task's labels by (worker, answer)
    (:func:`~marketsim.aggregation.confusion_fit.answer_matrix`), ``log_pi`` (T, m, K, K),
    ``log_rho`` (K, T)."""
    t, m, k, _ = log_pi.shape
    table = log_pi.transpose(1, 3, 0, 2).reshape(m * k, t * k)  # row j * K + y
    per_task = np.asarray(answers @ table).reshape(-1, t, k)
    per_task += log_rho.T[None, :, :]  # in place: the same sums, no new (n, T, K) arrays
    per_task += log_w[:, None, :]
    return per_task


def _e_step(d: _Labels, log_pi: np.ndarray, log_rho: np.ndarray
            ) -> tuple[np.ndarray, float]:
    """Responsibilities (n, T, K) of (type, class) per task and the log-likelihood."""
    joint = _joint(d.answers, d.log_w, log_pi, log_rho)
    flat = joint.reshape(joint.shape[0], -1)  # one row per task: reductions along a row
    top = flat.max(axis=1)  # finite: every task has a class of weight > 0
    flat -= top[:, None]
    resp = np.exp(flat, out=flat)
    norm = resp.sum(axis=1)
    resp /= norm[:, None]
    return joint, float((top + np.log(norm)).sum())


def _m_step(d: _Labels, resp: np.ndarray, per_class: bool
            ) -> tuple[np.ndarray, np.ndarray]:
    """Each type's matrices shrunk toward the pooled ones, and the shares (log, (R, T))."""
    n, t, k = resp.shape
    # Scattered from the tasks' rows in task order (scipy's csc kernel on the CSR arrays):
    # the transposed matrix's product, its sums in the same order, without its copy.
    counts = transposed_matvecs(d.answers, resp.reshape(n, t * k))
    counts = counts.reshape(d.n_workers, k, t, k).transpose(2, 0, 3, 1)  # (T, m, K_c, K_y)
    pi = counts + SHRINKAGE * d.pooled[None]
    pi /= pi.sum(axis=3, keepdims=True)
    if per_class:
        mass = resp.sum(axis=0).T  # (K, T)
    else:
        mass = resp.sum(axis=2).sum(axis=0)[None, :]  # (1, T); axis=(0, 2)'s sums, faster
    rho = np.maximum(mass / np.maximum(mass.sum(axis=1, keepdims=True), FLOOR), FLOOR)
    rho /= rho.sum(axis=1, keepdims=True)
    log_rho = np.log(rho)
    if not per_class:
        log_rho = np.repeat(log_rho, k, axis=0)
    return np.log(pi), log_rho


def _log_prior(d: _Labels, log_pi: np.ndarray) -> float:
    return float(SHRINKAGE * (d.pooled[None] * log_pi).sum())


def _one_start(d: _Labels, n_types: int, per_class: bool, rng: np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
    """A random start: (log pi, log rho) of random type responsibilities."""
    weights = np.exp(d.log_w)
    resp = rng.dirichlet(np.ones(n_types), size=weights.shape[0])[:, :, None] \
        * weights[:, None, :]
    return _m_step(d, resp, per_class)


def _em(d: _Labels, log_pi: np.ndarray, log_rho: np.ndarray, per_class: bool,
        max_iter: int = MAX_ITER) -> tuple[np.ndarray, np.ndarray, float, float]:
    """EM from (log pi, log rho) for at most ``max_iter`` iterations: (log pi, log rho,
    log-likelihood, log posterior)."""
    before = -np.inf
    loglik = post = -np.inf
    for _ in range(max_iter):
        resp, loglik = _e_step(d, log_pi, log_rho)
        post = loglik + _log_prior(d, log_pi)
        if abs(post - before) <= TOL * abs(post):
            break
        before = post
        log_pi, log_rho = _m_step(d, resp, per_class)
    return log_pi, log_rho, loglik, post


def _best_run(d: _Labels, n_types: int, per_class: bool, rng: np.random.Generator,
              starts: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The EM run of highest posterior from ``starts`` random starts: each run to the end, or
    above :data:`SHORT_RUNS_LABELS` labels each for :data:`SHORT_ITER` iterations and the best
    of those on to the end (Biernacki, Celeux & Govaert 2003, "short runs of EM"; the random
    starts are the same)."""
    points = [_one_start(d, n_types, per_class, rng) for _ in range(starts)]
    if d.tasks.size <= SHORT_RUNS_LABELS:
        return max((_em(d, *point, per_class) for point in points), key=lambda run: run[3])
    short = max((_em(d, *point, per_class, SHORT_ITER) for point in points),
                key=lambda run: run[3])
    return _em(d, short[0], short[1], per_class, MAX_ITER - SHORT_ITER)


def fit_task_types(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                   weights: np.ndarray, n_workers: int, n_types: int, *, per_class: bool,
                   seed: int = 0, starts: int = STARTS) -> TypesFit:
    """The mixture of ``n_types`` task types fitted to ``labels`` of ``workers`` on
    ``tasks``, each task's class distributed as ``weights`` (tasks, K); the best of
    ``starts`` EM runs from seeded random starts (``seed``)."""
    n, k = weights.shape
    size = tasks.size
    with np.errstate(divide="ignore"):
        log_w = np.log(weights)
    answers = answer_matrix(tasks, workers, labels, n, n_workers, k)
    d = _Labels(tasks, workers, labels, log_w, answers,
                counted_confusion(tasks, workers, labels, weights, n_workers), n_workers)
    rng = np.random.default_rng(seed)
    log_pi, log_rho, loglik, _ = _best_run(d, n_types, per_class, rng, starts)
    rows = np.exp(log_rho if per_class else log_rho[:1])
    n_params = n_types * n_workers * k * (k - 1) + (n_types - 1) * rows.shape[0]
    bic = -2.0 * loglik + n_params * np.log(max(size, 1))
    name = f"{n_types} task types" + (", shares per class" if per_class else "")
    return TypesFit(rows / rows.sum(axis=1, keepdims=True), np.exp(log_pi), loglik, n_params,
                    float(bic), name)


def mixture_log_likelihood(matrices: np.ndarray, shares: np.ndarray, tasks: np.ndarray,
                           workers: np.ndarray, labels: np.ndarray, weights: np.ndarray
                           ) -> float:
    """``sum_i log sum_c w_ic sum_z rho[c, z] prod_{l in i} pi_{j_l}^(z)[c, y_l]`` over the
    tasks ``tasks`` index (0 .. weights.shape[0]-1): ``matrices`` (T, workers, K, K),
    ``shares`` one row or one per class of T type shares, ``weights`` (tasks, K); labels a
    mixture was not fitted to score it (held-out tasks)."""
    t, _, k, _ = matrices.shape
    with np.errstate(divide="ignore"):
        log_w = np.log(weights)
    joint = _joint(answer_matrix(tasks, workers, labels, weights.shape[0], matrices.shape[1], k),
                   log_w, np.log(matrices), np.log(np.broadcast_to(shares, (k, t))))
    return float(logsumexp(joint, axis=(1, 2)).sum())


def type_candidates(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                    weights: np.ndarray, n_workers: int, seed: int = 0,
                    counts: tuple[int, ...] = tuple(range(2, MAX_TYPES + 1)),
                    advance: Callable[[], object] | None = None,
                    mapper: Mapper | None = None) -> tuple[TypesFit, ...]:
    """The mixtures ``calibrate`` compares with its one-matrix worlds (the lowest BIC per number
    of types proposes that number's world): each number of types in ``counts`` (2 to
    :data:`MAX_TYPES`), shares shared by the classes or per class, each fitted by ``mapper``
    (:mod:`~marketsim.aggregation.mapping`; each from its own seeded starts); ``advance`` is
    called once per mixture fitted (a progress bar's)."""
    return tuple(mapped(mapper, _fit_one, [
        (tasks, workers, labels, weights, n_workers, t, per_class, seed)
        for t in counts for per_class in (False, True)], advance))


def _fit_one(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray, weights: np.ndarray,
             n_workers: int, n_types: int, per_class: bool, seed: int) -> TypesFit:
    return fit_task_types(tasks, workers, labels, weights, n_workers, n_types,
                          per_class=per_class, seed=seed)
