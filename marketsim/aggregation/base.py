"""The estimator interface every aggregator shares, and the one EM loop all EM models use.

Conventions follow scikit-learn: the constructor only stores hyperparameters (declared once, as
the class's ``Options``: :mod:`marketsim.aggregation.estimator`), ``fit`` returns
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

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from marketsim.aggregation._numeric import (
    PROB_FLOOR,
    as_generator,
    column_sums,
    log_odds_posterior,
    log_posterior,
    log_prior,
    majority_posterior,
    random_posterior,
)
from marketsim.aggregation._threads import run_parallel, threads_for
from marketsim.aggregation._ties import break_ties
from marketsim.aggregation.estimator import ConvergenceWarning, Estimator
from marketsim.aggregation.identifiability import warn_if_not_identifiable
from marketsim.aggregation.metrics import mean_accuracy
from marketsim.aggregation.options import EMOptions
from marketsim.data.frames import labels_series, proba_frame
from marketsim.data.labels import LabelSet


@dataclass(frozen=True)
class EMTrace:
    """How an EM run went: objective per iteration, iterations run, converged or not."""

    history: list[float]
    n_iter: int
    converged: bool


def run_em(
    state: Any,
    params: Any,
    m_step: Callable[[Any, Any], Any],
    e_step: Callable[[Any], tuple[Any, float]],
    *,
    max_iter: int,
    tol: float,
    scale: float,
    name: str,
    clamp: Callable[[Any], Any] | None = None,
) -> tuple[Any, Any, EMTrace]:
    """The one EM loop: ``params <- M(state, params); state, objective <- E(params)``.

    ``clamp`` (optional) is applied to the initial ``state`` and after every E-step: e.g.
    :func:`clamp_known`, which fixes the posteriors of tasks whose class is known (gold
    questions).

    ``state`` is what the E-step infers (task posteriors, annotator weights), ``params`` the
    model parameters (the M-step also sees the previous ones). Stops after ``max_iter``
    M-steps, or when the objective changes by at most ``tol * scale``; ``tol = 0`` still stops
    at an exact fixed point, where the objective repeats to the last bit. Warns with a
    ConvergenceWarning (naming ``name``) when it did not converge.
    """
    history: list[float] = []
    converged = False
    n_iter = 0
    if clamp is not None:
        state = clamp(state)
    for n_iter in range(1, int(max_iter) + 1):  # noqa: B007 - n_iter read after loop
        params, state = m_step(state, params), None  # the old state goes before the E-step
        state, objective = e_step(params)
        if clamp is not None:
            state = clamp(state)
        history.append(objective)
        if len(history) > 1 and abs(history[-1] - history[-2]) <= tol * scale:
            converged = True
            break
    if not converged and tol > 0 and int(max_iter) > 1:
        warnings.warn(
            f"{name} did not converge in {max_iter} iterations", ConvergenceWarning, stacklevel=3
        )
    return state, params, EMTrace(history, n_iter, converged)


def clamp_known(proba: np.ndarray, known: np.ndarray) -> np.ndarray:
    """``proba`` (n_tasks, K) with the rows of tasks of known class (``known >= 0``; -1 =
    unknown) set to that class's indicator: gold questions in an EM fit. Vectorised."""
    rows = np.flatnonzero(known >= 0)
    if rows.size == 0:
        return proba
    out = np.array(proba, dtype=np.float64)
    out[rows] = 0.0
    out[rows, known[rows]] = 1.0
    return out


class BaseAggregator(Estimator):
    """Class estimators: ``fit(data)`` then read ``proba_`` (posteriors) and ``labels_``."""

    def fit(self, data: LabelSet, **fit_params: Any) -> BaseAggregator:  # pragma: no cover
        """Estimate from ``data``; set ``proba_`` and ``labels_``; return ``self``."""
        raise NotImplementedError

    def fit_predict_proba(
        self, data: Any, *, task: str = "task", worker: str = "worker", label: str = "label",
        **fit_params: Any,
    ) -> Any:
        """Fit and return the task posteriors.

        On a :class:`LabelSet`: the ``(n_tasks, K)`` array ``proba_``. On a pandas DataFrame
        with one row per label (columns ``task``, ``worker``, ``label``, renamed by the keyword
        arguments), as crowd-kit does: a DataFrame indexed by the original task ids (``task``)
        whose columns are the original label values.
        """
        if isinstance(data, LabelSet):
            return self.fit(data, **fit_params).proba_
        coded = LabelSet.from_frame(data, task=task, worker=worker, label=label)
        proba = self.fit(coded, **fit_params).proba_
        return proba_frame(coded.task_ids, coded.class_values, proba)

    def fit_predict(
        self, data: Any, *, task: str = "task", worker: str = "worker", label: str = "label",
        **fit_params: Any,
    ) -> Any:
        """Fit and return the predicted class per task.

        On a :class:`LabelSet`: the class index array ``labels_``. On a pandas DataFrame (see
        :meth:`fit_predict_proba`): a Series ``agg_label`` of original label values indexed by
        the original task ids (``task``), as crowd-kit's ``fit_predict`` returns.
        """
        if isinstance(data, LabelSet):
            return self.fit(data, **fit_params).labels_
        coded = LabelSet.from_frame(data, task=task, worker=worker, label=label)
        labels = self.fit(coded, **fit_params).labels_
        return labels_series(coded.task_ids, coded.class_values[labels])


class ScoreAggregator(Estimator):
    """Score estimators: ``fit(data)`` estimates a continuous mean per task, ``means_``.

    They have no class posteriors, so (unlike :class:`BaseAggregator`) there is no
    ``fit_predict_proba``; ``fit_predict`` returns the means.
    """

    output = "scores"

    def fit(self, data: LabelSet, **fit_params: Any) -> ScoreAggregator:  # pragma: no cover
        """Estimate from ``data``'s scores; set ``means_``; return ``self``."""
        raise NotImplementedError

    def fit_predict(self, data: LabelSet, **fit_params: Any) -> np.ndarray:
        """Fit and return the estimated task means ``means_``."""
        return self.fit(data, **fit_params).means_


class EMAggregator(BaseAggregator):
    """EM loop shared by every latent-class model.

    Subclasses implement ``_m_step(data, proba) -> params``, ``_log_emission(data, params)``
    (an ``(n_workers*K, K)`` matrix ``R[(j, l), c] = log P(l | c, j)``), ``_log_param_prior``
    and ``_init_params`` for parameter-based starts (spectral). The loop is

    ``q <- init; repeat: theta <- M(q); q, ll <- E(theta)``

    so ``log_likelihood_[t]`` is the objective at ``theta_t``; for maximum-likelihood variants it
    never decreases.

    Parameters: :class:`~marketsim.aggregation.options.EMOptions` (``init``, ``max_iter``,
    ``tol``, ``class_prior``: a fixed prior, or ``None`` to estimate it in every M-step,
    ``random_state``: the source of a random start and of spectral restarts).
    """

    Options = EMOptions

    # --- hooks -----------------------------------------------------------------------------
    def _m_step(self, data: LabelSet, proba: np.ndarray) -> dict[str, np.ndarray]:
        raise NotImplementedError  # pragma: no cover

    def _log_emission(self, data: LabelSet, params: dict[str, np.ndarray]) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def _log_param_prior(self, params: dict[str, np.ndarray]) -> float:  # noqa: ARG002 - hook
        """Log prior of the parameters (MAP variants); 0 for maximum likelihood."""
        return 0.0

    def _init_params(
        self, data: LabelSet, rng: np.random.Generator  # noqa: ARG002 - hook signature
    ) -> dict[str, np.ndarray] | None:
        """Parameters for parameter-based initialisations; ``None`` falls back to majority."""
        return None

    def _store(self, params: dict[str, np.ndarray]) -> None:
        """Copy fitted parameters to public attributes (``skill_`` or ``confusion_``)."""

    # --- shared machinery ------------------------------------------------------------------
    def _check_prior(self, data: LabelSet) -> None:
        """A fixed class prior must be K non-negative numbers summing to 1 (what the
        parameters' model cannot know: K is the data's)."""
        prior = self._fixed_prior()
        if prior is not None:
            if prior.shape != (data.n_classes,) or np.any(prior < 0) or not np.all(
                np.isfinite(prior)
            ):
                raise ValueError(
                    f"class_prior must be {data.n_classes} non-negative numbers summing to 1"
                )
            if abs(prior.sum() - 1.0) > 1e-6:
                raise ValueError(f"class_prior must sum to 1, got {prior.sum():.6g}")

    def _fixed_prior(self) -> np.ndarray | None:
        if self.class_prior is None:
            return None
        prior = np.asarray(self.class_prior, dtype=np.float64).ravel()
        return prior

    def _estimate_prior(
        self, data: LabelSet, proba: np.ndarray, totals: np.ndarray | None = None
    ) -> np.ndarray:
        """The fixed class prior, or the posterior's column means (``totals``: its column
        sums, if the caller has them), floored; a class without any mass keeps 0."""
        fixed = self._fixed_prior()
        if fixed is not None:
            return fixed
        if data.n_tasks == 0:
            return np.full(data.n_classes, 1.0 / data.n_classes)
        prior = (column_sums(proba) if totals is None else totals) / data.n_tasks
        # A class with no posterior mass at all (e.g. one nobody ever chose, from a majority
        # start) keeps prior 0: floored, its uniform confusion rows would let it "explain"
        # ambiguous tasks better than the real classes (docs/robustness.md).
        prior = np.where(prior > 0, np.maximum(prior, PROB_FLOOR), 0.0)
        return prior / prior.sum()

    def _binary_prior(self, data: LabelSet, proba: np.ndarray) -> np.ndarray:
        """:meth:`_estimate_prior` from numpy's pairwise column sums (the log-odds path's bits)."""
        if self.class_prior is not None:
            return self._estimate_prior(data, proba)
        return self._estimate_prior(data, proba, np.array([np.sum(c) for c in proba.T]))

    def _majority_start(self, data: LabelSet) -> np.ndarray:
        """The majority start; on a fit big enough for threads, the incidence matrix the EM
        loop needs is built meanwhile on a pool thread (and this one also counts the worker
        degrees the diagnostic reads at the end)."""
        _ = data.task_degree  # read by both sides: computed once, before they split
        start: list[np.ndarray] = []

        def votes() -> None:
            start.append(majority_posterior(data, self._fixed_prior()))

        def votes_and_degrees() -> None:
            votes()
            _ = data.worker_degree

        if threads_for(data.n_labels) > 1:
            run_parallel([lambda: data.incidence, votes_and_degrees])
        else:
            votes()
        return start[0]

    def _e_step(self, data: LabelSet, params: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
        # (n_tasks, K), class-major in memory: the M-step reads its columns
        return log_posterior(data.incidence, self._log_emission(data, params),
                             log_prior(params["prior"]), threads_for(data.n_labels))

    def _binary_e_step(
        self, data: LabelSet, params: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, float]:
        """The E-step of two classes in log-odds form, for models that opt in: one sparse
        product per iteration (not one per class) and one ``exp`` per task
        (:func:`log_odds_posterior`). Other class counts, and a class of prior 0 (which the
        generic path gives posterior 0), take :meth:`_e_step`'s generic path."""
        log_class_prior = log_prior(params["prior"])
        if data.n_classes != 2 or not np.isfinite(log_class_prior).all():
            return EMAggregator._e_step(self, data, params)
        emission = self._log_emission(data, params)  # R[(j, l), c] = log P(l | c, j)
        class_zero_logs = np.ascontiguousarray(emission[:, 0])
        proba, softplus_sum = log_odds_posterior(
            data.incidence, emission[:, 1] - class_zero_logs,
            float(log_class_prior[1] - log_class_prior[0]), threads_for(data.n_labels),
        )
        # log-likelihood: sum_i log(e^{L0_i} + e^{L1_i}) = sum_i L0_i + sum_i log(1 + e^{s_i}),
        # and sum_i L0_i needs no pass over the tasks
        class_zero = data.n_tasks * log_class_prior[0] + float(
            data.worker_label_counts.ravel() @ class_zero_logs
        )
        return proba, float(class_zero + softplus_sum)

    def _em_steps(self, data: LabelSet) -> tuple[
        Callable[[np.ndarray], dict[str, np.ndarray]],
        Callable[[dict[str, np.ndarray]], tuple[np.ndarray, float]],
    ]:
        """The loop's M-step ``proba -> params`` and E-step ``params -> (proba, objective)``
        on ``data`` (the objective: log-likelihood plus the parameters' log prior). A model
        may give faster steps with the same results for some data (:class:`DawidSkene`)."""

        def m_step(proba: np.ndarray) -> dict[str, np.ndarray]:
            return self._m_step(data, proba)

        def e_step(params: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
            proba, loglik = self._e_step(data, params)
            return proba, loglik + self._log_param_prior(params)

        return m_step, e_step

    def fit(  # type: ignore[override]  # the fit parameters EM estimators take
        self,
        data: LabelSet,
        *,
        init_proba: np.ndarray | None = None,
        init_params: dict[str, np.ndarray] | None = None,
        known: np.ndarray | None = None,
    ) -> EMAggregator:
        """Run EM on ``data``.

        ``init_proba`` (n_tasks, K) warm-starts from a previous posterior and ``init_params``
        from previous parameters (as returned in ``params_``); both override ``init``.
        ``known`` (n_tasks,) gives the class of tasks whose answer is known (gold questions)
        and -1 elsewhere: their posteriors are clamped to that class from the start and after
        every E-step (:func:`clamp_known`), so they calibrate the workers who answered them.
        """
        self._check_prior(data)
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
            proba = random_posterior(data, as_generator(self.random_state))
        elif self.init == "majority":
            proba = self._majority_start(data)
        else:
            params = self._init_params(data, as_generator(self.random_state))
            if params is None:
                self.init_used_ = "majority"
                proba = majority_posterior(data, self._fixed_prior())
            else:
                proba, _ = self._e_step(data, params)

        m_step, e_step = self._em_steps(data)
        clamp = None
        if known is not None:
            gold = np.asarray(known, dtype=np.int64)
            if gold.shape != (data.n_tasks,) or np.any(gold >= data.n_classes):
                raise ValueError(f"known must be {data.n_tasks} class indices or -1")
            clamp = lambda proba: clamp_known(proba, gold)  # noqa: E731 - one-line closure
        proba, params, trace = run_em(
            proba, params, lambda proba, _: m_step(proba), e_step,
            max_iter=self.max_iter, tol=self.tol, scale=max(data.n_labels, 1),
            name=type(self).__name__, clamp=clamp,
        )
        self.proba_ = np.ascontiguousarray(proba)
        self.labels_ = break_ties(proba, data)
        self.prior_ = params["prior"]
        self.params_ = params
        self.log_likelihood_ = trace.history
        self.n_iter_ = trace.n_iter
        self.converged_ = trace.converged
        self._store(params)
        warn_if_not_identifiable(data, mean_accuracy(self, data))
        return self
