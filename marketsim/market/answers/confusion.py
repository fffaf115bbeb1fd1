"""Confusion-matrix workers (``workers.model = "confusion"``): worker ``j`` answers ``l`` on a
task of true class ``c`` with probability ``confusion[j, c, l]``. The matrices are
``diagonal-uniform`` (diagonal ``U[low, high]``, the rest spread evenly), ``dirichlet`` (rows
``Dirichlet(concentration * (1 + diagonal_weight * e_c))``) or ``per-worker`` (given, as
``marketsim calibrate`` writes them). With look-alike tasks or difficulty
(:mod:`~marketsim.market.answers.task_effects`) the answers go through those."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from marketsim.market.answers import AnswerModel
from marketsim.market.answers.classes import ClassWorkers
from marketsim.market.answers.dynamics import shifted
from marketsim.market.answers.task_effects import (
    EffectAnswers,
    EffectParams,
    draw_effect_world,
    draw_item_effects,
)
from marketsim.market.answers.task_types import TaskTypes, pooled_matrices, task_types
from marketsim.market.world import World
from marketsim.scenario.specs import Scenario
from marketsim.scenario.worker_models import TaskEffects


def draw_confusion_matrices(scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
    """Per-worker confusion matrices (n_workers, K, K) of the scenario's confusion design."""
    m, k = scenario.workers.count, scenario.tasks.classes
    spec = scenario.workers.confusion
    if spec.design == "per-worker":
        return pooled_matrices(spec, k)
    if spec.design == "diagonal-uniform":
        diag = rng.uniform(spec.low, spec.high, size=(m, k))
        conf = np.repeat(((1.0 - diag) / (k - 1))[:, :, None], k, axis=2)
        idx = np.arange(k)
        conf[:, idx, idx] = diag
        return conf
    alpha = spec.concentration * (1.0 + spec.diagonal_weight * np.eye(k))
    return np.stack([rng.dirichlet(alpha[c], size=m) for c in range(k)], axis=1)


def draw_labels(
    truth: np.ndarray, confusion: np.ndarray, workers: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Answers of ``workers`` on tasks with true classes ``truth`` (vectorised)."""
    if truth.size == 0:
        return np.zeros(0, dtype=np.int64)
    rows = confusion[workers, truth]  # (n, K)
    u = rng.random((truth.shape[0], 1))
    labels = (np.cumsum(rows, axis=1) <= u).sum(axis=1)
    return np.minimum(labels, confusion.shape[2] - 1).astype(np.int64)


class ConfusionAnswers:
    """Per-label answers from confusion matrices: one uniform draw inverted through the
    cumulative row of (worker, true class)."""

    def __init__(self, truth: np.ndarray, confusion: np.ndarray, rng: np.random.Generator) -> None:
        self.truth = truth
        self.confusion = confusion
        self.cumulative = np.cumsum(confusion, axis=2)
        self.rng = rng

    def answer(self, task: int, worker: int) -> tuple[int, float | None]:
        """The worker's label for ``task`` (no score)."""
        row = self.cumulative[worker, int(self.truth[task])]
        label = min(int(np.searchsorted(row, self.rng.random(), side="right")), len(row) - 1)
        return label, None

    def answer_block(self, tasks: np.ndarray, workers: np.ndarray) -> np.ndarray:
        """The labels of a block of hand-outs at once (the block engine; :func:`draw_labels`)."""
        return draw_labels(self.truth[tasks], self.confusion, workers, self.rng)

    def answer_shifted(self, task: int, worker: int, shift: float) -> tuple[int, float | None]:
        """The label with the logit of the right class's probability shifted by ``shift``, the
        wrong classes scaled to keep their proportions (the same draw as :meth:`answer`)."""
        truth = int(self.truth[task])
        row = self.cumulative[worker, truth]
        probs = self.confusion[worker, truth]
        p0 = float(probs[truth])
        p = shifted(p0, shift)
        if p != p0:
            scaled = probs * ((1.0 - p) / (1.0 - p0))
            scaled[truth] = p
            row = np.cumsum(scaled)
        label = min(int(np.searchsorted(row, self.rng.random(), side="right")), len(row) - 1)
        return label, None


class ConfusionWorkers(ClassWorkers):
    """The confusion worker model: full per-worker confusion matrices (also a replayed crowd's
    measured matrices, which answer its gold questions)."""

    def draw_confusion(self, scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
        """The scenario's confusion design (:func:`draw_confusion_matrices`)."""
        return draw_confusion_matrices(scenario, rng)

    def task_effects(self, scenario: Scenario) -> TaskEffects:
        """The table holding this model's ``lookalike`` and ``sigma``."""
        return scenario.workers.confusion

    def task_types(self, scenario: Scenario) -> TaskTypes | None:
        """The ``per-worker`` design's task types, if given."""
        return task_types(scenario.workers.confusion, scenario.tasks.classes)

    def initial_answers(self, truth: np.ndarray, confusion: np.ndarray, workers: np.ndarray,
                        n_classes: int, rng: np.random.Generator) -> np.ndarray:
        """Answers drawn through each worker's row (:func:`draw_labels`)."""
        return draw_labels(truth, confusion, workers, rng)

    def draw(self, scenario: Scenario, rng: np.random.Generator, initial: str,
             initial_rng: np.random.Generator | None) -> World:
        """The shared class-model draw; with task effects, the matrices then the effects
        (:func:`~marketsim.market.answers.task_effects.draw_effect_world`), with the task
        types when given."""
        spec = self.task_effects(scenario)
        if not spec.has_effects:
            return super().draw(scenario, rng, initial, initial_rng)
        prior = np.asarray(scenario.tasks.prior)
        truth = rng.choice(scenario.tasks.classes, size=scenario.tasks.count,
                           p=prior).astype(np.int64)
        matrices = self.draw_confusion(scenario, rng)
        return draw_effect_world(self, scenario, spec, matrices, truth, rng, initial,
                                 initial_rng, self.task_types(scenario))

    def items(self, scenario: Scenario, world: World, truth: np.ndarray,
              rng: np.random.Generator) -> World:
        """``world`` with items of classes ``truth``; with task effects, each item's own
        look-alike class, difficulty and type (:func:`~marketsim.market.answers.task_effects.
        draw_item_effects`, the tasks' distributions)."""
        items = super().items(scenario, world, truth, rng)
        if not isinstance(world.params, EffectParams):
            return items
        return replace(items, params=draw_item_effects(
            world.params, self.task_effects(scenario), self.task_types(scenario), truth,
            scenario.tasks.classes, rng))

    def answers(self, world: World, n_classes: int, rng: np.random.Generator) -> AnswerModel:
        """Per-label answers from the confusion matrices (:class:`ConfusionAnswers`), or
        through the task effects (:class:`~marketsim.market.answers.task_effects.
        EffectAnswers`)."""
        if isinstance(world.params, EffectParams):
            return EffectAnswers(world.params, rng, world.truth)
        return ConfusionAnswers(world.truth, world.confusion, rng)
