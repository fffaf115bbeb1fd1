"""The recorder: at every refresh it measures the fitted estimator against the world (one
:class:`~marketsim.record.curves.CurvePoint`) and builds the policy's view of the market
(:class:`~marketsim.policies.base.MarketState`).

Class markets record the error rate of the estimated classes and the mean absolute errors of the
estimated accuracies and confusion matrices of the workers seen so far; continuous-score markets
record the RMSE of the task means (see :mod:`marketsim.market.score_metrics`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.aggregation.base import BaseAggregator
from marketsim.aggregation.bad_annotators import plain_means
from marketsim.aggregation.metrics import error_rate, estimated_skill
from marketsim.data.labels import LabelSet
from marketsim.market.answers.one_coin import one_coin_confusion
from marketsim.market.score_metrics import good_call_accuracy, good_proba_error, task_mean_rmse
from marketsim.market.world import World
from marketsim.policies.base import MarketState
from marketsim.record.curves import CurvePoint
from marketsim.scenario.specs import Scenario


def estimated_confusion(estimator: BaseAggregator, skill: np.ndarray, k: int) -> np.ndarray:
    """Per-worker confusion matrices: ``confusion_`` when the model has them, else the one-coin
    matrices implied by the estimated accuracies."""
    if hasattr(estimator, "confusion_"):
        return np.asarray(estimator.confusion_)

    return one_coin_confusion(np.asarray(skill, dtype=np.float64), k)


def skill_counts(proba: np.ndarray, labels: LabelSet) -> np.ndarray:
    """(n_workers, 2): each worker's expected numbers of correct and wrong task labels under
    the posterior ``proba`` (vectorised with ``np.bincount``)."""
    right = np.asarray(proba)[labels.tasks, labels.labels]
    correct = np.bincount(labels.workers, weights=right, minlength=labels.n_workers)
    return np.stack([correct, labels.worker_degree - correct], axis=1)


class Recorder:
    """Measures a market's estimates against its world."""

    def __init__(self, scenario: Scenario, world: World) -> None:
        self.scenario = scenario
        self.world = world
        self.n_classes = scenario.tasks.classes
        self.budget = scenario.budget.edges

    def sample(self, est: Any, labels: LabelSet, now: float) -> tuple[CurvePoint, MarketState]:
        """The curve point at simulated time ``now`` and the policy's view."""
        if self.world.continuous:
            return self._sample_scores(est, labels, now)
        return self._sample_classes(est, labels, now)

    def _sample_scores(
        self, est: Any, labels: LabelSet, now: float
    ) -> tuple[CurvePoint, MarketState]:
        """Recorder and policy view of a continuous-score market."""
        w = self.world
        assert w.means is not None and w.good is not None
        assert self.scenario.tasks.means is not None
        fill = self.scenario.tasks.means.mean
        means = np.asarray(est.means_, dtype=np.float64)
        good_proba = np.asarray(est.good_proba_, dtype=np.float64)
        seen = labels.worker_degree > 0
        rmse = task_mean_rmse(means, w.means, fill)
        point = CurvePoint(
            edges=labels.n_labels,
            error_rate=rmse,
            ability_error=good_proba_error(good_proba, w.good, seen),
            sim_time=now,
            rmse=rmse,
            plain_rmse=task_mean_rmse(plain_means(labels), w.means, fill),
            good_accuracy=good_call_accuracy(good_proba, w.good, seen),
        )
        state = MarketState(
            labels, np.ones((labels.n_tasks, 1)), good_proba, labels.n_labels, self.budget,
            means=means, good_proba=good_proba, sigma=float(est.sigma_),
        )
        return point, state

    def _sample_classes(
        self, est: Any, labels: LabelSet, now: float
    ) -> tuple[CurvePoint, MarketState]:
        """Recorder and policy view of a market with class labels."""
        skill = estimated_skill(est, labels)
        seen = labels.worker_degree > 0
        ability_error = (
            float(np.mean(np.abs(skill[seen] - self.world.ability[seen]))) if seen.any() else 0.0
        )
        confusion = estimated_confusion(est, skill, self.n_classes)
        confusion_error = (
            float(np.mean(np.abs(confusion[seen] - self.world.confusion[seen])))
            if seen.any() else 0.0
        )
        point = CurvePoint(
            edges=labels.n_labels,
            error_rate=error_rate(est.labels_, self.world.truth),
            ability_error=ability_error,
            confusion_error=confusion_error,
            sim_time=now,
        )
        counts = skill_counts(est.proba_, labels)
        return point, MarketState(labels, est.proba_, skill, labels.n_labels, self.budget,
                                  confusion=confusion, skill_counts=counts)
