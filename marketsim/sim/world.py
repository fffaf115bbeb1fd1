"""The hidden world of one replicate: true classes, worker abilities and the initial graph.

Drawn once per replicate and shared by every arm (common random numbers), so differences
between arms are the policies' and the estimators' own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marketsim.sim.scenario import Scenario


@dataclass(frozen=True)
class World:
    """True classes (n_tasks,), abilities (n_workers,), initial (task, worker) pairs and answers."""

    truth: np.ndarray
    ability: np.ndarray
    initial_tasks: np.ndarray
    initial_workers: np.ndarray
    initial_labels: np.ndarray


def draw_answers(
    truth: np.ndarray, ability: np.ndarray, n_classes: int, rng: np.random.Generator
) -> np.ndarray:
    """One-coin answers: the true class with probability ``ability``, else a uniform wrong one."""
    correct = rng.random(truth.shape[0]) < ability
    if n_classes == 2:
        wrong = 1 - truth
    else:
        wrong = (truth + rng.integers(1, n_classes, size=truth.shape[0])) % n_classes
    return np.where(correct, truth, wrong).astype(np.int64)


def draw_ability(scenario: Scenario, n: int, rng: np.random.Generator) -> np.ndarray:
    """``low + (1 - low) Beta(alpha, beta)`` abilities."""
    ab = scenario.workers.ability
    return ab.low + (1.0 - ab.low) * rng.beta(ab.alpha, ab.beta, size=n)


def draw_world(scenario: Scenario, rng: np.random.Generator) -> World:
    """Draw a replicate's world. The initial graph gives each task one label, workers assigned
    round-robin over a random task order (seed 000's 2,000 initial edges)."""
    n = scenario.tasks.count
    m = scenario.workers.count
    k = scenario.tasks.classes
    truth = rng.choice(k, size=n, p=np.asarray(scenario.tasks.prior)).astype(np.int64)
    ability = draw_ability(scenario, m, rng)
    if scenario.budget.initial == "one-per-task":
        tasks = rng.permutation(n).astype(np.int64)
        workers = (np.arange(n) % m).astype(np.int64)
        order = np.argsort(tasks, kind="stable")
        tasks, workers = tasks[order], workers[order]
    else:
        tasks = np.zeros(0, dtype=np.int64)
        workers = np.zeros(0, dtype=np.int64)
    labels = draw_answers(truth[tasks], ability[workers], k, rng)
    return World(truth, ability, tasks, workers, labels)
