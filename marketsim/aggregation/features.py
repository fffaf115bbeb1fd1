"""Dawid–Skene with binary task features: Jin & Zhang ("Multiple Experts with Binary
Features", 2010).

Each task ``i`` has a true class ``t_i`` (prior ``pi``), binary features ``x_i in {0,1}^k`` that
are conditionally independent given ``t_i`` (naive Bayes, ``phi[c, f] = P(x_f = 1 | t = c)``),
and labels from workers with confusion matrices ``C_j[c, l] = P(z = l | t = c)``.

- E-step: ``log q_i(c) = log pi_c + sum_{j in di} log C_j[c, z_ij]
  + sum_f [x_if log phi[c, f] + (1 - x_if) log(1 - phi[c, f])]``, normalised in log space; a
  missing label or a missing (NaN) feature simply contributes no term, so an unlabelled task's
  posterior comes from its features and the prior.
- M-step (Jin & Zhang §4.4, Laplace smoothing ``a = smoothing``, ``b = feature_smoothing``):
  ``C_j[c, l] = (sum_i q_i(c) [z_ij = l] + a) / (sum_i q_i(c) [j labelled i] + K a)``,
  ``pi_c = sum_i q_i(c) / n``,
  ``phi[c, f] = (sum_i q_i(c) x_if + b) / (sum_i q_i(c) [x_if observed] + 2 b)``.

The E-step is the D&S sparse product plus two dense ``(n, k) @ (k, K)`` products.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.aggregation._numeric import normalise_log, safe_log
from marketsim.aggregation.dawid_skene import ConfusionEM
from marketsim.aggregation.options import EMOptions, param
from marketsim.data.labels import LabelSet


def check_features(features: Any, n_tasks: int) -> np.ndarray:
    """Validate an ``(n_tasks, k)`` array of 0/1 features (NaN = missing); return it as float."""
    if features is None:
        return np.zeros((n_tasks, 0))
    x = np.asarray(features, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] != n_tasks:
        raise ValueError(
            f"features must have shape (n_tasks={n_tasks}, k), got {np.shape(features)}"
        )
    observed = ~np.isnan(x)
    if not np.all((x[observed] == 0.0) | (x[observed] == 1.0)):
        raise ValueError("features must be 0 or 1 (NaN for a missing feature)")
    return x


def simulate_features(
    truth: np.ndarray, phi: np.ndarray, random_state: Any = None
) -> np.ndarray:
    """Draw binary features ``x_if ~ Bernoulli(phi[truth_i, f])`` (naive Bayes, Jin & Zhang
    2010)."""
    rng = np.random.default_rng(random_state)
    phi = np.asarray(phi, dtype=np.float64)
    return (rng.random((truth.shape[0], phi.shape[1])) < phi[truth]).astype(np.float64)


class DawidSkeneWithFeatures(ConfusionEM):
    """Dawid–Skene EM whose task posteriors also use naive-Bayes binary features (Jin & Zhang 2010).

    Features are data, not hyperparameters: pass them to ``fit(data, features=X)`` with ``X``
    an ``(n_tasks, k)`` array of 0/1 (NaN = missing feature). Without features it is plain
    Dawid–Skene with Laplace smoothing ``smoothing``. The method ``ds-features``
    builds the estimator only; callers that have features must call ``fit`` themselves.

    Parameters: :class:`DawidSkeneWithFeatures.Options` (``init = "majority"``: per-task
    vote shares, Jin & Zhang §4.2.1).

    Attributes
    ----------
    proba_, labels_, prior_, confusion_, log_likelihood_, n_iter_, converged_
        As for :class:`~marketsim.aggregation.dawid_skene.DawidSkene`; ``log_likelihood_`` is
        the log-likelihood of labels *and* features plus the log of the smoothing priors, so
        it never decreases.
    feature_proba_ : (K, k) array
        ``phi[c, f] = P(x_f = 1 | t = c)``.

    Examples
    --------
    >>> from marketsim.data import LabelSet
    >>> data = LabelSet.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 0, 0], n_tasks=3)
    >>> x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, np.nan]])
    >>> est = DawidSkeneWithFeatures().fit(data, features=x)
    >>> est.labels_.tolist(), est.feature_proba_.shape
    ([1, 0, 1], (2, 2))
    """

    method = "ds-features"
    description = ("Dawid-Skene EM with naive-Bayes binary task features (Jin & Zhang 2010); "
                   "features are passed to fit(data, features=X), without them it is D&S with "
                   "Laplace smoothing")

    class Options(EMOptions):
        """Parameters of Dawid-Skene EM with features."""

        smoothing: float = param(1.0, "pseudo-count per confusion cell (Jin & Zhang: 1, i.e. "
                                 "+1/+K); 0 is maximum likelihood", ge=0)
        feature_smoothing: float = param(1.0, "pseudo-count of the feature probabilities "
                                         "(Jin & Zhang: +1/+2); 0 is maximum likelihood", ge=0)

    smoothing: float
    feature_smoothing: float

    # --- EM hooks --------------------------------------------------------------------------
    def _m_step(self, data: LabelSet, proba: np.ndarray) -> dict[str, np.ndarray]:
        params = super()._m_step(data, proba)  # confusion and prior
        ones, observed = self._x_ones, self._x_observed
        b = float(self.feature_smoothing)
        num = proba.T @ ones + b  # (K, k)
        den = proba.T @ observed + 2.0 * b
        with np.errstate(divide="ignore", invalid="ignore"):
            phi = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.5)
        params["feature_proba"] = phi
        return params

    def _e_step(self, data: LabelSet, params: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
        log_joint = data.incidence @ self._log_emission(data, params)
        log_joint = log_joint + safe_log(params["prior"])[None, :]
        phi = params.get("feature_proba")
        if phi is not None and self._x_ones.shape[1]:
            phi = np.asarray(phi, dtype=np.float64)
            log_joint = (
                log_joint
                + self._x_ones @ safe_log(phi).T
                + self._x_zeros @ safe_log(1.0 - phi).T
            )
        return normalise_log(log_joint)

    def _log_param_prior(self, params: dict[str, np.ndarray]) -> float:
        total = super()._log_param_prior(params)  # the confusion smoothing prior
        if self.feature_smoothing > 0:
            phi = params["feature_proba"]
            total += float(
                self.feature_smoothing * (safe_log(phi).sum() + safe_log(1.0 - phi).sum())
            )
        return total

    def _store(self, params: dict[str, np.ndarray]) -> None:
        super()._store(params)
        self.feature_proba_ = params["feature_proba"]

    # --- public ----------------------------------------------------------------------------
    def fit(  # type: ignore[override]  # features: this model's extra input
        self,
        data: LabelSet,
        features: Any = None,
        *,
        init_proba: np.ndarray | None = None,
        init_params: dict[str, np.ndarray] | None = None,
    ) -> DawidSkeneWithFeatures:
        """Run EM on labels ``data`` and binary ``features`` ((n_tasks, k), NaN = missing).

        ``init_proba``/``init_params`` warm-start as in
        :meth:`~marketsim.aggregation.base.EMAggregator.fit`.
        """
        x = check_features(features, data.n_tasks)
        observed = ~np.isnan(x)
        self._x_observed = observed.astype(np.float64)
        self._x_ones = np.where(observed, x, 0.0)
        self._x_zeros = self._x_observed - self._x_ones
        try:
            super().fit(data, init_proba=init_proba, init_params=init_params)
        finally:
            del self._x_observed, self._x_ones, self._x_zeros
        return self
