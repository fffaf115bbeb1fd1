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
from typing import Any, ClassVar, Literal, Self

import numpy as np
from pydantic import model_validator
from scipy.special import expit, gammaincinv, logit, ndtri

from marketsim.options import F
from marketsim.tables import Floats, KeyProblem, Table
from marketsim.workers.base import AbilityView, AnswerModel, Crowd, World
from marketsim.workers.classes import ClassWorkers
from marketsim.workers.draws import features_then_graph, one_coin_confusion
from marketsim.workers.one_coin import draw_ability, draw_answers
from marketsim.workers.words import ability_text

DIFFICULTY_DISTRIBUTIONS = ("lognormal", "gamma")
#: Keys of ``[workers.glad]`` that only one difficulty distribution reads.
DIFFICULTY_KEYS = {"lognormal": ("sigma",), "gamma": ("shape",)}
#: Largest ``|alpha_j|`` of ``[workers.glad] alpha`` (σ(50) is 1 to double precision).
MAX_ALPHA = 50.0


class GladSpec(Table):
    """``[workers.glad]`` (`model = "glad"` only)

    GLAD's generative model (Whitehill et al. 2009): worker j answers task i correctly with
    probability σ(α_j·β_i), else a uniformly chosen wrong class. β_i > 0 is the task's inverse
    difficulty (β = 1 a typical task, β → 0 a coin flip for everyone), drawn once per replicate
    from ``difficulty``; α_j is the worker's ability: σ(α_j) is their accuracy on a typical
    task, drawn as α_j = logit(p_j) with p_j from `[workers.ability]` unless ``alpha`` lists
    one per worker (as `marketsim calibrate` wrote before it chose among worlds)."""

    difficulty: Literal[DIFFICULTY_DISTRIBUTIONS] = F(  # type: ignore[valid-type]
        "lognormal", "distribution of the tasks' inverse difficulty βᵢ: log βᵢ ~ N(0, sigma²), "
        "or βᵢ ~ Gamma(shape, scale 1/shape) (mean 1)")
    sigma: float = F(1.0, "`lognormal`: standard deviation of log βᵢ; 0 = every task equally "
                     "hard (βᵢ = 1)", ge=0, le=10)
    shape: float = F(2.0, "`gamma`: shape of βᵢ ~ Gamma(shape, 1/shape); large = equal tasks; "
                     "at least 0.001 (below it virtually every βᵢ underflows to 0: every task "
                     "a coin flip, and the difficulty's quantiles are no longer numbers)",
                     ge=1e-3, le=1e6)
    alpha: Floats | None = F(None, "one α_j per worker (workers.count numbers in [-50, 50]); "
                             "else α_j = logit(p_j), p_j drawn from [workers.ability]",
                             shown="from [workers.ability]")

    @model_validator(mode="after")
    def _glad_keys(self) -> Self:
        for difficulty, keys in DIFFICULTY_KEYS.items():
            wrong = [k for k in keys
                     if k in self.model_fields_set and self.difficulty != difficulty]
            if wrong:
                raise KeyProblem(wrong[0], f"applies only to difficulty '{difficulty}', not "
                                 f"{self.difficulty!r}")
        if self.alpha is not None and any(not abs(a) <= MAX_ALPHA for a in self.alpha):
            raise KeyProblem("alpha", f"entries must lie in [-{MAX_ALPHA:g}, {MAX_ALPHA:g}]")
        return self

    def as_written(self) -> dict[str, Any]:
        """The difficulty and the key that distribution reads."""
        unread = {k for d, keys in DIFFICULTY_KEYS.items() if d != self.difficulty
                  for k in keys}
        return {k: v for k, v in super().as_written().items() if k not in unread}


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


def draw_alpha(spec: GladSpec, crowd: Crowd, rng: np.random.Generator
               ) -> np.ndarray:
    """Each worker's ``alpha_j``: the table's list, else ``logit(p_j)`` of drawn abilities
    (no random draw when the list is given)."""
    if spec.alpha is not None:
        return np.asarray(spec.alpha, dtype=np.float64)
    p = draw_ability(crowd, crowd.workers.count, rng)
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

    name: ClassVar[str] = "glad"
    summary: ClassVar[str] = (
        "tasks of different difficulty (GLAD, Whitehill et al. 2009): right with probability "
        "sigmoid(alpha_j * beta_i), beta_i log-normal or gamma, else a uniform wrong class")
    table: ClassVar[str | None] = "glad"
    Options: ClassVar[type[Table]] = GladSpec

    def ability_unread(self) -> str | None:
        """``alpha`` gives every worker's ability: the distribution is not read."""
        if self.options.alpha is not None:
            return "does not apply when workers.glad.alpha gives every worker's ability"
        return None

    def crowd_problem(self, n_classes: int, n_workers: int) -> tuple[str, str] | None:
        """``alpha`` has one entry per worker."""
        alpha = self.options.alpha
        if alpha is not None and len(alpha) != n_workers:
            return "glad.alpha", (f"must have workers.count = {n_workers} entries (one per "
                                  f"worker), got {len(alpha)}")
        return None

    def draw_confusion(self, crowd: Crowd, rng: np.random.Generator) -> np.ndarray:
        """One-coin matrices of each worker's accuracy averaged over task difficulty."""
        alpha = draw_alpha(self.options, crowd, rng)
        return one_coin_confusion(mean_accuracy(alpha, self.options), crowd.tasks.classes)

    def initial_answers(self, truth: np.ndarray, confusion: np.ndarray, workers: np.ndarray,
                        n_classes: int, rng: np.random.Generator) -> np.ndarray:
        """One-coin answers of each worker's mean accuracy (:meth:`draw` draws a GLAD world's
        initial answers through each task's difficulty instead)."""
        return draw_answers(truth, confusion[workers, truth, truth], n_classes, rng)

    def draw(self, crowd: Crowd, rng: np.random.Generator, initial: str,
             initial_rng: np.random.Generator | None) -> World:
        """True classes, abilities, difficulties, features, then the initial graph and its
        answers (vectorised)."""
        n, k = crowd.tasks.count, crowd.tasks.classes
        prior = np.asarray(crowd.tasks.prior)
        truth = rng.choice(k, size=n, p=prior).astype(np.int64)
        spec = self.options
        alpha = draw_alpha(spec, crowd, rng)
        beta = draw_difficulty(spec, n, rng)
        ability = mean_accuracy(alpha, spec)
        drawn = features_then_graph(crowd, truth, rng, initial, initial_rng)
        tasks, workers = drawn.tasks, drawn.workers
        right = expit(alpha[workers] * beta[tasks])
        labels = draw_answers(truth[tasks], right, k, drawn.rng)
        return World(truth, one_coin_confusion(ability, k), ability, tasks, workers, labels,
                     self, params=GladParams(alpha, beta), features=drawn.features,
                     feature_proba=drawn.feature_proba)

    def items(self, crowd: Crowd, world: World, truth: np.ndarray,
              rng: np.random.Generator) -> World:
        """``world`` with items of classes ``truth``, each with its own inverse difficulty
        drawn as the tasks' are (:func:`draw_difficulty`), answered by the same workers."""
        beta = draw_difficulty(self.options, truth.size, rng)
        return replace(world, truth=truth, features=None,
                       params=GladParams(world.params.alpha, beta))

    def task_difficulty(self, world: World) -> np.ndarray | None:
        """``-log beta_i``: the smaller a task's inverse difficulty, the harder it is."""
        return -np.log(world.params.beta)

    def answers(self, world: World, n_classes: int, rng: np.random.Generator) -> AnswerModel:
        """Per-label GLAD answers (:class:`GladAnswers`)."""
        return GladAnswers(world.truth, world.params, n_classes, rng)

    def answer_words(self, classes: int, ability: AbilityView) -> str:
        """Right with probability σ(α_j·β_i) on tasks of drawn inverse difficulty β_i."""
        spec = self.options
        if spec.difficulty == "gamma":
            beta_txt = (f"β ~ Gamma(shape, scale 1/shape) with shape = {spec.shape:g} "
                        "(mean 1)")
        else:
            beta_txt = (f"log β ~ N(0, sigma²) with sigma = {spec.sigma:g}" if spec.sigma else
                        "β = 1 for every task (sigma 0: every task equally hard)")
        alpha: Any = spec.alpha
        if alpha:
            alpha_txt = (f"each worker's ability α_j is given in the scenario ({len(alpha)} "
                         f"values from {min(alpha):g} to {max(alpha):g})")
        else:
            alpha_txt = f"α_j = logit(p_j), where {ability_text(ability)}"
        return (f"worker j answers task i correctly with probability σ(α_j · β_i) and otherwise "
                f"gives a wrong class at random (GLAD, Whitehill et al. 2009). Each task's "
                f"inverse difficulty β_i is drawn once per replicate, {beta_txt} (β near 0: a "
                f"coin flip for everyone); {alpha_txt}.")
