"""The estimator interface every aggregator shares, and the one EM loop all EM models use.

Conventions follow scikit-learn: ``__init__`` only stores hyperparameters, ``fit`` returns
``self`` and fitted results end in ``_``:

- ``proba_``  (n_tasks, n_classes) task posteriors, rows sum to 1;
- ``labels_`` (n_tasks,) predicted class index;
- ``prior_``  (n_classes,) class prior used or estimated;
- ``skill_``  (n_workers,) one-coin accuracy, or ``confusion_`` (n_workers, K, K) with
  ``confusion_[j, c, l] = P(worker j says l | true class c)``;
- ``log_likelihood_`` list of the objective per iteration (log-likelihood, plus the log prior
  of the parameters for MAP variants), ``n_iter_``, ``converged_``.
"""

from __future__ import annotations

import contextvars
import functools
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning

from marketsim.data.labels import LabelSet

#: Floor applied to probabilities before taking logs, so that no kernel ever produces -inf.
PROB_FLOOR = 1e-12

#: Fewest same-task label pairs before the chance-agreement check speaks (below it, silence).
MIN_PAIRS_FOR_CHECK = 50


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
    """
    if data.n_labels == 0 or data.n_workers < 2:
        return 0.0, 0.0
    g, b = _presence(data)
    d = np.diff(g.indptr).astype(np.float64)
    r = np.diff(b.indptr).astype(np.float64)
    overlap = float((d * (d - 1.0)).sum() / 2.0)
    agree = float((r * (r - 1.0)).sum() / 2.0)
    freq = np.bincount(data.labels, minlength=data.n_classes) / data.n_labels
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
    agreement, or the pairwise chi-square, three standard deviations above random); and the
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


def mean_accuracy(est: Any, data: LabelSet) -> float | None:
    """Label-weighted mean fitted worker accuracy (``skill_``, or ``sum_c prior_c C[c, c]``)."""
    degree = data.worker_degree.astype(np.float64)
    if degree.sum() <= 0:
        return None
    skill = getattr(est, "skill_", None)
    if skill is None and getattr(est, "confusion_", None) is not None:
        conf = np.asarray(est.confusion_, dtype=np.float64)
        skill = np.diagonal(conf, axis1=1, axis2=2) @ np.asarray(est.prior_, dtype=np.float64)
    if skill is None or np.shape(skill) != degree.shape:
        return None
    return float(np.asarray(skill, dtype=np.float64) @ degree / degree.sum())


def as_generator(random_state: Any) -> np.random.Generator:
    """Turn ``None``, an int seed, a SeedSequence or a Generator into a Generator (never global)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def safe_log(x: np.ndarray) -> np.ndarray:
    """Logarithm with a floor at :data:`PROB_FLOOR`, so results stay finite."""
    return np.log(np.maximum(x, PROB_FLOOR))


def log_prior(prior: np.ndarray) -> np.ndarray:
    """Log of a class prior: floored like :func:`safe_log`, but exactly 0 stays ``-inf`` (a
    class with prior 0 gets posterior 0)."""
    prior = np.asarray(prior, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(prior > 0, np.log(np.maximum(prior, PROB_FLOOR)), -np.inf)


def normalise_log(
    log_joint: np.ndarray, out: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """Row-normalise an (n, K) log joint in log space; return posteriors and the log-likelihood.

    ``out`` (may be ``log_joint`` itself) receives the posteriors, saving two allocations per EM
    iteration.
    """
    if log_joint.shape[0] == 0:
        return np.zeros_like(log_joint), 0.0
    # Hand-rolled log-sum-exp. Reductions along a short last axis (K = 2..5) are slow in
    # numpy, so the row max and the row sum fold over the K columns; this runs once per EM
    # iteration, thousands of times per simulated market.
    shift = functools.reduce(np.maximum, log_joint.T)
    proba = np.subtract(log_joint, shift[:, None], out=out)
    np.exp(proba, out=proba)
    total = proba[:, 0].copy()
    for c in range(1, proba.shape[1]):
        total += proba[:, c]
    proba /= total[:, None]
    return proba, float(shift.sum() + np.log(total).sum())


def argmax_labels(proba: np.ndarray) -> np.ndarray:
    """Most probable class per task (lowest index on exact ties, deterministic)."""
    if proba.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return np.argmax(proba, axis=1).astype(np.int64)


def majority_posterior(data: LabelSet, prior: np.ndarray | None = None) -> np.ndarray:
    """Soft majority vote: per-task vote shares; unlabelled tasks get the prior (or uniform)."""
    counts = data.vote_counts()
    totals = counts.sum(axis=1, keepdims=True)
    fallback = (
        np.full(data.n_classes, 1.0 / data.n_classes) if prior is None else np.asarray(prior)
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        proba = np.where(totals > 0, counts / np.maximum(totals, 1.0), fallback[None, :])
    return proba


def random_posterior(data: LabelSet, rng: np.random.Generator) -> np.ndarray:
    """Uniformly random posteriors (a flat Dirichlet per task), as seed 000's code started EM."""
    return rng.dirichlet(np.ones(data.n_classes), size=data.n_tasks)


class BaseAggregator(BaseEstimator):
    """Common interface: ``fit(data)`` then read ``proba_`` and ``labels_``."""

    def fit(self, data: LabelSet, **fit_params: Any) -> BaseAggregator:  # pragma: no cover
        raise NotImplementedError

    def fit_predict_proba(self, data: LabelSet, **fit_params: Any) -> np.ndarray:
        """Fit and return the task posteriors."""
        return self.fit(data, **fit_params).proba_

    def fit_predict(self, data: LabelSet, **fit_params: Any) -> np.ndarray:
        """Fit and return the predicted class index per task."""
        return self.fit(data, **fit_params).labels_


class EMAggregator(BaseAggregator):
    """EM loop shared by every latent-class model.

    Subclasses implement ``_m_step(data, proba) -> params``, ``_log_emission(data, params)``
    (an ``(n_workers*K, K)`` matrix ``R[(j, l), c] = log P(l | c, j)``), ``_log_param_prior``
    and ``_init_params`` for parameter-based starts (spectral). The loop is

    ``q <- init; repeat: theta <- M(q); q, ll <- E(theta)``

    so ``log_likelihood_[t]`` is the objective at ``theta_t``; for maximum-likelihood variants it
    never decreases.

    Parameters
    ----------
    init : {"majority", "random", "spectral"}
        How the first posterior (or first parameters, for "spectral") is obtained.
    max_iter, tol : int, float
        Stop after ``max_iter`` M-steps, or when the objective changes by less than
        ``tol`` per label.
    class_prior : array-like of shape (K,), optional
        Fixed class prior; ``None`` estimates it in every M-step.
    random_state : None, int or numpy Generator
        Source of randomness for "random" initialisation and spectral restarts.
    """

    init_methods: tuple[str, ...] = ("majority", "random")

    def __init__(
        self,
        *,
        init: str = "majority",
        max_iter: int = 100,
        tol: float = 1e-7,
        class_prior: Any = None,
        random_state: Any = None,
    ) -> None:
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.class_prior = class_prior
        self.random_state = random_state

    # --- hooks -----------------------------------------------------------------------------
    def _m_step(self, data: LabelSet, proba: np.ndarray) -> dict[str, np.ndarray]:
        raise NotImplementedError  # pragma: no cover

    def _log_emission(self, data: LabelSet, params: dict[str, np.ndarray]) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def _log_param_prior(self, params: dict[str, np.ndarray]) -> float:
        return 0.0

    def _init_params(
        self, data: LabelSet, rng: np.random.Generator
    ) -> dict[str, np.ndarray] | None:
        """Parameters for parameter-based initialisations; ``None`` falls back to majority."""
        return None

    def _store(self, params: dict[str, np.ndarray]) -> None:
        """Copy fitted parameters to public attributes (``skill_`` or ``confusion_``)."""

    # --- shared machinery ------------------------------------------------------------------
    def _check(self, data: LabelSet) -> None:
        if self.init not in self.init_methods:
            raise ValueError(
                f"init must be one of {', '.join(self.init_methods)}; got {self.init!r}"
            )
        if int(self.max_iter) < 1:
            raise ValueError(f"max_iter must be >= 1, got {self.max_iter}")
        if not float(self.tol) >= 0:
            raise ValueError(f"tol must be >= 0, got {self.tol}")
        prior = self._fixed_prior(data)
        if prior is not None:
            if prior.shape != (data.n_classes,) or np.any(prior < 0) or not np.all(
                np.isfinite(prior)
            ):
                raise ValueError(
                    f"class_prior must be {data.n_classes} non-negative numbers summing to 1"
                )
            if abs(prior.sum() - 1.0) > 1e-6:
                raise ValueError(f"class_prior must sum to 1, got {prior.sum():.6g}")

    def _fixed_prior(self, data: LabelSet) -> np.ndarray | None:
        if self.class_prior is None:
            return None
        prior = np.asarray(self.class_prior, dtype=np.float64).ravel()
        return prior

    def _estimate_prior(self, data: LabelSet, proba: np.ndarray) -> np.ndarray:
        fixed = self._fixed_prior(data)
        if fixed is not None:
            return fixed
        if data.n_tasks == 0:
            return np.full(data.n_classes, 1.0 / data.n_classes)
        prior = proba.sum(axis=0) / data.n_tasks
        # A class with no posterior mass at all (e.g. one nobody ever chose, from a majority
        # start) keeps prior 0: floored, its uniform confusion rows would let it "explain"
        # ambiguous tasks better than the real classes (docs/robustness.md).
        prior = np.where(prior > 0, np.maximum(prior, PROB_FLOOR), 0.0)
        return prior / prior.sum()

    def _e_step(self, data: LabelSet, params: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
        log_joint = data.incidence @ self._log_emission(data, params)
        log_joint += log_prior(params["prior"])[None, :]
        return normalise_log(log_joint, out=log_joint)

    def fit(
        self,
        data: LabelSet,
        *,
        init_proba: np.ndarray | None = None,
        init_params: dict[str, np.ndarray] | None = None,
    ) -> EMAggregator:
        """Run EM on ``data``.

        ``init_proba`` (n_tasks, K) warm-starts from a previous posterior and ``init_params``
        from previous parameters (as returned in ``params_``); both override ``init``.
        """
        self._check(data)
        rng = as_generator(self.random_state)
        self.init_used_ = self.init
        params: dict[str, np.ndarray] | None = None
        if init_params is not None:
            params = {k: np.asarray(v, dtype=np.float64) for k, v in init_params.items()}
            if "prior" not in params:
                params["prior"] = self._estimate_prior(data, majority_posterior(data))
            proba, _ = self._e_step(data, params)
            self.init_used_ = "warm-params"
        elif init_proba is not None:
            proba = np.asarray(init_proba, dtype=np.float64)
            if proba.shape != (data.n_tasks, data.n_classes):
                raise ValueError(
                    f"init_proba must have shape {(data.n_tasks, data.n_classes)}, "
                    f"got {proba.shape}"
                )
            self.init_used_ = "warm-proba"
        elif self.init == "random":
            proba = random_posterior(data, rng)
        elif self.init == "majority":
            proba = majority_posterior(data, self._fixed_prior(data))
        else:
            params = self._init_params(data, rng)
            if params is None:
                self.init_used_ = "majority"
                proba = majority_posterior(data, self._fixed_prior(data))
            else:
                proba, _ = self._e_step(data, params)

        history: list[float] = []
        converged = False
        scale = max(data.n_labels, 1)
        n_iter = 0
        for n_iter in range(1, int(self.max_iter) + 1):  # noqa: B007 - n_iter read after loop
            params = self._m_step(data, proba)
            proba, loglik = self._e_step(data, params)
            history.append(loglik + self._log_param_prior(params))
            # tol = 0 still stops at an exact fixed point (the objective repeats to the last
            # bit), where further iterations cannot change anything but rounding.
            if len(history) > 1 and abs(history[-1] - history[-2]) <= self.tol * scale:
                converged = True
                break
        assert params is not None
        if not converged and self.tol > 0 and int(self.max_iter) > 1:
            warnings.warn(
                f"{type(self).__name__} did not converge in {self.max_iter} iterations",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.proba_ = proba
        self.labels_ = argmax_labels(proba)
        self.prior_ = params["prior"]
        self.params_ = params
        self.log_likelihood_ = history
        self.n_iter_ = n_iter
        self.converged_ = converged
        self._store(params)
        warn_if_not_identifiable(data, mean_accuracy(self, data))
        return self
