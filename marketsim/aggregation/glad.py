"""GLAD: Whitehill, Ruvolo, Wu, Bergsma & Movellan, "Whose vote should count more: optimal
integration of labels from labelers of unknown expertise", NIPS 2009.

Worker ``j`` has an ability ``alpha_j`` in ``(-inf, inf)`` and task ``i`` an inverse
difficulty ``beta_i = exp(b_i) > 0``; the worker's label is right with probability
``sigma(alpha_j beta_i)`` and otherwise one of the other ``K - 1`` classes uniformly. The
class prior is fixed (uniform, as in the paper and crowd-kit, unless told otherwise).
EM: the E-step gives the task posteriors ``q``; the M-step raises the expected complete
log-likelihood plus the paper's Gaussian log priors ``N(alpha_j; mu_alpha, 1)`` and
``N(b_i; mu_b, 1)`` (crowd-kit's defaults: both means 1) by gradient ascent from the previous
parameters.

Each label ``l`` (task ``i``, worker ``j``, class ``y``) enters the M-step only through
``p_l = q_i(y)``, the posterior that it is right, and its logit ``x_l = alpha_j beta_i``:
``Q = sum_l p_l x_l - softplus(x_l) + const + log priors``. Given the task parameters ``Q``
splits into one concave problem per worker, and given the worker parameters into one per
task, so the M-step is block-coordinate ascent: a Newton (for ``b``: Fisher-scoring) step for
every worker at once, then for every task at once, each sum over labels one ``bincount``;
a coordinate whose own part of ``Q`` would fall halves its step until it does not, so ``Q``
never decreases and the objective (log-likelihood plus log prior) never decreases over EM
(a generalised EM). Sweeps stop when the largest gradient entry is below ``m_step_tol``
or after ``m_step_max_iter`` sweeps (crowd-kit: 25 conjugate-gradient steps, gradient
tolerance 1e-2).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from marketsim.aggregation._numeric import log_prior, normalise_log
from marketsim.aggregation._threads import threads_for
from marketsim.aggregation.base import EMAggregator, check_non_negative
from marketsim.aggregation.options import EMOptions
from marketsim.data.labels import LabelSet
from marketsim.options import F

#: The starts: "prior" is crowd-kit's (an E-step at the prior means: every worker as able,
#: every task as hard, i.e. a soft majority vote), then the usual posterior starts.
GLAD_STARTS = ("prior", "majority", "random")
#: Step halvings a coordinate may take before it keeps its old value.
MAX_HALVINGS = 30
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


class GLADOptions(EMOptions):
    """Settings of ``glad``."""

    init: Literal[GLAD_STARTS] | None = F(  # type: ignore[valid-type]
        None, "EM start: an E-step at the prior means (crowd-kit's), majority vote or a "
        "uniformly random posterior", shown='"prior"')


def softplus_parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``softplus(x) = log(1 + e^x)`` and ``sigma(x)``, from one ``exp`` and one ``log1p``."""
    e = np.exp(-np.abs(x))
    soft = np.maximum(x, 0.0)
    soft += np.log1p(e)
    sig = np.where(x >= 0, 1.0, e)
    sig /= 1.0 + e
    return soft, sig


def gaussian_log_pdf(x: np.ndarray, mean: float) -> float:
    """``sum log N(x; mean, 1)``."""
    d = x - mean
    return float(-0.5 * (d @ d) - _HALF_LOG_2PI * x.size)


class _Labels:
    """What the M-step reads of one fit's labels: index arrays and the correct-label index
    ``task * K + label`` into the flattened posterior."""

    def __init__(self, data: LabelSet) -> None:
        self.tasks, self.workers = data.tasks, data.workers
        self.n_tasks, self.n_workers = data.n_tasks, data.n_workers
        self.flat = data.tasks * data.n_classes + data.labels

    def sums(self, index: np.ndarray, size: int, weights: np.ndarray) -> np.ndarray:
        return np.bincount(index, weights, minlength=size)


class GLAD(EMAggregator):
    """GLAD: per-worker ability ``alphas_`` and per-task inverse difficulty ``betas_`` (> 0).

    Parameters
    ----------
    alpha_prior_mean, log_beta_prior_mean : float
        Means of the unit-variance Gaussian priors on ``alpha_j`` and ``log beta_i`` (1 and 1,
        crowd-kit's defaults and the authors' code's).
    m_step_max_iter, m_step_tol : int, float
        Block-ascent sweeps per M-step at most, and the largest gradient entry below which
        they stop (crowd-kit: 25 conjugate-gradient steps, tolerance 1e-2).
    class_prior : "uniform", array-like of shape (K,) or None
        Fixed class prior (the paper's and crowd-kit's: uniform); ``None`` re-estimates it in
        every M-step.
    init : {"prior", "majority", "random"}
        "prior" (crowd-kit's start): the first E-step at the prior means.
    Other parameters: see :class:`~marketsim.aggregation.base.EMAggregator`.

    Fitted: ``alphas_`` (n_workers,), ``betas_`` (n_tasks,) = ``exp(log_betas_)`` (crowd-kit's
    ``betas_`` holds ``log beta``), ``skill_`` (n_workers,): the mean of ``sigma(alpha_j
    beta_i)`` over the worker's labels (``sigma(alpha_j exp(log_beta_prior_mean))`` without
    any), and ``proba_``, ``labels_``, ``prior_`` as every EM estimator.

    Examples
    --------
    >>> from marketsim.data import LabelSet
    >>> data = LabelSet.from_arrays([0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [1, 1, 0, 0, 0, 0])
    >>> GLAD().fit(data).labels_.tolist()
    [1, 0]
    """

    init_methods = GLAD_STARTS

    def __init__(
        self,
        *,
        alpha_prior_mean: float = 1.0,
        log_beta_prior_mean: float = 1.0,
        m_step_max_iter: int = 25,
        m_step_tol: float = 1e-2,
        init: str = "prior",
        max_iter: int = 100,
        tol: float = 1e-7,
        class_prior: Any = "uniform",
        random_state: Any = None,
    ) -> None:
        super().__init__(init=init, max_iter=max_iter, tol=tol, class_prior=class_prior,
                         random_state=random_state)
        self.alpha_prior_mean = alpha_prior_mean
        self.log_beta_prior_mean = log_beta_prior_mean
        self.m_step_max_iter = m_step_max_iter
        self.m_step_tol = m_step_tol

    # --- the fit's own state: the labels' index arrays and the last parameters -------------
    _labels: _Labels | None = None
    _last: dict[str, np.ndarray] | None = None
    _n_classes: int = 2

    def fit(  # type: ignore[override]  # EMAggregator.fit's parameters
        self,
        data: LabelSet,
        *,
        init_proba: np.ndarray | None = None,
        init_params: dict[str, np.ndarray] | None = None,
        known: np.ndarray | None = None,
    ) -> GLAD:
        """Run EM on ``data`` (see :meth:`EMAggregator.fit`); ``init_params`` takes
        ``alpha``, ``log_beta`` and optionally ``prior``, as ``params_`` holds them."""
        self._n_classes = data.n_classes
        self._labels, self._last = _Labels(data), None
        try:
            super().fit(data, init_proba=init_proba, init_params=init_params, known=known)
        finally:
            self._labels, self._last = None, None
        return self

    def _check(self, data: LabelSet) -> None:
        if isinstance(self.class_prior, str) and self.class_prior != "uniform":
            raise ValueError(f"class_prior must be 'uniform', None or {data.n_classes} "
                             f"probabilities, got {self.class_prior!r}")
        super()._check(data)
        for name in ("alpha_prior_mean", "log_beta_prior_mean"):
            if not np.isfinite(float(getattr(self, name))):
                raise ValueError(f"{name} must be finite, got {getattr(self, name)}")
        if int(self.m_step_max_iter) < 1:
            raise ValueError(f"m_step_max_iter must be >= 1, got {self.m_step_max_iter}")
        check_non_negative(m_step_tol=self.m_step_tol)

    def _fixed_prior(self) -> np.ndarray | None:
        if isinstance(self.class_prior, str):
            return np.full(self._n_classes, 1.0 / self._n_classes)
        return super()._fixed_prior()

    def _init_params(
        self, data: LabelSet, rng: np.random.Generator  # noqa: ARG002 - deterministic
    ) -> dict[str, np.ndarray] | None:
        fixed = self._fixed_prior()
        return {
            "alpha": np.full(data.n_workers, float(self.alpha_prior_mean)),
            "log_beta": np.full(data.n_tasks, float(self.log_beta_prior_mean)),
            "prior": np.full(data.n_classes, 1.0 / data.n_classes) if fixed is None else fixed,
        }

    # --- E-step ----------------------------------------------------------------------------
    def _e_step(self, data: LabelSet, params: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
        self._last = params
        k = data.n_classes
        x = params["alpha"][data.workers] * np.exp(params["log_beta"])[data.tasks]
        soft, _ = softplus_parts(x)
        wrong = -soft - np.log(max(k - 1, 1))  # log((1 - sigma) / (K - 1))
        right = x - soft  # log sigma
        joint = np.empty((data.n_tasks, k))
        joint[...] = log_prior(params["prior"])[None, :]
        joint += np.bincount(data.tasks, wrong, minlength=data.n_tasks)[:, None]
        flat = self._labels.flat if self._labels is not None else (
            data.tasks * k + data.labels)
        joint.ravel()[:] += np.bincount(flat, right - wrong, minlength=joint.size)
        return normalise_log(joint, out=joint, n_threads=threads_for(data.n_labels))

    def _log_param_prior(self, params: dict[str, np.ndarray]) -> float:
        return gaussian_log_pdf(params["alpha"], float(self.alpha_prior_mean)) + \
            gaussian_log_pdf(params["log_beta"], float(self.log_beta_prior_mean))

    # --- M-step ----------------------------------------------------------------------------
    def _m_step(self, data: LabelSet, proba: np.ndarray) -> dict[str, np.ndarray]:
        labels = self._labels if self._labels is not None else _Labels(data)
        start = self._last if self._last is not None else self._init_params(data, None)  # type: ignore[arg-type]
        assert start is not None
        alpha = np.array(start["alpha"], dtype=np.float64)
        log_beta = np.array(start["log_beta"], dtype=np.float64)
        right = np.ascontiguousarray(proba).ravel()[labels.flat]  # p_l = q_i(y_l)
        mu_a, mu_b = float(self.alpha_prior_mean), float(self.log_beta_prior_mean)
        for _ in range(int(self.m_step_max_iter)):
            alpha, grad_a = self._ascend(labels, right, alpha, log_beta, mu_a, workers=True)
            log_beta, grad_b = self._ascend(labels, right, alpha, log_beta, mu_b, workers=False)
            largest = max(np.max(np.abs(grad_a), initial=0.0), np.max(np.abs(grad_b), initial=0.0))
            if largest < self.m_step_tol:
                break
        prior = self._estimate_prior(data, proba)
        return {"alpha": alpha, "log_beta": log_beta, "prior": prior}

    @staticmethod
    def _ascend(
        labels: _Labels, right: np.ndarray, alpha: np.ndarray, log_beta: np.ndarray,
        mean: float, *, workers: bool,
    ) -> tuple[np.ndarray, np.ndarray]:
        """One ascent step for every worker's ``alpha`` (``workers``) or every task's ``log
        beta``; returns the new block and its gradient at the old one."""
        beta = np.exp(log_beta)
        task_beta = beta[labels.tasks]
        x = alpha[labels.workers] * task_beta
        soft, sig = softplus_parts(x)
        index, size = (labels.workers, labels.n_workers) if workers else (
            labels.tasks, labels.n_tasks)
        theta = alpha if workers else log_beta
        slope = task_beta if workers else x  # dx / d theta
        resid = right - sig
        grad = labels.sums(index, size, resid * slope) - (theta - mean)
        curve = labels.sums(index, size, sig * (1.0 - sig) * slope * slope) + 1.0
        step = grad / curve
        old = labels.sums(index, size, right * x - soft) - 0.5 * (theta - mean) ** 2
        pending = np.ones(size, dtype=bool)
        new_theta = theta.copy()
        for _ in range(MAX_HALVINGS):
            trial = np.where(pending, theta + step, new_theta)
            if workers:
                tx = trial[labels.workers] * task_beta
            else:
                tx = alpha[labels.workers] * np.exp(trial)[labels.tasks]
            tsoft, _ = softplus_parts(tx)
            new = labels.sums(index, size, right * tx - tsoft) - 0.5 * (trial - mean) ** 2
            better = pending & (new >= old)
            new_theta[better] = trial[better]
            pending &= ~better
            if not pending.any():
                break
            step = step * 0.5
        return new_theta, grad

    def _store(self, params: dict[str, np.ndarray]) -> None:
        self.alphas_ = params["alpha"]
        self.log_betas_ = params["log_beta"]
        self.betas_ = np.exp(params["log_beta"])
        labels = self._labels
        if labels is None:  # pragma: no cover - _store runs inside fit
            return
        x = self.alphas_[labels.workers] * self.betas_[labels.tasks]
        _, sig = softplus_parts(x)
        degree = np.bincount(labels.workers, minlength=labels.n_workers).astype(np.float64)
        total = np.bincount(labels.workers, sig, minlength=labels.n_workers)
        _, unseen = softplus_parts(self.alphas_ * np.exp(float(self.log_beta_prior_mean)))
        self.skill_ = np.where(degree > 0, total / np.maximum(degree, 1.0), unseen)
