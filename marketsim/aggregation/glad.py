"""GLAD: Whitehill, Ruvolo, Wu, Bergsma & Movellan, "Whose vote should count more: optimal
integration of labels from labelers of unknown expertise", NIPS 2009.

Worker ``j`` has an ability ``alpha_j`` in ``(-inf, inf)`` and task ``i`` an inverse
difficulty ``beta_i = exp(b_i) > 0``; the worker's label is right with probability
``sigma(alpha_j beta_i)`` and otherwise one of the other ``K - 1`` classes uniformly. The
class prior is fixed (uniform, as crowd-kit's default, unless told otherwise).
EM: the E-step gives the task posteriors ``q``; the M-step raises the expected complete
log-likelihood plus the paper's Gaussian log priors ``N(alpha_j; mu_alpha, 1)`` and
``N(b_i; mu_b, 1)`` (crowd-kit's defaults: both means 1) by gradient ascent from the previous
parameters.

Each label ``l`` (task ``i``, worker ``j``, class ``y``) enters the M-step only through ``p_l =
q_i(y)``, the posterior that it is right, and its logit ``x_l = alpha_j beta_i``: ``Q = sum_l
p_l x_l - softplus(x_l) + const + log priors``. Given the task parameters ``Q`` splits into one
concave problem per worker, and given the worker parameters into one per task, so the M-step is
block-coordinate ascent: a Newton (for ``b``: Fisher-scoring) step for every worker at once,
then for every task at once, each sum over labels one ``bincount``; a coordinate whose own part
of ``Q`` would fall (beyond rounding) halves its step until it does not, so ``Q`` never
decreases and neither does the objective (log-likelihood plus log prior) over EM (a generalised
EM). Sweeps stop when the largest gradient entry is below ``m_step_tol`` or after
``m_step_max_iter`` sweeps (default one; crowd-kit runs up to 25 conjugate-gradient steps,
gradient tolerance 1e-2). The E-step and the next M-step share the parameters' logits.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Literal

import numpy as np
from scipy.special import expit

from marketsim.aggregation._numeric import log_prior, normalise_log
from marketsim.aggregation._threads import MIN_LABELS, blocks, run_parallel, threads_for
from marketsim.aggregation.base import EMAggregator, check_non_negative
from marketsim.aggregation.options import EMOptions
from marketsim.data.labels import LabelSet
from marketsim.options import F

#: The starts: "prior" is crowd-kit's (an E-step at the prior means: every worker as able,
#: every task as hard, i.e. a soft majority vote), then the usual posterior starts.
GLAD_STARTS = ("prior", "majority", "random")
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)
#: A step is taken when its coordinate's part of ``Q`` does not fall by more than rounding:
#: near a fixed point a step changes ``Q`` by ~1e-16 and rounding alone would decide.
ROUNDING = 1e-13
#: Blocks of labels the passes of a fit on ``MIN_LABELS`` labels or more run over (`_Fit`).
N_BLOCKS = 8


class GLADOptions(EMOptions):
    """Settings of ``glad``."""

    init: Literal[GLAD_STARTS] | None = F(  # type: ignore[valid-type]
        None, "EM start: an E-step at the prior means (crowd-kit's), majority vote or a "
        "uniformly random posterior", shown='"prior"')


def softplus(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``log(1 + e^x)``, without overflow: ``max(x, 0) + log1p(e^-|x|)`` (into ``out``)."""
    e = np.abs(x, out=out)
    np.negative(e, out=e)
    np.exp(e, out=e)
    np.log1p(e, out=e)
    e += np.maximum(x, 0.0)
    return e


def gaussian_log_pdf(x: np.ndarray, mean: float) -> float:
    """``sum log N(x; mean, 1)``."""
    d = np.square(x - mean)  # summed by numpy, not BLAS (d @ d: 3-4 ms on 100,000 tasks)
    return float(-0.5 * np.sum(d) - _HALF_LOG_2PI * x.size)


class _Fit:
    """One fit's labels as the steps read them (index arrays; ``flat = task * K + label``,
    each label's cell in the flattened posterior) and the logits ``x = alpha_j beta_i`` and
    ``softplus(x)`` of the last parameters they were computed for (``params``), which the
    E-step and the next M-step share instead of recomputing."""

    def __init__(self, data: LabelSet) -> None:
        self.tasks, self.workers = data.tasks, data.workers
        self.n_tasks, self.n_workers, self.k = data.n_tasks, data.n_workers, data.n_classes
        self.flat = data.tasks * data.n_classes + data.labels
        self.params: dict[str, np.ndarray] | None = None
        self.x = self.soft = np.zeros(0)
        self.n_threads = threads_for(data.n_labels)
        # Blocks of labels the passes run over (in parallel), fixed by the labels alone: the
        # numbers do not depend on the threads. Labels in task order are cut at task
        # boundaries, so per-task sums are one bincount's bit for bit; per-worker sums add
        # the blocks' partial sums in block order (~1e-16 from one bincount's).
        n = data.n_labels
        self.blocks = blocks(n, N_BLOCKS if n >= MIN_LABELS else 1) or [(0, 0)]
        self.rows: list[tuple[int, int]] | None = None
        if n == 0 or not bool(np.all(self.tasks[1:] >= self.tasks[:-1])):
            return
        starts = np.unique(np.searchsorted(self.tasks, self.tasks[[a for a, _ in self.blocks]]))
        edges = [0] + [int(a) for a in starts[1:]] + [n]
        self.blocks = list(zip(edges[:-1], edges[1:], strict=True))
        firsts = [0] + [int(self.tasks[a]) for a in edges[1:-1]] + [self.n_tasks]
        self.rows = list(zip(firsts[:-1], firsts[1:], strict=True))
        self.local = self.tasks - np.repeat(firsts[:-1], np.diff(edges))
        self.local_flat = self.local * self.k + data.labels

    def sums(self, by_task: bool, n_terms: int,
             terms: Callable[[int, int], list[np.ndarray]]) -> list[np.ndarray]:
        """Per-task (``by_task``) or per-worker sums of the ``n_terms`` per-label arrays
        ``terms(a, b)`` returns for the labels ``[a, b)`` of each block (in parallel)."""
        size = self.n_tasks if by_task else self.n_workers
        rows = self.rows if by_task else None
        parts: list[list[np.ndarray]] = [[] for _ in self.blocks]
        out = [np.empty(size) for _ in range(n_terms)] if rows is not None else []

        def run(i: int) -> None:
            a, b = self.blocks[i]
            values = terms(a, b)
            if rows is not None:
                t0, t1 = rows[i]
                for o, v in zip(out, values, strict=True):
                    o[t0:t1] = np.bincount(self.local[a:b], v, minlength=t1 - t0)
            else:
                index = self.tasks if by_task else self.workers
                parts[i] = [np.bincount(index[a:b], v, minlength=size) for v in values]

        run_parallel([partial(run, i) for i in range(len(self.blocks))], self.n_threads)
        if rows is not None:
            return out
        # in block order: the same numbers on any number of threads
        return [sum((p[t] for p in parts[1:]), parts[0][t]) for t in range(n_terms)]

    def logits(self, alpha: np.ndarray, log_beta: np.ndarray) -> np.ndarray:
        return alpha[self.workers] * np.exp(log_beta)[self.tasks]

    def state(self, params: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """``x`` and ``softplus(x)`` at ``params`` (kept from the step that made them)."""
        if self.params is not params:
            self.x = self.logits(params["alpha"], params["log_beta"])
            self.soft, self.params = softplus(self.x), params
        return self.x, self.soft

    def keep(self, params: dict[str, np.ndarray], x: np.ndarray, soft: np.ndarray) -> None:
        self.params, self.x, self.soft = params, x, soft


class GLAD(EMAggregator):
    """GLAD: per-worker ability ``alphas_`` and per-task inverse difficulty ``betas_`` (> 0).

    Parameters
    ----------
    alpha_prior_mean, log_beta_prior_mean : float
        Means of the unit-variance Gaussian priors on ``alpha_j`` and ``log beta_i`` (1 and 1,
        crowd-kit's defaults and the authors' code's).
    m_step_max_iter, m_step_tol : int, float
        Block-ascent sweeps per M-step at most, and the largest gradient entry below which
        they stop. The default, one sweep per M-step (a generalised EM), reaches the same
        fixed points as fuller M-steps in less time (on 1M labels: 15 cheap EM iterations
        against 6 of 25 sweeps, objectives equal to 1e-7 per label); crowd-kit runs up to 25
        conjugate-gradient steps with gradient tolerance 1e-2 (``m_step_max_iter=25``).
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
        m_step_max_iter: int = 1,
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

    # --- the fit's own state: its labels, logits and last parameters ----------------------
    _fit: _Fit | None = None
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
        self._fit, self._last = _Fit(data), None
        try:
            super().fit(data, init_proba=init_proba, init_params=init_params, known=known)
        finally:
            self._fit, self._last = None, None
        return self

    def _state(self, data: LabelSet) -> _Fit:
        if self._fit is None:  # a step called outside fit
            self._fit = _Fit(data)
        return self._fit

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
        self, data: LabelSet, rng: np.random.Generator | None  # noqa: ARG002 - deterministic
    ) -> dict[str, np.ndarray]:
        fixed = self._fixed_prior()
        return {
            "alpha": np.full(data.n_workers, float(self.alpha_prior_mean)),
            "log_beta": np.full(data.n_tasks, float(self.log_beta_prior_mean)),
            "prior": np.full(data.n_classes, 1.0 / data.n_classes) if fixed is None else fixed,
        }

    # --- E-step ----------------------------------------------------------------------------
    def _e_step(self, data: LabelSet, params: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
        """``log q_i(c) = log p_c + sum_l [y_l = c] log sigma(x_l) + [y_l != c] log((1 -
        sigma(x_l)) / (K - 1))`` + const: every label's "wrong" term summed per task, plus its
        "right" minus "wrong" term in its own class's cell (two ``bincount`` passes)."""
        fit = self._state(data)
        self._last = params
        k = data.n_classes
        x, soft = fit.state(params)
        log_k1 = np.log(max(k - 1, 1))
        joint = np.empty((data.n_tasks, k))
        joint[...] = log_prior(params["prior"])[None, :]
        rows = fit.rows
        if rows is None:  # labels not in task order
            wrong = -soft - log_k1  # log((1 - sigma) / (K - 1))
            joint += np.bincount(fit.tasks, wrong, minlength=data.n_tasks)[:, None]
            # log sigma - wrong = x - soft - wrong = x + log(K - 1)
            joint.ravel()[:] += np.bincount(fit.flat, x + log_k1, minlength=joint.size)
        else:  # the same sums, block by block of tasks
            def fill(i: int) -> None:
                (a, b), (t0, t1) = fit.blocks[i], rows[i]
                wrong = -soft[a:b] - log_k1
                part = joint[t0:t1]
                part += np.bincount(fit.local[a:b], wrong, minlength=t1 - t0)[:, None]
                part.ravel()[:] += np.bincount(fit.local_flat[a:b], x[a:b] + log_k1,
                                               minlength=part.size)

            run_parallel([partial(fill, i) for i in range(len(fit.blocks))], fit.n_threads)
        return normalise_log(joint, out=joint, n_threads=threads_for(data.n_labels))

    def _log_param_prior(self, params: dict[str, np.ndarray]) -> float:
        return gaussian_log_pdf(params["alpha"], float(self.alpha_prior_mean)) + \
            gaussian_log_pdf(params["log_beta"], float(self.log_beta_prior_mean))

    # --- M-step ----------------------------------------------------------------------------
    def _m_step(self, data: LabelSet, proba: np.ndarray) -> dict[str, np.ndarray]:
        fit = self._state(data)
        start = self._last if self._last is not None else self._init_params(data, None)
        x, soft = fit.state(start)
        alpha, log_beta = start["alpha"], start["log_beta"]
        right = np.ascontiguousarray(proba).ravel()[fit.flat]  # p_l = q_i(y_l)
        mu_a, mu_b = float(self.alpha_prior_mean), float(self.log_beta_prior_mean)
        for _ in range(int(self.m_step_max_iter)):
            alpha, x, soft, grad_a = _ascend(fit, right, alpha, log_beta, x, soft, mu_a, True)
            log_beta, x, soft, grad_b = _ascend(fit, right, alpha, log_beta, x, soft, mu_b,
                                                False)
            largest = max(np.max(np.abs(grad_a), initial=0.0),
                          np.max(np.abs(grad_b), initial=0.0))
            if largest < self.m_step_tol:
                break
        params = {"alpha": alpha, "log_beta": log_beta,
                  "prior": self._estimate_prior(data, proba)}
        fit.keep(params, x, soft)
        return params

    def _store(self, params: dict[str, np.ndarray]) -> None:
        self.alphas_ = params["alpha"]
        self.log_betas_ = params["log_beta"]
        self.betas_ = np.exp(params["log_beta"])
        fit = self._fit
        if fit is None:  # pragma: no cover - _store runs inside fit
            return
        sig = expit(fit.logits(self.alphas_, self.log_betas_))
        degree = np.bincount(fit.workers, minlength=fit.n_workers).astype(np.float64)
        total = np.bincount(fit.workers, sig, minlength=fit.n_workers)
        unseen = expit(self.alphas_ * np.exp(float(self.log_beta_prior_mean)))
        self.skill_ = np.where(degree > 0, total / np.maximum(degree, 1.0), unseen)


def _ascend(
    fit: _Fit, right: np.ndarray, alpha: np.ndarray, log_beta: np.ndarray, x: np.ndarray,
    soft: np.ndarray, mean: float, workers: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One ascent step of every worker's ``alpha`` (``workers``) or every task's ``log
    beta``, from logits ``x`` and ``softplus(x)`` at the current parameters; returns the new
    block, the logits and softplus at the new parameters, and the gradient at the old ones.

    Per coordinate ``theta`` (its labels ``l``, ``dx_l/dtheta = s_l``: ``beta_i`` for an
    ability, ``x_l`` for a log difficulty): gradient ``sum_l (p_l - sigma_l) s_l - (theta -
    mean)``, step ``gradient / (sum_l sigma_l (1 - sigma_l) s_l^2 + 1)`` (Newton for ``alpha``,
    Fisher scoring for ``log beta``), halved while the coordinate's part of ``Q`` would fall
    (by more than :data:`ROUNDING`); a coordinate whose step shrinks to rounding keeps its
    value. Each pass runs block by block (:meth:`_Fit.sums`), in place on label-sized
    buffers: a fresh 8 MB array per operation costs as much as the operation."""
    theta = alpha if workers else log_beta
    n = x.size
    other = np.empty(n)  # the other block per label
    beta = np.exp(log_beta)
    sig, work = np.empty(n), np.empty(n)

    def first(a: int, b: int) -> list[np.ndarray]:  # gradient, curvature, Q at theta
        if workers:
            np.take(beta, fit.tasks[a:b], out=other[a:b])
        else:
            np.take(alpha, fit.workers[a:b], out=other[a:b])
        xs, ss, ps = x[a:b], sig[a:b], right[a:b]
        slope = other[a:b] if workers else xs  # dx / d theta
        np.subtract(xs, soft[a:b], out=ss)
        np.exp(ss, out=ss)  # sigma(x) = e^{x - softplus(x)}
        g = np.subtract(ps, ss)
        g *= slope
        ws = np.subtract(1.0, ss, out=work[a:b])
        ss *= ws
        ss *= slope
        ss *= slope
        q = np.multiply(ps, xs, out=ws)
        q -= soft[a:b]
        return [g, ss, q]

    sum_g, sum_h, sum_q = fit.sums(not workers, 3, first)
    grad = sum_g - (theta - mean)
    step = grad / (sum_h + 1.0)
    old = sum_q - 0.5 * (theta - mean) ** 2
    new_theta = theta.copy()
    pending = np.abs(step) > 1e-13 * (1.0 + np.abs(theta))
    first_try = True
    tx = np.empty(n)
    while pending.any():
        trial = np.where(pending, theta + step, new_theta)
        scale = trial if workers else np.exp(trial)

        def again(a: int, b: int, scale: np.ndarray = scale) -> list[np.ndarray]:  # Q there
            xs = tx[a:b]
            np.take(scale, (fit.workers if workers else fit.tasks)[a:b], out=xs)
            xs *= other[a:b]
            ss = softplus(xs, out=sig[a:b])
            q = np.multiply(right[a:b], xs, out=work[a:b])
            q -= ss
            return [q]

        new = fit.sums(not workers, 1, again)[0] - 0.5 * (trial - mean) ** 2
        better = pending & (new >= old - ROUNDING * (1.0 + np.abs(old)))
        new_theta[better] = trial[better]
        pending &= ~better
        if first_try and not pending.any():
            return new_theta, tx, sig, grad  # every step taken at once: the usual case
        first_try = False
        step *= 0.5
        pending &= np.abs(step) > 1e-13 * (1.0 + np.abs(theta))
    x = (new_theta if workers else np.exp(new_theta))[fit.workers if workers else fit.tasks]
    x *= other
    return new_theta, x, softplus(x, out=sig), grad

