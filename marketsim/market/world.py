"""The hidden world of one replicate: true classes, worker confusion matrices, the worker
model's own hidden parameters and the initial graph; and the worker-model interface that draws
it and answers tasks in it.

Drawn once per replicate and shared by every arm (common random numbers), so differences
between arms are the policies' and the estimators' own. Every class-label worker model is
stored as per-worker confusion matrices ``confusion[j, c, l] = P(worker j says l | true class
c)``; the one-coin model is the special case with ``p_j`` on the diagonal. Each model's draws,
answers and measurements live in :mod:`marketsim.market.answers`, one module per model,
registered by name in :mod:`marketsim.market.worker_models`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from marketsim.data.compact_labels import compact_class_dtype, compact_id_dtype
from marketsim.data.labels import LabelSet
from marketsim.market.answers import AnswerModel
from marketsim.policies.base import MarketState
from marketsim.record.curves import CurvePoint
from marketsim.scenario.specs import Scenario
from marketsim.scenario.worker_models import WorkerModelFacts


class WorkerModel(Protocol):
    """A worker model: draws the hidden parameters of a world, answers a task in it, and
    measures an estimate against it (one curve point and the policy's view)."""

    #: Its name, label kind, headline error and methods (:mod:`marketsim.scenario.worker_models`).
    facts: WorkerModelFacts

    def draw(self, scenario: Scenario, rng: np.random.Generator, initial: str,
             initial_rng: np.random.Generator | None) -> World:
        """A replicate's world with the initial graph ``initial``, drawn from ``initial_rng``
        when given (else from ``rng``, after the world)."""

    def answers(self, world: World, n_classes: int, rng: np.random.Generator) -> AnswerModel:
        """The per-label answers of ``world``'s workers, drawn from ``rng``."""

    def items(self, scenario: Scenario, world: World, truth: np.ndarray,
              rng: np.random.Generator) -> World:
        """``world``'s workers facing other items of classes ``truth`` (gold questions): each
        item's own per-task effects (difficulty, look-alike class, type, mean), drawn from
        ``rng`` from the distributions the tasks' are drawn from; nothing is drawn for a model
        without per-task effects. Its ``answers`` then answer item ``q`` as the item it is,
        never as real task ``q``."""

    def measure(self, scenario: Scenario, world: World, est: Any, labels: LabelSet,
                now: float) -> tuple[CurvePoint, MarketState]:
        """The curve point of the fitted estimator ``est`` at simulated time ``now`` and the
        policy's view of the market."""


@dataclass(frozen=True)
class World:
    """True classes (n_tasks,), confusion matrices (n_workers, K, K), accuracy (n_workers,)
    under the class prior, the initial (task, worker, label) triples of one initial graph, and
    the worker model that drew it (the market asks it for answers and measurements)."""

    truth: np.ndarray
    confusion: np.ndarray
    ability: np.ndarray
    initial_tasks: np.ndarray
    initial_workers: np.ndarray
    initial_labels: np.ndarray
    model: WorkerModel
    #: The initial labels' scores when the model's labels are scores, else ``None``.
    initial_scores: np.ndarray | None = None
    #: The model's own hidden parameters beyond classes and confusion (e.g. task means).
    params: Any = None
    #: Task features (n_tasks, count) of 0.0/1.0 and their class-conditional probabilities.
    features: np.ndarray | None = None
    feature_proba: np.ndarray | None = None

    def __post_init__(self) -> None:
        """Hold the initial triples in the label log's compact types (int32 ids and int8
        classes when their values fit): a big world's initial graph is 9 bytes a label, not
        24, for the whole run (issue #30). The values, so every draw and result, are
        unchanged."""
        put = object.__setattr__  # frozen
        put(self, "initial_tasks", _narrowed(self.initial_tasks, compact_id_dtype))
        put(self, "initial_workers", _narrowed(self.initial_workers, compact_id_dtype))
        put(self, "initial_labels", _narrowed(self.initial_labels, compact_class_dtype))


def _narrowed(codes: np.ndarray, dtype_for: Any) -> np.ndarray:
    """Integer ``codes`` in ``dtype_for(max + 1)`` when they are non-negative (else as
    they are)."""
    codes = np.asarray(codes)
    if codes.size == 0 or codes.dtype.kind not in "iu" or int(codes.min()) < 0:
        return codes
    dtype = dtype_for(int(codes.max()) + 1)
    return codes if codes.dtype == dtype else codes.astype(dtype)


def one_coin_confusion(ability: np.ndarray, k: int) -> np.ndarray:
    """Confusion matrices of one-coin workers: ``p`` on the diagonal, ``(1-p)/(K-1)`` elsewhere."""
    off = (1.0 - ability) / (k - 1)
    conf = np.repeat(off[:, None, None], k, axis=1).repeat(k, axis=2)
    idx = np.arange(k)
    conf[:, idx, idx] = ability[:, None]
    return conf


def weighted_workers(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Workers chosen by ``weights`` (one per uniform number in ``u``): inverse of the
    cumulative weights, so a worker of weight 0 is never chosen."""
    cumulative = np.cumsum(weights / weights.sum())
    picked = np.searchsorted(cumulative, u, side="right")
    return np.minimum(picked, weights.size - 1).astype(np.int64)


def accuracy(confusion: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Probability that each worker is right on a task drawn from the prior."""
    return np.einsum("jcc,c->j", confusion, prior)


def initial_pairs(
    scenario: Scenario, kind: str, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(task, worker) pairs of an initial graph, sorted by task.

    ``one-per-task``: each task one label, workers round-robin over a random task order (seed
    000's 2,000 initial edges). ``bernoulli``: each pair present with ``initial_probability``
    (Zhang et al.'s design); if that draws more pairs than the budget, a uniformly random subset
    of ``budget.edges`` pairs is kept, so the budget is never overspent.
    """
    n, m = scenario.tasks.count, scenario.workers.count
    weights = scenario.workers.arrivals.weights
    if kind == "one-per-task":
        tasks = rng.permutation(n).astype(np.int64)
        if weights is None:
            workers = (np.arange(n) % m).astype(np.int64)
        else:  # each label's worker drawn by weight, like the market's arrivals
            workers = weighted_workers(np.asarray(weights), rng.random(n))
    elif kind == "bernoulli":
        p = scenario.budget.initial_probability
        per_task = rng.binomial(m, p, size=n)
        tasks = np.repeat(np.arange(n, dtype=np.int64), per_task)
        keys = rng.random((n, m)).argsort(axis=1) if n * m <= 50_000_000 else None
        if keys is None:
            raise ValueError("bernoulli initial graphs are limited to 50 million task-worker pairs")
        take = np.arange(m)[None, :] < per_task[:, None]
        workers = keys[take].astype(np.int64)
        if tasks.size > scenario.budget.edges:
            keep = np.sort(rng.choice(tasks.size, size=scenario.budget.edges, replace=False))
            tasks, workers = tasks[keep], workers[keep]
    else:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.argsort(tasks, kind="stable")
    return tasks[order], workers[order]
