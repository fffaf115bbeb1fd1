"""Draws every worker model shares: one-coin matrices, each worker's accuracy under the prior,
workers chosen by weight, the (task, worker) pairs of an initial graph, and a class world's
task features followed by its initial graph."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marketsim.workers.base import Crowd
from marketsim.workers.task_features import draw_feature_proba, draw_task_features


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


#: The most cards an arrivals deck (``order = "deck"``) may hold: the deck is an array of
#: one worker id per card (8 bytes each: 256 MiB at most), and a calibrated file's deck holds
#: one card per label of the file.
MAX_DECK_CARDS = 1 << 25


def deck_counts(weights: tuple[float, ...] | np.ndarray) -> np.ndarray:
    """Each worker's cards in an arrivals deck (``order = "deck"``): the whole-number weights
    (validated so by the scenario) as integers."""
    return np.rint(np.asarray(weights, dtype=np.float64)).astype(np.int64)


def deck_cards(counts: np.ndarray) -> np.ndarray:
    """An unshuffled deck: worker j's card ``counts[j]`` times, in worker order."""
    return np.repeat(np.arange(counts.size, dtype=np.int64), counts)


def deck_workers(counts: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """The first ``size`` cards of a shuffled deck holding worker j ``counts[j]`` times (a
    fresh shuffle appended as often as one deck runs short)."""
    deck = deck_cards(counts)
    rounds = -(-size // deck.size)
    return np.concatenate([rng.permutation(deck) for _ in range(rounds)])[:size]


def accuracy(confusion: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Probability that each worker is right on a task drawn from the prior."""
    return np.einsum("jcc,c->j", confusion, prior)


def initial_pairs(
    crowd: Crowd, kind: str, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(task, worker) pairs of an initial graph, sorted by task.

    ``one-per-task``: each task one label, workers round-robin over a random task order (seed
    000's 2,000 initial edges), or drawn by the arrival weights, or the first cards of a
    shuffled deck (``order = "deck"``: :func:`deck_workers`). ``bernoulli``: each pair present
    with ``initial_probability`` (Zhang et al.'s design); if that draws more pairs than the
    budget, a uniformly random subset of ``budget.edges`` pairs is kept, so the budget is never
    overspent.
    """
    n, m = crowd.tasks.count, crowd.workers.count
    weights = crowd.workers.arrivals.weights
    if kind == "one-per-task":
        tasks = rng.permutation(n).astype(np.int64)
        if weights is None:
            workers = (np.arange(n) % m).astype(np.int64)
        elif crowd.workers.arrivals.order == "deck":  # the deck's first cards, in task order
            workers = deck_workers(deck_counts(weights), n, rng)
        else:  # each label's worker drawn by weight, like the market's arrivals
            workers = weighted_workers(np.asarray(weights), rng.random(n))
    elif kind == "bernoulli":
        p = crowd.budget.initial_probability
        per_task = rng.binomial(m, p, size=n)
        tasks = np.repeat(np.arange(n, dtype=np.int64), per_task)
        keys = rng.random((n, m)).argsort(axis=1) if n * m <= 50_000_000 else None
        if keys is None:
            raise ValueError("bernoulli initial graphs are limited to 50 million task-worker pairs")
        take = np.arange(m)[None, :] < per_task[:, None]
        workers = keys[take].astype(np.int64)
        if tasks.size > crowd.budget.edges:
            keep = np.sort(rng.choice(tasks.size, size=crowd.budget.edges, replace=False))
            tasks, workers = tasks[keep], workers[keep]
    else:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.argsort(tasks, kind="stable")
    return tasks[order], workers[order]


@dataclass(frozen=True)
class TasksAndGraph:
    """A class world's task features (``None`` without ``[tasks.features]``) and its initial
    graph's (task, worker) pairs, with the stream the graph's answers are drawn from."""

    features: np.ndarray | None
    feature_proba: np.ndarray | None
    tasks: np.ndarray
    workers: np.ndarray
    rng: np.random.Generator


def features_then_graph(crowd: Crowd, truth: np.ndarray, rng: np.random.Generator,
                        initial: str, initial_rng: np.random.Generator | None) -> TasksAndGraph:
    """Task features from ``rng`` (after the world's classes and workers, before the graph:
    shared by every arm), then the pairs of the initial graph ``initial`` from ``initial_rng``
    when given, else from ``rng`` after the features."""
    features = phi = None
    if crowd.tasks.features is not None:
        phi = draw_feature_proba(crowd.tasks.features, crowd.tasks.classes, rng)
        features = draw_task_features(truth, phi, rng)
    graph_rng = rng if initial_rng is None else initial_rng
    tasks, workers = initial_pairs(crowd, initial, graph_rng)
    return TasksAndGraph(features, phi, tasks, workers, graph_rng)
