"""Workers on tasks of different difficulty (``workers.model = "glad"``), GLAD's generative
model (Whitehill et al. 2009): worker ``j`` answers task ``i`` correctly with probability
``sigmoid(alpha_j * beta_i)``, else a uniformly chosen wrong class.

``beta_i > 0`` is the task's inverse difficulty, drawn once per replicate (shared by every
arm): ``log beta_i ~ N(0, sigma^2)`` or ``beta_i ~ Gamma(shape, 1/shape)``. ``alpha_j`` is the
worker's ability, given per worker (``[workers.glad] alpha``, as ``marketsim calibrate`` wrote
it) or ``logit(p_j)`` with ``p_j`` drawn from ``[workers.ability]``. The world's confusion
matrices are one-coin matrices of each worker's accuracy averaged over the difficulty
distribution, ``E_beta[sigmoid(alpha_j * beta)]`` (what the recorder's ability error compares
estimates with).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import expit, gammaincinv, logit, ndtri

from marketsim.market.answers import AnswerModel
from marketsim.market.answers.classes import ClassWorkers
from marketsim.market.answers.one_coin import draw_ability, draw_answers
from marketsim.market.task_features import draw_feature_proba, draw_task_features
from marketsim.market.world import World, initial_pairs, one_coin_confusion
from marketsim.scenario.specs import Scenario
from marketsim.scenario.worker_models import GladSpec

#: Quantile points of the difficulty distribution averaged over for a worker's mean accuracy.
QUANTILES = 256
#: Accuracies drawn from ``[workers.ability]`` are kept this far from 0 and 1 (finite logits).
EDGE = 1e-9


def draw_difficulty(spec: GladSpec, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
    """Each task's inverse difficulty ``beta_i > 0`` (one draw per task)."""
    if spec.difficulty == "gamma":
        return rng.gamma(spec.shape, 1.0 / spec.shape, size=n_tasks)
    return np.exp(spec.sigma * rng.standard_normal(n_tasks))


def difficulty_quantiles(spec: GladSpec, points: int = QUANTILES) -> np.ndarray:
    """``points`` equally likely values of ``beta`` (mid-quantiles of its distribution)."""
    u = (np.arange(points) + 0.5) / points
    # scipy.stats' gamma.ppf and norm.ppf compute exactly these (same floats), without the
    # 0.5 s import of scipy.stats in every worker process
    if spec.difficulty == "gamma":
        return np.asarray(gammaincinv(spec.shape, u) * (1.0 / spec.shape))
    return np.exp(spec.sigma * ndtri(u))


def draw_alpha(scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
    """Each worker's ``alpha_j``: the scenario's list, else ``logit(p_j)`` of drawn abilities
    (no random draw when the list is given)."""
    spec = scenario.workers.glad
    if spec.alpha is not None:
        return np.asarray(spec.alpha, dtype=np.float64)
    p = draw_ability(scenario, scenario.workers.count, rng)
    return np.asarray(logit(np.clip(p, EDGE, 1.0 - EDGE)))


def mean_accuracy(alpha: np.ndarray, spec: GladSpec) -> np.ndarray:
    """``E_beta[sigmoid(alpha_j * beta)]`` per worker (vectorised over workers and quantiles)."""
    beta = difficulty_quantiles(spec)
    return np.asarray(expit(alpha[:, None] * beta[None, :]).mean(axis=1))


@dataclass(frozen=True)
class GladParams:
    """A GLAD world's hidden parameters: ``alpha`` (n_workers,) and ``beta`` (n_tasks,)."""

    alpha: np.ndarray
    beta: np.ndarray


class GladAnswers:
    """Per-label GLAD answers: right with ``sigmoid(alpha_j * beta_i)``, else a uniformly
    chosen wrong class (a second draw only when K > 2)."""

    def __init__(self, truth: np.ndarray, params: GladParams, n_classes: int,
                 rng: np.random.Generator) -> None:
        self.truth = truth
        self.alpha = params.alpha.tolist()
        self.beta = params.beta.tolist()
        self.n_classes = n_classes
        self.rng = rng

    def answer(self, task: int, worker: int) -> tuple[int, float | None]:
        """The worker's label for ``task`` (no score)."""
        truth = int(self.truth[task])
        x = self.alpha[worker] * self.beta[task]
        right = 1.0 / (1.0 + math.exp(-x)) if x >= 0 else 1.0 - 1.0 / (1.0 + math.exp(x))
        if self.rng.random() < right:
            return truth, None
        k = self.n_classes
        return (1 - truth if k == 2 else (truth + int(self.rng.integers(1, k))) % k), None

    def answer_shifted(self, task: int, worker: int, shift: float) -> tuple[int, float | None]:
        """The label right with ``sigmoid(alpha_j * beta_i + shift)`` (the same draws as
        :meth:`answer`; ``[workers.dynamics]``)."""
        truth = int(self.truth[task])
        x = self.alpha[worker] * self.beta[task] + shift
        right = 1.0 / (1.0 + math.exp(-x)) if x >= 0 else 1.0 - 1.0 / (1.0 + math.exp(x))
        if self.rng.random() < right:
            return truth, None
        k = self.n_classes
        return (1 - truth if k == 2 else (truth + int(self.rng.integers(1, k))) % k), None


class GladWorkers(ClassWorkers):
    """The GLAD worker model: per-worker abilities, per-task difficulties."""

    def draw_confusion(self, scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
        """One-coin matrices of each worker's accuracy averaged over task difficulty."""
        alpha = draw_alpha(scenario, rng)
        return one_coin_confusion(mean_accuracy(alpha, scenario.workers.glad),
                                  scenario.tasks.classes)

    def initial_answers(self, truth: np.ndarray, confusion: np.ndarray, workers: np.ndarray,
                        n_classes: int, rng: np.random.Generator) -> np.ndarray:
        """Not used: a GLAD world's initial answers depend on the tasks (see :meth:`draw`)."""
        raise NotImplementedError("GladWorkers draws its initial answers in draw()")

    def draw(self, scenario: Scenario, rng: np.random.Generator, initial: str,
             initial_rng: np.random.Generator | None) -> World:
        """True classes, abilities, difficulties, features, then the initial graph and its
        answers (vectorised)."""
        n, k = scenario.tasks.count, scenario.tasks.classes
        prior = np.asarray(scenario.tasks.prior)
        truth = rng.choice(k, size=n, p=prior).astype(np.int64)
        spec = scenario.workers.glad
        alpha = draw_alpha(scenario, rng)
        beta = draw_difficulty(spec, n, rng)
        ability = mean_accuracy(alpha, spec)
        features = phi = None
        if scenario.tasks.features is not None:
            phi = draw_feature_proba(scenario.tasks.features, k, rng)
            features = draw_task_features(truth, phi, rng)
        graph_rng = rng if initial_rng is None else initial_rng
        tasks, workers = initial_pairs(scenario, initial, graph_rng)
        right = expit(alpha[workers] * beta[tasks])
        labels = draw_answers(truth[tasks], right, k, graph_rng)
        return World(truth, one_coin_confusion(ability, k), ability, tasks, workers, labels,
                     self, params=GladParams(alpha, beta), features=features,
                     feature_proba=phi)

    def items(self, scenario: Scenario, world: World, truth: np.ndarray,
              rng: np.random.Generator) -> World:
        """``world`` with items of classes ``truth``, each with its own inverse difficulty
        drawn as the tasks' are (:func:`draw_difficulty`), answered by the same workers."""
        beta = draw_difficulty(scenario.workers.glad, truth.size, rng)
        return replace(world, truth=truth, features=None,
                       params=GladParams(world.params.alpha, beta))

    def answers(self, world: World, n_classes: int, rng: np.random.Generator) -> AnswerModel:
        """Per-label GLAD answers (:class:`GladAnswers`)."""
        return GladAnswers(world.truth, world.params, n_classes, rng)
