"""Continuous scores with "bad" annotators: the EM of Hoiem's *Applied ML* lecture on EM.

Model. Scores ``s_ia`` lie in ``[0, 1]``; annotator ``a`` is good
(``z_a = 1``) with probability ``pi``. A good annotator scores task ``i`` as
``s_ia ~ N(mu_i, sigma^2)``; a bad one uniformly on ``[0, 1]`` (density 1). The marginal
log-likelihood is

    ``L = sum_a log( pi * prod_{i in da} N(s_ia; mu_i, sigma^2) + (1 - pi) )``.

EM alternates

- E-step: ``w_a = P(z_a = 1 | s_a) = sigmoid(G_a + log pi - log(1 - pi))`` with
  ``G_a = sum_{i in da} log N(s_ia; mu_i, sigma^2)`` (log space, never a product of densities);
- M-step: ``mu_i = sum_a w_a s_ia / sum_a w_a``,
  ``sigma^2 = sum_{i,a} w_a (s_ia - mu_i)^2 / sum_{i,a} w_a`` (floored at ``min_sigma^2``),
  ``pi = mean_a(w_a)`` over annotators with at least one score (clipped to ``(eps, 1-eps)``).

Hard EM rounds ``w_a`` to 0/1 before each M-step. Everything is a ``np.bincount`` over the
score arrays: no Python loop over scores, tasks or annotators.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.special import expit

from marketsim.aggregation._numeric import as_generator
from marketsim.aggregation.base import ScoreAggregator, run_em
from marketsim.aggregation.options import Params, param
from marketsim.data.labels import LabelSet

#: ``pi`` is kept inside ``[PI_EPS, 1 - PI_EPS]`` so that both log terms stay finite.
PI_EPS = 1e-6
#: Inside EM, tasks whose scorers carry less total weight than this keep the plain mean
#: (only reached when every weight underflows, e.g. hard EM; the exact update is kept above it,
#: so the log-likelihood stays monotone).
WEIGHT_FLOOR = 1e-12
#: Reported ``means_``: tasks whose scorers' total ``P(good)`` is below this (nobody believed
#: good) report the plain mean instead of a weighted mean dominated by the "least bad" scorer.
ALL_BAD_WEIGHT = 1e-3
_LOG_2PI = float(np.log(2.0 * np.pi))


def simulate_bad_annotators(
    n_tasks: int,
    n_workers: int,
    per_task: int,
    *,
    bad_fraction: float = 0.3,
    sigma: float = 0.05,
    random_state: Any = None,
) -> tuple[LabelSet, np.ndarray, np.ndarray]:
    """Synthetic market under Hoiem's bad-annotator model, for tests and benchmarks.

    Each task gets ``per_task`` distinct annotators drawn uniformly; ``round(bad_fraction *
    n_workers)`` annotators are bad (uniform scores); good scores are ``N(mu_i, sigma^2)``
    clipped to ``[0, 1]``, with ``mu_i ~ U[0, 1]``.

    Returns
    -------
    data : LabelSet
        ``scores`` set, ``labels`` all 0 (``n_classes = 1``).
    mu : (n_tasks,) true means.
    good : (n_workers,) bool, true annotator types.
    """
    rng = as_generator(random_state)
    if not 1 <= per_task <= n_workers:
        raise ValueError(f"per_task must be in [1, n_workers], got {per_task}")
    n_bad = int(round(bad_fraction * n_workers))
    good = np.ones(n_workers, dtype=bool)
    good[rng.choice(n_workers, size=n_bad, replace=False)] = False
    mu = rng.random(n_tasks)
    # per_task distinct annotators per task: argsort of uniform keys, vectorised over tasks
    workers = np.argsort(rng.random((n_tasks, n_workers)), axis=1)[:, :per_task].ravel()
    tasks = np.repeat(np.arange(n_tasks), per_task)
    noise = np.clip(mu[tasks] + sigma * rng.standard_normal(tasks.size), 0.0, 1.0)
    scores = np.where(good[workers], noise, rng.random(tasks.size))
    data = LabelSet(
        tasks, workers, np.zeros(tasks.size, dtype=np.int64), n_tasks, n_workers, 1,
        scores=scores,
    )
    return data, mu, good


def plain_means(data: LabelSet) -> np.ndarray:
    """Unweighted mean score per task (NaN scores skipped; NaN for tasks without scores)."""
    tasks, _, scores = _valid_scores(data)
    num = np.bincount(tasks, weights=scores, minlength=data.n_tasks)
    den = np.bincount(tasks, minlength=data.n_tasks).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _valid_scores(data: LabelSet) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tasks, workers, scores) of the non-missing scores; ValueError on bad input."""
    if data.scores is None:
        raise ValueError(
            "continuous-score models need LabelSet.scores (one float in [0, 1] per label); "
            "this LabelSet has none"
        )
    scores = np.asarray(data.scores, dtype=np.float64)
    if scores.shape != (data.n_labels,):
        raise ValueError(
            f"scores must have one entry per label ({data.n_labels}), got shape {scores.shape}"
        )
    keep = ~np.isnan(scores)
    s = scores[keep]
    if s.size and (not np.all(np.isfinite(s)) or s.min() < 0.0 or s.max() > 1.0):
        bad = s[~(np.isfinite(s) & (s >= 0.0) & (s <= 1.0))]
        raise ValueError(
            f"scores must lie in [0, 1] (NaN = missing); found {bad.size} outside, e.g. {bad[0]!r}"
        )
    return data.tasks[keep], data.workers[keep], s


class GaussianBadAnnotatorEM(ScoreAggregator):
    """EM (or hard EM) for Hoiem's bad-annotator good-Gaussian / bad-uniform annotator model.

    Not a classifier: it estimates a continuous mean per task, so it exposes ``means_``
    instead of ``proba_``/``labels_``; ``fit_predict`` returns ``means_``.

    Parameters: :class:`GaussianBadAnnotatorEM.Options`; hard EM is
    :class:`GaussianHardEM`.

    Attributes
    ----------
    means_ : (n_tasks,) estimated ``mu_i``; the plain mean for tasks whose scorers' total
        ``P(good)`` is below ``ALL_BAD_WEIGHT`` (1e-3); NaN for tasks without any score.
    good_proba_ : (n_workers,) ``w_a = P(z_a = 1 | scores)``; ``pi_`` for annotators without
        scores; 0/1 for hard EM.
    sigma_, pi_ : float
    log_likelihood_ : list of float
        Marginal log-likelihood after each M-step (never decreases for soft EM).
    n_iter_, converged_ : int, bool

    Examples
    --------
    >>> data, mu, good = simulate_bad_annotators(200, 5, 5, bad_fraction=0.4, random_state=0)
    >>> est = GaussianBadAnnotatorEM().fit(data)
    >>> bool(np.all((est.good_proba_ > 0.5) == good))
    True
    """

    method = "gaussian-em"
    description = ("Hoiem's bad-annotator EM for continuous scores in [0, 1]: good annotators "
                   "N(mu_i, sigma^2), bad ones uniform; estimates task means and P(good) per "
                   "annotator")
    #: Hard EM: ``w_a`` rounded to 0/1 (threshold 1/2) before every M-step.
    hard: ClassVar[bool] = False

    class Options(Params):
        """Parameters of the bad-annotator EM."""

        max_iter: int = param(100, "EM iterations at most", ge=1, le=100_000)
        tol: float = param(1e-7, "stop when the log-likelihood changes by less than tol per "
                           "score; 0 runs max_iter iterations (stopping early only at an "
                           "exact fixed point)", ge=0)
        init_pi: float = param(0.5, "starting P(good)", gt=0, lt=1)
        min_sigma: float = param(1e-3, "floor on sigma (the likelihood is unbounded as sigma "
                                 "goes to 0 otherwise)", gt=0)
        random_state: Any = param(None, "unused: the algorithm is deterministic (kept for "
                                  "interface uniformity)", setting=False)

    max_iter: int
    tol: float
    init_pi: float
    min_sigma: float
    random_state: Any

    # --- steps -----------------------------------------------------------------------------
    def _e_step(
        self,
        tasks: np.ndarray,
        workers: np.ndarray,
        scores: np.ndarray,
        n_workers: int,
        mu: np.ndarray,
        sigma: float,
        pi: float,
    ) -> tuple[np.ndarray, float]:
        """Posterior ``w_a`` and the marginal log-likelihood at ``(mu, sigma, pi)``."""
        resid = scores - mu[tasks]
        log_pdf = -0.5 * (_LOG_2PI + 2.0 * np.log(sigma)) - 0.5 * resid * resid / sigma**2
        g = np.bincount(workers, weights=log_pdf, minlength=n_workers)
        log_good = g + np.log(pi)
        log_bad = np.log1p(-pi)
        w = expit(log_good - log_bad)
        active = np.bincount(workers, minlength=n_workers) > 0
        loglik = float(np.logaddexp(log_good, log_bad)[active].sum())
        return w, loglik

    def _m_step(
        self,
        tasks: np.ndarray,
        workers: np.ndarray,
        scores: np.ndarray,
        w: np.ndarray,
        active: np.ndarray,
        fallback: np.ndarray,
        sigma_old: float,
    ) -> tuple[np.ndarray, float, float, np.ndarray]:
        """Weighted means, pooled weighted variance, ``pi = mean(w)`` over active annotators,
        and the total weight per task."""
        n_tasks = fallback.shape[0]
        wk = w[workers]
        num = np.bincount(tasks, weights=wk * scores, minlength=n_tasks)
        den = np.bincount(tasks, weights=wk, minlength=n_tasks)
        ok = den > WEIGHT_FLOOR
        mu = np.where(ok, num / np.where(ok, den, 1.0), fallback)
        total = wk.sum()
        if total > WEIGHT_FLOOR:
            resid = scores - mu[tasks]
            sigma = float(np.sqrt(np.dot(wk, resid * resid) / total))
        else:  # nobody is believed good: keep the spread
            sigma = sigma_old
        sigma = max(sigma, float(self.min_sigma))
        pi = float(np.clip(w[active].mean(), PI_EPS, 1.0 - PI_EPS)) if active.any() else 0.5
        return mu, sigma, pi, den

    # --- public ----------------------------------------------------------------------------
    def fit(self, data: LabelSet, **_: Any) -> GaussianBadAnnotatorEM:
        """Run (hard) EM on ``data.scores``; NaN scores are skipped.

        Raises
        ------
        ValueError
            If ``data.scores`` is None or a score lies outside ``[0, 1]``.
        """
        tasks, workers, scores = _valid_scores(data)
        n_workers = data.n_workers
        active = np.bincount(workers, minlength=n_workers) > 0
        fallback = plain_means(data)
        fallback_mu = np.nan_to_num(fallback, nan=0.5)  # unscored tasks: no likelihood term
        mu = fallback_mu
        # start: everybody good (as Hoiem's lecture does), sigma from the residuals around the
        # plain means
        resid = scores - mu[tasks]
        sigma = max(float(np.sqrt(np.mean(resid * resid))) if scores.size else 1.0,
                    float(self.min_sigma))
        pi = float(self.init_pi)
        w, _loglik = self._e_step(tasks, workers, scores, n_workers, mu, sigma, pi)

        def m_step(w: np.ndarray, params: tuple) -> tuple:
            weights = np.where(w >= 0.5, 1.0, 0.0) if self.hard else w
            return self._m_step(tasks, workers, scores, weights, active, fallback_mu, params[1])

        def e_step(params: tuple) -> tuple[np.ndarray, float]:
            mu, sigma, pi, _ = params
            return self._e_step(tasks, workers, scores, n_workers, mu, sigma, pi)

        w, (mu, sigma, pi, den), trace = run_em(
            w, (mu, sigma, pi, None), m_step, e_step,
            max_iter=self.max_iter, tol=self.tol, scale=max(scores.size, 1),
            name=type(self).__name__,
        )
        w = np.where(active, w, pi)
        self.means_ = np.where(den < ALL_BAD_WEIGHT, fallback, mu)
        self.good_proba_ = np.where(w >= 0.5, 1.0, 0.0) if self.hard else w
        self.sigma_ = sigma
        self.pi_ = pi
        self.log_likelihood_ = trace.history
        self.n_iter_ = trace.n_iter
        self.converged_ = trace.converged
        return self


class GaussianHardEM(GaussianBadAnnotatorEM):
    """Hard EM for Hoiem's bad-annotator model: ``P(good)`` rounded to 0/1 at every step."""

    method = "gaussian-hard-em"
    description = "hard EM for Hoiem's bad-annotator model (P(good) rounded to 0/1 each step)"
    hard = True
