"""Continuous-score workers (``workers.model = "gaussian-scores"``), Hoiem's bad-annotator
crowd: true task means, annotator types and their scores.

A fraction ``good_fraction`` of the annotators is good and scores task ``i`` as
``N(mu_i, sigma^2)`` clipped to [0, 1] (the market's scores, like the estimator's, live in
[0, 1]); the others score uniformly on [0, 1]. True means are ``mu_i ~ Beta(alpha, beta)``.
"""

from __future__ import annotations

import numpy as np

from marketsim.scenario.specs import GaussianScoresSpec, TaskMeansSpec


def draw_task_means(spec: TaskMeansSpec, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
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
