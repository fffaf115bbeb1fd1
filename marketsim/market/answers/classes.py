"""What every class-label worker model shares: the world draw (true classes, the model's
confusion matrices, task features, the initial graph and its answers) and the measurement of
an estimate (:func:`marketsim.market.recorder.measure_classes`). A class model supplies its
confusion matrices, its initial answers and its per-label answers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import replace
from typing import Any

import numpy as np

from marketsim.data.labels import LabelSet
from marketsim.market.answers import AnswerModel
from marketsim.market.recorder import measure_classes
from marketsim.market.task_features import draw_feature_proba, draw_task_features
from marketsim.market.world import World, accuracy, initial_pairs
from marketsim.policies.base import MarketState
from marketsim.record.curves import CurvePoint
from marketsim.scenario.specs import Scenario
from marketsim.scenario.worker_models import WORKER_MODEL_FACTS


class ClassWorkers(ABC):
    """A worker model whose labels are classes, its workers described by confusion
    matrices; subclasses draw the matrices and the answers."""

    def __init__(self, name: str) -> None:
        self.facts = WORKER_MODEL_FACTS[name]

    @abstractmethod
    def draw_confusion(self, scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
        """Per-worker confusion matrices (n_workers, K, K)."""

    @abstractmethod
    def initial_answers(self, truth: np.ndarray, confusion: np.ndarray, workers: np.ndarray,
                        n_classes: int, rng: np.random.Generator) -> np.ndarray:
        """Answers of ``workers`` on tasks with true classes ``truth`` (vectorised)."""

    @abstractmethod
    def answers(self, world: World, n_classes: int, rng: np.random.Generator) -> AnswerModel:
        """The per-label answers of ``world``'s workers."""

    def draw(self, scenario: Scenario, rng: np.random.Generator, initial: str,
             initial_rng: np.random.Generator | None) -> World:
        """True classes, confusion matrices, features (before the graph: shared by every arm),
        then the initial graph and its answers."""
        n, k = scenario.tasks.count, scenario.tasks.classes
        prior = np.asarray(scenario.tasks.prior)
        truth = rng.choice(k, size=n, p=prior).astype(np.int64)
        confusion = self.draw_confusion(scenario, rng)
        features = phi = None
        if scenario.tasks.features is not None:
            phi = draw_feature_proba(scenario.tasks.features, k, rng)
            features = draw_task_features(truth, phi, rng)
        graph_rng = rng if initial_rng is None else initial_rng
        tasks, workers = initial_pairs(scenario, initial, graph_rng)
        labels = self.initial_answers(truth[tasks], confusion, workers, k, graph_rng)
        return World(truth, confusion, accuracy(confusion, prior), tasks, workers, labels, self,
                     features=features, feature_proba=phi)

    def items(self, scenario: Scenario, world: World, truth: np.ndarray,
              rng: np.random.Generator) -> World:
        """``world`` with items of classes ``truth`` for tasks: a worker's answer depends on the
        item's class only (no per-task effects, so nothing is drawn; task features are data for
        the estimator and do not change answers, so the items have none)."""
        return replace(world, truth=truth, features=None)

    def measure(self, scenario: Scenario, world: World, est: Any, labels: LabelSet,
                now: float) -> tuple[CurvePoint, MarketState]:
        """Error rate of the classes, errors of the accuracies and the confusion matrices."""
        return measure_classes(scenario, world, est, labels, now)
