"""What every class-label worker model shares: its facts (class labels, error rate, the
one-coin default method, ``[workers.dynamics]``), the world draw (true classes, the model's
confusion matrices, task features, the initial graph and its answers), the measurement of an
estimate (:func:`marketsim.workers.recorder.measure_classes`) and the frame of its words. A
class model supplies its confusion matrices, its initial answers, its per-label answers and the
sentence on how its workers answer."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import replace
from typing import Any, ClassVar, Literal

import numpy as np

from marketsim.data.labels import LabelSet
from marketsim.policies.base import MarketState
from marketsim.record.curves import CurvePoint
from marketsim.workers.base import (
    AbilityView,
    Crowd,
    MeansView,
    WorkerModel,
    World,
)
from marketsim.workers.draws import accuracy, features_then_graph
from marketsim.workers.recorder import measure_classes


class ClassWorkers(WorkerModel):
    """A worker model whose labels are classes, its workers described by confusion
    matrices; subclasses draw the matrices and the answers, and say how workers answer."""

    labels: ClassVar[Literal["classes", "scores"]] = "classes"
    metric: ClassVar[Literal["error_rate", "rmse"]] = "error_rate"
    default_method: ClassVar[str] = "one-coin-shifted-beta"
    allows_dynamics: ClassVar[bool] = True
    refit_words: ClassVar[str] = ("re-estimates every task's class and every worker's "
                                  "accuracy")
    error_words: ClassVar[str] = ("The task error rate is the fraction of tasks whose "
                                  "estimated class is wrong.")

    @abstractmethod
    def draw_confusion(self, crowd: Crowd, rng: np.random.Generator) -> np.ndarray:
        """Per-worker confusion matrices (n_workers, K, K)."""

    @abstractmethod
    def initial_answers(self, truth: np.ndarray, confusion: np.ndarray, workers: np.ndarray,
                        n_classes: int, rng: np.random.Generator) -> np.ndarray:
        """Answers of ``workers`` on tasks with true classes ``truth`` (vectorised)."""

    @abstractmethod
    def answer_words(self, classes: int, ability: AbilityView) -> str:
        """How this model's workers answer, with the options' numbers (one or more
        sentences, for ``report.md``'s Setup)."""

    def draw(self, crowd: Crowd, rng: np.random.Generator, initial: str,
             initial_rng: np.random.Generator | None) -> World:
        """True classes, confusion matrices, features (before the graph: shared by every arm),
        then the initial graph and its answers."""
        n, k = crowd.tasks.count, crowd.tasks.classes
        prior = np.asarray(crowd.tasks.prior)
        truth = rng.choice(k, size=n, p=prior).astype(np.int64)
        confusion = self.draw_confusion(crowd, rng)
        drawn = features_then_graph(crowd, truth, rng, initial, initial_rng)
        labels = self.initial_answers(truth[drawn.tasks], confusion, drawn.workers, k, drawn.rng)
        return World(truth, confusion, accuracy(confusion, prior), drawn.tasks, drawn.workers,
                      labels, self, features=drawn.features, feature_proba=drawn.feature_proba)

    def items(self, crowd: Crowd, world: World, truth: np.ndarray,
              rng: np.random.Generator) -> World:
        """``world`` with items of classes ``truth`` for tasks: a worker's answer depends on the
        item's class only (no per-task effects, so nothing is drawn; task features are data for
        the estimator and do not change answers, so the items have none)."""
        return replace(world, truth=truth, features=None)

    def measure(self, crowd: Crowd, world: World, est: Any, labels: LabelSet,
                now: float) -> tuple[CurvePoint, MarketState]:
        """Error rate of the classes, errors of the accuracies and the confusion matrices."""
        return measure_classes(crowd, world, est, labels, now)

    def describe(self, tasks: str, workers: str, classes: int, prior: tuple[float, ...],
                 ability: AbilityView, means: MeansView | None) -> str:
        """The tasks, their classes and prior, and how the workers answer."""
        prior_txt = ", ".join(f"class {i + 1} {100 * p:g} %" for i, p in enumerate(prior))
        return (f"Each replicate draws a fresh world of **{tasks} tasks** with **{classes} "
                f"classes** (class prior: {prior_txt or 'uniform'}) and **{workers} workers** "
                f"who answer under the {self.name} model: {self.answer_words(classes, ability)}")

