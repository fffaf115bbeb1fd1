"""Uncertainty sampling for continuous tasks (Hoiem's bad-annotator model): label next the task
whose mean is least certain.

With the annotator types fixed at their fitted ``P(good) = w_a`` and the good annotators' noise
at the fitted ``sigma``, task ``i``'s mean is a precision-weighted average of its scores, and
under a flat prior its posterior variance is

    ``Var(mu_i) = sigma^2 / W_i``,   ``W_i = sum_{a scored i} w_a``

(each score counts as ``w_a`` of a good annotator's ``N(mu_i, sigma^2)`` observation). Tasks
without a score, or scored only by annotators believed bad (``W_i = 0``), have infinite variance
and come first. Ties (e.g. among unscored tasks) are broken uniformly at random.
"""

from __future__ import annotations

import numpy as np

from marketsim.errors import InputError
from marketsim.options import Options
from marketsim.policies.base import MarketInfo, MarketState, Policy
from marketsim.policies.simple import rank_by_score

DESCRIPTION = (
    "Uncertainty (continuous scores) sends labels to the tasks whose estimated mean is least "
    "certain: the posterior variance of a task's mean is sigma^2 divided by the summed "
    "P(good) of the annotators who scored it, so tasks scored by few or by untrusted "
    "annotators come first and unscored tasks before everything. It needs the inference "
    "service's fitted annotator weights and noise (gaussian-em or gaussian-hard-em) and only "
    "runs in gaussian-scores markets."
)


def posterior_variance(
    tasks: np.ndarray, workers: np.ndarray, good_proba: np.ndarray, sigma: float, n_tasks: int
) -> np.ndarray:
    """``sigma^2 / W_i`` per task, ``W_i`` the summed ``P(good)`` of the task's scorers
    (``inf`` where ``W_i = 0``); one ``np.bincount`` over the labels."""
    weight = np.bincount(tasks, weights=good_proba[workers], minlength=n_tasks)
    with np.errstate(divide="ignore"):
        return np.where(weight > 0, sigma**2 / np.where(weight > 0, weight, 1.0), np.inf)


class UncertaintyPolicy(Policy[Options]):
    """Largest posterior variance of the task mean first (continuous-score markets)."""

    name = "uncertainty"
    #: Ranks by the variance of continuous task means: score markets only.
    markets = ("scores",)
    description = DESCRIPTION

    def bind(self, info: MarketInfo) -> None:
        """Remember the number of tasks."""
        self.n_tasks = info.n_tasks

    def variance(self, state: MarketState) -> np.ndarray:
        """Posterior variance of every task mean from the state's fitted model."""
        if state.good_proba is None or state.sigma is None:
            raise InputError(
                "the uncertainty policy needs a continuous-score market (workers.model = "
                "'gaussian-scores') whose inference gives P(good) and sigma"
            )
        lab = state.labels
        good = np.asarray(state.good_proba, dtype=np.float64)
        return posterior_variance(lab.tasks, lab.workers, good, float(state.sigma), lab.n_tasks)

    def rank(self, state: MarketState, rng: np.random.Generator) -> np.ndarray:
        """All task indices by descending posterior variance, random tie-break."""
        return rank_by_score(self.variance(state), rng)
