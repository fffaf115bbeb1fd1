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

import functools
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning

from marketsim.data.labels import LabelSet

#: Floor applied to probabilities before taking logs, so that no kernel ever produces -inf.
PROB_FLOOR = 1e-12


def as_generator(random_state: Any) -> np.random.Generator:
    """Turn ``None``, an int seed, a SeedSequence or a Generator into a Generator (never global)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def safe_log(x: np.ndarray) -> np.ndarray:
    """Logarithm with a floor at :data:`PROB_FLOOR`, so results stay finite."""
    return np.log(np.maximum(x, PROB_FLOOR))


def normalise_log(log_joint: np.ndarray) -> tuple[np.ndarray, float]:
    """Row-normalise an (n, K) log joint in log space; return posteriors and the log-likelihood."""
    if log_joint.shape[0] == 0:
        return np.zeros_like(log_joint), 0.0
    # Hand-rolled log-sum-exp. Reductions along a short last axis (K = 2..5) are slow in
    # numpy, so the row max folds over the K columns and the row sum is a matrix-vector
    # product; this runs once per EM iteration, thousands of times per simulated market.
    shift = functools.reduce(np.maximum, log_joint.T)[:, None]
    proba = np.exp(log_joint - shift)
    total = (proba @ np.ones(proba.shape[1]))[:, None]
    proba /= total
    return proba, float((shift + np.log(total)).sum())


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
        return np.maximum(prior, PROB_FLOOR) / np.maximum(prior, PROB_FLOOR).sum()

    def _e_step(self, data: LabelSet, params: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
        log_joint = data.incidence @ self._log_emission(data, params)
        log_joint = log_joint + safe_log(params["prior"])[None, :]
        return normalise_log(log_joint)

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
        return self
