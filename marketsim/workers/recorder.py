"""The recorder of class-label markets: at every refresh the world's worker model measures the
fitted estimator against the world (one :class:`~marketsim.record.curves.CurvePoint`) and
builds the policy's view of the market (:class:`~marketsim.policies.base.MarketState`).

Every class-label worker model measures with :func:`measure_classes`: the error rate of the
estimated classes and the mean absolute errors of the estimated accuracies and confusion
matrices of the workers seen so far. A model whose labels are scores measures itself (see
:class:`~marketsim.workers.gaussian_scores.GaussianScoreWorkers`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.aggregation.base import BaseAggregator
from marketsim.aggregation.metrics import error_rate, estimated_skill
from marketsim.data.labels import LabelSet
from marketsim.policies.base import MarketState
from marketsim.record.curves import CurvePoint
from marketsim.workers.base import Crowd, World
from marketsim.workers.draws import one_coin_confusion


def estimated_confusion(estimator: BaseAggregator, skill: np.ndarray, k: int) -> np.ndarray:
    """Per-worker confusion matrices: ``confusion_`` when the model has them, else the one-coin
    matrices implied by the estimated accuracies."""
    if hasattr(estimator, "confusion_"):
        return np.asarray(estimator.confusion_)

    return one_coin_confusion(np.asarray(skill, dtype=np.float64), k)


#: Labels read per block by :func:`skill_counts` (its temporaries stay this size).
BLOCK = 1 << 16


def skill_counts(proba: np.ndarray, labels: LabelSet) -> np.ndarray:
    """(n_workers, 2): each worker's expected numbers of correct and wrong task labels under
    the posterior ``proba``. Vectorised, a block of labels at a time (``np.add.at`` goes on
    adding in label order where ``np.bincount`` stopped: the same bits), so that a big market's
    refresh holds no per-label temporary beyond a block."""
    proba = np.asarray(proba)
    tasks, workers, classes = labels.compact_arrays()
    right = proba[tasks[:BLOCK], classes[:BLOCK]]
    correct = np.bincount(workers[:BLOCK], weights=right, minlength=labels.n_workers)
    for a in range(BLOCK, labels.n_labels, BLOCK):
        b = a + BLOCK
        np.add.at(correct, workers[a:b], proba[tasks[a:b], classes[a:b]])
    return np.stack([correct, labels.worker_degree - correct], axis=1)


def measure_classes(
    crowd: Crowd, world: World, est: Any, labels: LabelSet, now: float
) -> tuple[CurvePoint, MarketState]:
    """The curve point and the policy's view of a market with class labels: the error rate of
    the estimated classes, the mean absolute errors of the estimated accuracies and confusion
    matrices of the human workers seen so far (in a mixed market the machine annotators come
    after the humans in ``labels`` and have no true ability in the world: they are left out)."""
    skill = estimated_skill(est, labels)
    humans = world.ability.size
    seen = labels.worker_degree[:humans] > 0
    ability_error = (
        float(np.mean(np.abs(skill[:humans][seen] - world.ability[seen]))) if seen.any()
        else 0.0
    )
    confusion = estimated_confusion(est, skill, crowd.tasks.classes)
    confusion_error = (
        float(np.mean(np.abs(confusion[:humans][seen] - world.confusion[seen])))
        if seen.any() else 0.0
    )
    point = CurvePoint(
        edges=labels.n_labels,
        error_rate=error_rate(est.labels_, world.truth),
        ability_error=ability_error,
        confusion_error=confusion_error,
        sim_time=now,
    )
    counts = skill_counts(est.proba_, labels)
    return point, MarketState(labels, est.proba_, skill, labels.n_labels, crowd.budget.edges,
                              confusion=confusion, skill_counts=counts)
