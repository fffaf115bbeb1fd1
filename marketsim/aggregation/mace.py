"""MACE, Multi-Annotator Competence Estimation (Hovy, Berg-Kirkpatrick, Vaswani & Hovy, NAACL
2013, "Learning Whom to Trust with MACE").

The true class ``T_i`` is uniform over the K classes. On each task worker j spams with
probability ``s_j = 1 - theta_j``: spamming, they answer from their own distribution ``xi_j``
over the classes; otherwise they give the true class. So
``P(l | c, j) = s_j xi_j[l] + (1 - s_j) [l = c]``, a K×K matrix per worker, and the E-step is the
sparse product every EM model here makes (``incidence @ R``). The M-step counts, per label
``(i, j, l)``, the expected "knowing" indicator ``q_i(l) w_jl`` with
``w_jl = (1 - s_j) / (s_j xi_j[l] + 1 - s_j)``; the rest of the label is spam, attributed to
class l. Both are one mat-vec with :attr:`LabelSet.own_class_incidence` (``sum q_i(l)`` over
worker j's labels l), so nothing loops over labels, tasks or workers. With two classes the
random starts run together, as one more array axis (``_mace_starts.py``); otherwise they
loop (on a big fit, on all cores at once, each start on one thread).

Two modes, as in the paper and crowd-kit's ``MACE``: ``"em"`` normalises the counts plus a
fixed ``smoothing`` (default 0.01 / K); ``"vb"`` (the default) is variational Bayes with a
``Beta(alpha, beta)`` prior on (spamming, knowing) and a symmetric ``Dirichlet(strategy_prior)``
on ``xi_j``: parameters become ``exp(digamma(count + prior) - digamma(total + prior))``.
``n_restarts`` random starts; the one whose data log-likelihood is highest wins.

The random starts are drawn from ``random_state``, but each worker's draw is a hash of the
seed, the restart and what the worker did (number of labels, labels per class), not of its
index: renaming workers, tasks or classes only renames the answer (crowd-kit draws by index,
with the same seed at every restart).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from typing import Any, Literal

import numpy as np
from scipy.special import digamma

from marketsim.aggregation import _mace_starts
from marketsim.aggregation._mace_starts import random_start
from marketsim.aggregation._numeric import (
    as_generator,
    log_odds_posterior,
    log_posterior,
    safe_log,
    transposed_product,
)
from marketsim.aggregation._threads import blocks, max_threads, run_parallel, threads_for
from marketsim.aggregation._ties import break_ties
from marketsim.aggregation.base import (
    BaseAggregator,
    EMTrace,
    clamp_known,
    run_em,
)
from marketsim.aggregation.estimator import ConvergenceWarning
from marketsim.aggregation.identifiability import warn_if_not_identifiable
from marketsim.aggregation.metrics import mean_accuracy
from marketsim.aggregation.options import Params as ParamsModel
from marketsim.aggregation.options import param, random_state_param
from marketsim.data.labels import LabelSet

Params = dict[str, np.ndarray]


def log_emission(params: Params, k: int) -> np.ndarray:
    """``R[(j, l), c] = log(spam_j xi_j[l] + know_j [l = c])``, shape ``(n_workers * K, K)``."""
    spam_xi = params["spam"][:, None] * params["strategy"]  # (W, K) over the answer l
    r = np.empty((spam_xi.shape[0], k, k))
    r[...] = safe_log(spam_xi)[:, :, None]
    r.reshape(-1, k * k)[:, :: k + 1] = safe_log(spam_xi + params["know"][:, None])
    return r.reshape(-1, k)


def e_step(data: LabelSet, params: Params) -> tuple[np.ndarray, float]:
    """Posteriors under the uniform class prior, and the data log-likelihood."""
    k = data.n_classes
    threads = threads_for(data.n_labels)
    log_uniform = -np.log(k)
    if k != 2:
        return log_posterior(data.incidence, log_emission(params, k),
                             np.full(k, log_uniform), threads)
    # two classes in log-odds form: per (worker, label) log P(l | 1) - log P(l | 0)
    spam_xi = params["spam"][:, None] * params["strategy"]
    other = safe_log(spam_xi)  # the answer is not the true class
    same = safe_log(spam_xi + params["know"][:, None])  # it is
    odds = np.empty((spam_xi.shape[0], 2))
    np.subtract(other[:, 0], same[:, 0], out=odds[:, 0])
    np.subtract(same[:, 1], other[:, 1], out=odds[:, 1])
    zero = np.empty_like(odds)  # log P(l | 0)
    zero[:, 0], zero[:, 1] = same[:, 0], other[:, 1]
    proba, softplus = log_odds_posterior(data.incidence, odds.ravel(), 0.0, threads)
    base = data.n_tasks * log_uniform + float(data.worker_label_counts.ravel() @ zero.ravel())
    return proba, base + softplus


def log_likelihood(data: LabelSet, competence: np.ndarray, strategies: np.ndarray) -> float:
    """MACE's data log-likelihood at proper parameters ``theta_j`` (``competence``) and
    ``xi_j`` (``strategies``, rows summing to 1), uniform class prior: the yardstick on which
    fits of different code are compared (``benchmarks/d_product_mace.py``)."""
    know = np.asarray(competence, dtype=np.float64)
    params = {"spam": 1.0 - know, "know": know, "strategy": np.asarray(strategies, float)}
    return e_step(data, params)[1]


def own_class_mass(data: LabelSet, proba: np.ndarray) -> np.ndarray:
    """``A[j, l] = sum q_i(l)`` over the tasks to which worker j gave class l, ``(W, K)``."""
    k = data.n_classes
    if k == 2:  # one product with q(1); class 0's share is the label count minus q(1)'s
        one = transposed_product(data.incidence, np.ascontiguousarray(proba[:, 1]))
        counts = data.worker_label_counts
        return np.stack([counts[:, 0] - one[0::2], one[1::2]], axis=1)
    class_major = np.ascontiguousarray(np.asarray(proba, dtype=np.float64).T).ravel()
    return (data.own_class_incidence @ class_major).reshape(data.n_workers, k)


def expected_counts(
    data: LabelSet, proba: np.ndarray, params: Params
) -> tuple[np.ndarray, np.ndarray]:
    """Expected counts per worker, ``(W, 2 + K)``: spam labels, knowing labels, then spam
    labels per class (what ``xi_j`` is estimated from)."""
    know = params["know"][:, None]
    w = know / np.maximum(params["spam"][:, None] * params["strategy"] + know, 1e-300)
    knowing = own_class_mass(data, proba) * w
    out = np.empty((data.n_workers, 2 + data.n_classes))
    strategy = np.subtract(data.worker_label_counts, knowing, out=out[:, 2:])
    np.maximum(strategy, 0.0, out=strategy)
    strategy.sum(axis=1, out=out[:, 0])
    knowing.sum(axis=1, out=out[:, 1])
    return out, strategy


def _normalise(counts: np.ndarray, add: float | np.ndarray) -> np.ndarray:
    """Rows of ``counts + add`` normalised; a row without mass becomes uniform."""
    smoothed = counts + add
    totals = smoothed.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(totals > 0, smoothed / np.where(totals > 0, totals, 1.0),
                        1.0 / counts.shape[1])


def _variational(counts: np.ndarray, prior: np.ndarray, k: int) -> np.ndarray:
    """``exp(digamma(count + prior) - digamma(total + prior))`` for the (spam, knowing) pair
    (the first two columns) and for ``xi_j`` (the other K): the VB update (sums < 1)."""
    full = counts + prior
    totals = np.empty((counts.shape[0], 2))
    full[:, :2].sum(axis=1, out=totals[:, 0])
    full[:, 2:].sum(axis=1, out=totals[:, 1])
    out = digamma(full)
    out[:, :2] -= digamma(totals[:, :1])
    out[:, 2:] -= digamma(totals[:, 1:])
    return np.exp(out, out=out)


class MACE(BaseAggregator):
    """MACE: per-worker spamming probability and answer distribution (Hovy et al. 2013).

    Parameters: :class:`MACE.Options`. Each start runs at most ``max_iter`` M-steps:
    crowd-kit stops at 50 (``n_iter``), before its fits on D_Product or Bird converge; ours
    default to 500 (D_Product's best start needs 131,
    docs/explanation/infer/mace.md).

    Fitted attributes: ``proba_``, ``labels_``, ``spamming_`` (n_workers,) = ``1 - theta_j``,
    ``competence_`` = ``theta_j``, ``strategies_`` (n_workers, K) = ``xi_j`` (posterior means
    under VB), ``confusion_`` (the K×K matrices they imply), ``prior_`` (uniform),
    ``log_likelihood_`` (the best start's), ``restart_log_likelihoods_``, ``best_restart_``.

    Examples
    --------
    >>> from marketsim.data import LabelSet
    >>> data = LabelSet.from_arrays([0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [1, 1, 0, 0, 0, 0])
    >>> MACE().fit(data).labels_.tolist()
    [1, 0]
    """

    method = "mace"
    description = ("MACE (Hovy et al. 2013): each worker spams with probability 1 - theta_j, "
                   "answering from their own distribution xi_j; variational Bayes or EM, best "
                   "of random restarts")

    class Options(ParamsModel):
        """Parameters of MACE."""

        mode: Literal["vb", "em"] = param(
            "vb", "variational Bayes with Beta(alpha, beta) / Dirichlet(strategy_prior) "
            "priors, or EM with smoothing (Hovy et al.'s two modes; crowd-kit's method)")
        n_restarts: int = param(10, "random starts; the one with the highest likelihood wins",
                                ge=1, le=1000)
        max_iter: int = param(500, "M-steps of a start at most (not a scenario setting: a "
                              "scenario's MACE runs 500)", ge=1, le=100_000, setting=False)
        tol: float = param(1e-7, "stop a start when the log-likelihood changes by less than "
                           "tol per label; 0 runs all max_iter iterations", ge=0)
        smoothing: float | None = param(None, "EM's pseudo-count on every count; unset: the "
                                        "paper's 0.01/K", ge=0)
        default_noise: float = param(0.5, "starting parameters are proportional to draws from "
                                     "[1, 1 + default_noise]", ge=0)
        alpha: float = param(0.5, "VB's Beta prior pseudo-count on spamming (not a scenario "
                             "setting: there alpha is the ability prior's)", gt=0,
                             setting=False)
        beta: float = param(0.5, "VB's Beta prior pseudo-count on knowing (as alpha)", gt=0,
                            setting=False)
        strategy_prior: float = param(10.0, "VB's symmetric Dirichlet pseudo-count on each "
                                      "worker's answer distribution xi_j", gt=0)
        random_state: Any = random_state_param(0)

    mode: str
    n_restarts: int
    max_iter: int
    tol: float
    smoothing: float | None
    default_noise: float
    alpha: float
    beta: float
    strategy_prior: float
    random_state: Any

    def _smoothing(self, k: int) -> float:
        return 0.01 / k if self.smoothing is None else float(self.smoothing)

    def _m_step(self, data: LabelSet, proba: np.ndarray, params: Params) -> Params:
        return self._update(*expected_counts(data, proba, params))

    def _update(self, counts: np.ndarray, strategy: np.ndarray) -> Params:
        """The M-step from the expected counts, row by row (one row per worker)."""
        k = strategy.shape[1]
        if self.mode == "vb":
            prior = np.empty(2 + k)
            prior[:2] = self.alpha, self.beta
            prior[2:] = self.strategy_prior
            out = _variational(counts, prior, k)
            return {"spam": out[:, 0], "know": out[:, 1], "strategy": out[:, 2:]}
        sigma = self._smoothing(k)
        pair = _normalise(counts[:, :2], sigma)
        return {"spam": pair[:, 0], "know": pair[:, 1], "strategy": _normalise(strategy, sigma)}

    def _log_param_prior(self, params: Params, k: int) -> float:
        """EM's smoothing is a Dirichlet prior: with it the objective never decreases. VB's
        objective is the data log-likelihood at its parameters, as the paper's selection."""
        sigma = self._smoothing(k)
        if self.mode == "vb" or sigma == 0:
            return 0.0
        return sigma * float(safe_log(params["spam"]).sum() + safe_log(params["know"]).sum()
                             + safe_log(params["strategy"]).sum())

    def _run(self, data: LabelSet, proba: np.ndarray, params: Params | None,
             known: np.ndarray | None) -> tuple[np.ndarray, Params, EMTrace]:
        k = data.n_classes

        def e(params: Params) -> tuple[np.ndarray, float]:
            proba, loglik = e_step(data, params)
            return proba, loglik + self._log_param_prior(params, k)

        start = params if params is not None else {
            "spam": np.full(data.n_workers, 0.5), "know": np.full(data.n_workers, 0.5),
            "strategy": np.full((data.n_workers, k), 1.0 / k)}
        clamp = None if known is None else (lambda q: clamp_known(q, known))
        with warnings.catch_warnings():  # warned once, for the start that is kept
            warnings.simplefilter("ignore", ConvergenceWarning)
            return run_em(proba, start, lambda q, p: self._m_step(data, q, p), e,
                          max_iter=self.max_iter, tol=self.tol, scale=max(data.n_labels, 1),
                          name=type(self).__name__, clamp=clamp)

    def _restarts(self, data: LabelSet, seeds: list[int],
                  known: np.ndarray | None) -> list[tuple[np.ndarray, Params, EMTrace]]:
        """One EM run per random start. On big data the starts share the cores: with two
        classes one group of starts per thread, each group run together as one array axis
        (:mod:`._mace_starts`), else each start on one thread; either way every number is bit
        for bit that of a separate run on any number of threads (``_threads.py``)."""
        runs: list[Any] = [None] * len(seeds)

        def one(r: int) -> None:
            params = random_start(data, seeds[r], float(self.default_noise))
            runs[r] = self._run(data, e_step(data, params)[0], params, known)

        def together(a: int, b: int) -> None:  # starts a..b-1 as one array axis
            starts = [random_start(data, seeds[r], float(self.default_noise))
                      for r in range(a, b)]
            runs[a:b] = _mace_starts.run_batched(
                data, starts, self._update, lambda p: self._log_param_prior(p, 2),
                max_iter=self.max_iter, tol=self.tol)

        _ = data.incidence, data.worker_label_counts, data.worker_degree  # built once, here
        threads = threads_for(data.n_labels)
        if known is None and _mace_starts.supported(data):
            # a group of starts per thread, each run together on its thread; at most
            # GROUP starts a group, so memory stays ~6 task-sized arrays per start of a group
            groups = blocks(len(seeds), max(threads, -(-len(seeds) // _mace_starts.GROUP)))
            tasks: list[Callable[[], object]] = [partial(together, a, b) for a, b in groups]
        else:
            tasks = [partial(one, r) for r in range(len(seeds))]  # one thread per start
        with max_threads(1), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            run_parallel(tasks, threads)
        return runs

    def fit(  # type: ignore[override]  # the fit parameters EM estimators take
        self, data: LabelSet, *, init_proba: np.ndarray | None = None,
        known: np.ndarray | None = None,
    ) -> MACE:
        """Fit MACE to ``data``.

        ``init_proba`` (n_tasks, K) warm-starts one run from a previous posterior (no random
        restarts); ``known`` (n_tasks,) fixes the class of gold tasks (-1 elsewhere), clamping
        their posteriors after every E-step.
        """
        gold = None
        if known is not None:
            gold = np.asarray(known, dtype=np.int64)
            if gold.shape != (data.n_tasks,) or np.any(gold >= data.n_classes):
                raise ValueError(f"known must be {data.n_tasks} class indices or -1")
        if init_proba is not None:
            start = np.asarray(init_proba, dtype=np.float64)
            if start.shape != (data.n_tasks, data.n_classes):
                raise ValueError(f"init_proba must have shape "
                                 f"{(data.n_tasks, data.n_classes)}, got {start.shape}")
            runs = [self._run(data, start, None, gold)]
        else:
            rng = as_generator(self.random_state)
            seeds = rng.integers(0, 2**63, size=int(self.n_restarts), dtype=np.uint64)
            runs = self._restarts(data, [int(seed) for seed in seeds], gold)
        finals = [trace.history[-1] if trace.history else -np.inf for _, _, trace in runs]
        # a later start must beat the best so far by a margin: starts that reach the same
        # optimum do not swap on rounding (so renaming workers or tasks renames the answer)
        margin = 1e-6 * max(data.n_labels, 1)
        best = 0
        for r in range(1, len(runs)):
            if finals[r] > finals[best] + margin:
                best = r
        proba, params, trace = runs[best]
        if not trace.converged and self.tol > 0 and int(self.max_iter) > 1:
            warnings.warn(f"MACE did not converge in {self.max_iter} iterations",
                          ConvergenceWarning, stacklevel=2)
        self._store(data, proba, params)
        self.labels_ = break_ties(self.proba_, data)
        self.log_likelihood_ = trace.history
        self.n_iter_ = trace.n_iter
        self.converged_ = trace.converged
        self.restart_log_likelihoods_ = finals
        self.best_restart_ = best
        warn_if_not_identifiable(data, mean_accuracy(self, data))
        return self

    def _store(self, data: LabelSet, proba: np.ndarray, params: Params) -> None:
        k = data.n_classes
        self.proba_ = np.ascontiguousarray(proba)
        self.params_ = params
        if self.mode == "vb":  # posterior means of the Beta and Dirichlet factors
            counts, strategy = expected_counts(data, proba, params)
            spam = (counts[:, 0] + self.alpha) / (counts[:, :2].sum(axis=1)
                                                  + self.alpha + self.beta)
            xi = _normalise(strategy, float(self.strategy_prior))
        else:
            spam = params["spam"] / (params["spam"] + params["know"])
            xi = params["strategy"]
        self.spamming_ = spam
        self.competence_ = 1.0 - spam
        self.strategies_ = xi
        conf = np.repeat((spam[:, None] * xi)[:, None, :], k, axis=1)  # [j, c, l]
        conf.reshape(-1, k * k)[:, :: k + 1] += self.competence_[:, None]
        self.confusion_ = conf
        self.prior_ = np.full(k, 1.0 / k)
