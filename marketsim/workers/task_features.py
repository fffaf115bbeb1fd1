"""Binary task features for the market (Jin & Zhang 2010): naive Bayes,
``x_if ~ Bernoulli(phi[t_i, f])`` given the task's true class ``t_i``."""

from __future__ import annotations

import numpy as np

from marketsim.aggregation.features import simulate_features
from marketsim.workers.base import FeaturesView


def draw_feature_proba(spec: FeaturesView, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    """``phi`` (K, count): the scenario's explicit probabilities, else
    ``phi[c, f] ~ U[1/2 - informativeness/2, 1/2 + informativeness/2]`` (one draw per replicate;
    nothing is drawn for explicit probabilities)."""
    if spec.probabilities is not None:
        return np.asarray(spec.probabilities, dtype=np.float64)
    half = 0.5 * spec.informativeness
    return rng.uniform(0.5 - half, 0.5 + half, size=(n_classes, spec.count))


def draw_task_features(
    truth: np.ndarray, phi: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Features ``(n_tasks, count)`` of 0.0/1.0, drawn from the true classes."""
    return simulate_features(truth, phi, random_state=rng)
