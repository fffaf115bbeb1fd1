"""Continuous-score workers (``workers.model = "gaussian-scores"``), Hoiem's bad-annotator
crowd: true task means, annotator types and their scores.

A fraction ``good_fraction`` of the annotators is good and scores task ``i`` as
``N(mu_i, sigma^2)`` clipped to [0, 1] (the market's scores, like the estimator's, live in
[0, 1]); the others score uniformly on [0, 1]. True means are ``mu_i ~ Beta(alpha, beta)``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np

from marketsim.aggregation.bad_annotators import plain_means
from marketsim.data.labels import LabelSet
from marketsim.options import F
from marketsim.policies.base import MarketState
from marketsim.record.curves import CurvePoint
from marketsim.tables import Table
from marketsim.workers.base import (
    AbilityView,
    AnswerModel,
    Crowd,
    MeansView,
    WorkerModel,
    World,
)
from marketsim.workers.draws import initial_pairs
from marketsim.workers.score_metrics import good_call_accuracy, good_proba_error, task_mean_rmse


class GaussianScoresSpec(Table):
    """``[workers.gaussian_scores]`` (`model = "gaussian-scores"` only)

    Seed 001's annotators: ``round(good_fraction * count)`` good ones score task i as
    ``N(mu_i, sigma^2)`` clipped to [0, 1], the rest uniformly."""

    good_fraction: float = F(0.7, "exactly round(good_fraction × count) annotators, chosen at "
                             "random, are good", ge=0, le=1)
    sigma: float = F(0.1, "a good annotator scores task i as N(μᵢ, sigma²) clipped to [0, 1]; "
                     "a bad one uniformly on [0, 1]", gt=0, le=10)


def draw_task_means(spec: MeansView, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
    """True task means ``mu_i ~ Beta(alpha, beta)``."""
    return rng.beta(spec.alpha, spec.beta, size=n_tasks)


def draw_good(spec: GaussianScoresSpec, n_workers: int, rng: np.random.Generator) -> np.ndarray:
    """Annotator types: exactly ``round(good_fraction * n_workers)`` good ones, chosen uniformly
    (an exact count, so "30 % bad" means 30 % bad in every replicate)."""
    n_good = int(round(spec.good_fraction * n_workers))
    good = np.zeros(n_workers, dtype=bool)
    good[rng.permutation(n_workers)[:n_good]] = True
    return good


def draw_scores(
    mu: np.ndarray, good: np.ndarray, sigma: float, rng: np.random.Generator
) -> np.ndarray:
    """Scores of many (task, annotator) pairs at once: ``clip(N(mu, sigma^2), 0, 1)`` where the
    annotator is good, ``U[0, 1]`` where not (``mu``, ``good`` aligned per pair)."""
    normal = rng.standard_normal(mu.shape[0])
    uniform = rng.random(mu.shape[0])
    return np.where(good, np.clip(mu + sigma * normal, 0.0, 1.0), uniform)


def draw_score(mu: float, good: bool, sigma: float, rng: np.random.Generator) -> float:
    """One score (the market's per-label path; same distribution as :func:`draw_scores`)."""
    if good:
        return min(max(mu + sigma * float(rng.standard_normal()), 0.0), 1.0)
    return float(rng.random())


@dataclass(frozen=True)
class ScoreParams:
    """A score world's hidden parameters: true task means (n_tasks,), annotator types
    (n_workers,) and the good annotators' noise."""

    means: np.ndarray
    good: np.ndarray
    sigma: float


class ScoreAnswers:
    """Per-label continuous scores (:func:`draw_score`); the class label is always 0."""

    def __init__(
        self, means: np.ndarray, good: np.ndarray, sigma: float, rng: np.random.Generator
    ) -> None:
        self.means = means
        self.good = good
        self.sigma = sigma
        self.rng = rng

    def answer(self, task: int, worker: int) -> tuple[int, float | None]:
        """Label 0 and the annotator's score for ``task``."""
        return 0, draw_score(float(self.means[task]), bool(self.good[worker]), self.sigma, self.rng)


class GaussianScoreWorkers(WorkerModel):
    """The gaussian-scores worker model: its world, its answers, and what the recorder
    measures (the RMSE of the task means, :mod:`marketsim.workers.score_metrics`)."""

    name: ClassVar[str] = "gaussian-scores"
    summary: ClassVar[str] = (
        "continuous scores in [0, 1] (Hoiem's bad-annotator model): a fraction good_fraction "
        "of annotators score N(mu_i, sigma^2) clipped to [0, 1], the rest uniformly at random")
    labels: ClassVar[Literal["classes", "scores"]] = "scores"
    metric: ClassVar[Literal["error_rate", "rmse"]] = "rmse"
    default_method: ClassVar[str] = "gaussian-em"
    table: ClassVar[str | None] = "gaussian_scores"
    Options: ClassVar[type[Table]] = GaussianScoresSpec
    refit_words: ClassVar[str] = ("re-estimates every task's mean and every annotator's "
                                  "probability of being good")
    error_words: ClassVar[str] = (
        "The headline error is the root-mean-square error (RMSE) of the estimated task means "
        "against the true ones; a task without any score counts with the mean of the "
        "task-mean distribution.")

    def ability_unread(self) -> str | None:
        """Annotators are good or bad (``good_fraction``): no accuracy distribution."""
        return f"does not apply with workers.model = '{self.name}' (see workers.{self.table})"

    def draw(self, crowd: Crowd, rng: np.random.Generator, initial: str,
             initial_rng: np.random.Generator | None) -> World:
        """Task means, annotator types, then the scored initial graph.

        ``truth`` is all 0 and ``confusion`` a (n_workers, 1, 1) array of ones (one "class"), so
        class-based bookkeeping stays well defined; ``ability`` is 1 for good annotators, else
        0."""
        n, m = crowd.tasks.count, crowd.workers.count
        spec = self.options
        assert crowd.tasks.means is not None
        mu = draw_task_means(crowd.tasks.means, n, rng)
        good = draw_good(spec, m, rng)
        graph_rng = rng if initial_rng is None else initial_rng
        tasks, workers = initial_pairs(crowd, initial, graph_rng)
        scores = draw_scores(mu[tasks], good[workers], spec.sigma, graph_rng)
        return World(
            truth=np.zeros(n, dtype=np.int64),
            confusion=np.ones((m, 1, 1)),
            ability=good.astype(np.float64),
            initial_tasks=tasks,
            initial_workers=workers,
            initial_labels=np.zeros(tasks.size, dtype=np.int64),
            model=self,
            initial_scores=scores,
            params=ScoreParams(mu, good, spec.sigma),
        )

    def items(self, crowd: Crowd, world: World, truth: np.ndarray,
              rng: np.random.Generator) -> World:
        """``world`` with ``truth.size`` other items, each with its own true mean drawn as the
        tasks' are (:func:`draw_task_means`; the class is always 0)."""
        p: ScoreParams = world.params
        assert crowd.tasks.means is not None
        means = draw_task_means(crowd.tasks.means, truth.size, rng)
        return replace(world, truth=np.zeros(truth.size, dtype=np.int64),
                       params=ScoreParams(means, p.good, p.sigma))

    def answers(self, world: World, n_classes: int, rng: np.random.Generator) -> AnswerModel:
        """Per-label scores (:class:`ScoreAnswers`)."""
        p: ScoreParams = world.params
        return ScoreAnswers(p.means, p.good, p.sigma, rng)

    def measure(self, crowd: Crowd, world: World, est: Any, labels: LabelSet,
                now: float) -> tuple[CurvePoint, MarketState]:
        """RMSE of the estimated and the plain task means, the good/bad calls; the policy sees
        the means, ``P(good)`` and the noise."""
        p: ScoreParams = world.params
        assert crowd.tasks.means is not None
        fill = crowd.tasks.means.mean
        means = np.asarray(est.means_, dtype=np.float64)
        good_proba = np.asarray(est.good_proba_, dtype=np.float64)
        seen = labels.worker_degree > 0
        rmse = task_mean_rmse(means, p.means, fill)
        point = CurvePoint(
            edges=labels.n_labels,
            error_rate=rmse,
            ability_error=good_proba_error(good_proba, p.good, seen),
            sim_time=now,
            rmse=rmse,
            plain_rmse=task_mean_rmse(plain_means(labels), p.means, fill),
            good_accuracy=good_call_accuracy(good_proba, p.good, seen),
        )
        state = MarketState(
            labels, np.ones((labels.n_tasks, 1)), good_proba, labels.n_labels,
            crowd.budget.edges, means=means, good_proba=good_proba, sigma=float(est.sigma_),
        )
        return point, state

    def describe(self, tasks: str, workers: str, classes: int, prior: tuple[float, ...],
                 ability: AbilityView, means: MeansView | None) -> str:
        """Task means, good and bad annotators (Hoiem's bad-annotator problem)."""
        good, sigma = self.options.good_fraction, self.options.sigma
        a, b = (means.alpha, means.beta) if means is not None else (1.0, 1.0)
        return (f"Each replicate draws a fresh world of **{tasks} tasks**, each with a true "
                f"mean score drawn from Beta({a:g}, {b:g}) on [0, 1], and **{workers} "
                f"annotators** (the {self.name} model of Hoiem's bad-annotator problem): "
                f"{100 * good:g} % of them are good and score a task as its true mean plus "
                f"Gaussian noise of standard deviation {sigma:g} (clipped to [0, 1]); the "
                "others are bad and score uniformly at random on [0, 1]. Nobody is told who is "
                "good.")
