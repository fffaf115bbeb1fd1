"""A fitted world replayed on the file's own (task, worker) pairs: the world's answers for
exactly the labels the file has, then the same draws of k labels per task as the data's
design curve (:mod:`marketsim.aggregation.design_curve`).

This separates the world from the market. A twin's design curve comes from markets that
choose who labels what (arrivals weighted by each worker's share, any free task); the real
curve from who really labelled what. Replayed on the real pairs, a world answers the same
workers on the same tasks as the file, so a gap between its curve and the real one is the
world's (its matrices, task effects), and the gap between it and the twin market's curve is
the market's choice of who labels what (docs/explanation/models/calibration/world-on-pairs.md).
No market runs: one vectorised draw per replicate, then the curve's aggregations.

The answers are drawn as the scenario's world draws them: for a one-matrix world
(:class:`~marketsim.aggregation.confusion_fit.ConfusionFit`) each task's look-alike class
``s_i ~ lookalike[c_i]`` and inverse difficulty ``log beta_i ~ N(0, sigma^2)``, each label
``~ softmax(beta_i log pi_j[s_i])`` (with probability ``follow``, else from the row of
``c_i``; with pulls, the pulled class ``p_i ~ pull[c_i]`` with the
task's strength ``a_i``: ``(1 - a_i)`` that row ``+ a_i`` at ``p_i``); for a mixture of task types
(:class:`~marketsim.aggregation.task_types.TypesFit`) each task's type ``z_i ~ shares[c_i]``
and each label ``~ pi_j^(z_i)[c_i]``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax

from marketsim.aggregation.confusion_fit import ConfusionFit
from marketsim.aggregation.design_curve import (
    DRAWS,
    DesignCurve,
    References,
    errors,
    keep_k_per_task,
    subset,
)
from marketsim.aggregation.task_types import TypesFit
from marketsim.data.labels import LabelSet


def categorical(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per row of ``probabilities`` (rows, K): the inverse CDF of one uniform each."""
    cumulative = np.cumsum(probabilities, axis=1)
    u = rng.random(probabilities.shape[0]) * cumulative[:, -1]
    return np.minimum((cumulative < u[:, None]).sum(axis=1), probabilities.shape[1] - 1)


def world_labels(world: ConfusionFit | TypesFit, tasks: np.ndarray, workers: np.ndarray,
                 truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The world's answers for the pairs (``tasks[l]``, ``workers[l]``), task ``i`` being of
    class ``truth[i]`` (every task's: the truth, or a reference class where it is unknown)."""
    truth = np.asarray(truth, dtype=np.int64)
    if isinstance(world, TypesFit):
        shares = world.shares[truth] if world.shares.shape[0] > 1 else \
            np.broadcast_to(world.shares, (truth.size, world.shares.shape[1]))
        kind = categorical(shares, rng)
        rows = world.matrices[kind[tasks], workers, truth[tasks]]
        return categorical(rows, rng)
    seen = categorical(world.lookalike[truth], rng)
    beta = np.exp(world.sigma * rng.standard_normal(truth.size)) if world.sigma > 0 \
        else np.ones(truth.size)
    log_rows = np.log(np.maximum(world.confusion[workers, seen[tasks]], 1e-300))
    rows = np.exp(log_softmax(beta[tasks, None] * log_rows, axis=1))
    if world.follow < 1.0:  # a label follows the look-alike class with probability follow
        own = np.log(np.maximum(world.confusion[workers, truth[tasks]], 1e-300))
        rows = world.follow * rows + (1.0 - world.follow) * np.exp(
            log_softmax(beta[tasks, None] * own, axis=1))
    if world.pull is not None:  # ambiguous tasks: every worker drawn to the pulled class
        pulled = categorical(world.pull[truth], rng)
        strength = np.asarray(world.pull_strengths)[categorical(
            np.broadcast_to(np.asarray(world.pull_weights), (truth.size, len(
                world.pull_weights))), rng)] * (pulled != truth)
        a = strength[tasks, None]
        rows = (1.0 - a) * rows + a * np.eye(rows.shape[1])[pulled[tasks]]
    return categorical(rows, rng)


def pairs_runs(world: ConfusionFit | TypesFit, data: LabelSet, classes: np.ndarray,
               judged: np.ndarray | None, ks: tuple[int, ...], replicates: int, draws: int,
               seed: int = 0) -> np.ndarray:
    """Errors of the world on ``data``'s pairs, task ``i`` answered as of class
    ``classes[i]``: per replicate one draw of the world's answers, then ``draws`` draws of k
    of each task's labels for each k of ``ks``, and the full data (its one value kept for
    each draw). Counted against ``classes`` where ``judged`` (the tasks with a truth), or
    with ``judged`` None against each method's answer on the replicate's full data, as the
    real curve is without a truth. (points, replicates × draws, 2): majority vote, then
    Dawid–Skene."""
    rng = np.random.default_rng([seed, 40])
    runs = []
    for _ in range(replicates):
        answers = world_labels(world, data.tasks, data.workers, classes, rng)
        labels = LabelSet(data.tasks, data.workers, answers, data.n_tasks, data.n_workers,
                          data.n_classes)
        if judged is None:
            refs = References.of(labels, None)
        else:
            truth = np.where(judged, classes, -1)
            refs = References(truth, truth, "truth")
        full = errors(labels, refs)
        for _ in range(draws):
            at_k = [subset(labels, keep_k_per_task(labels.tasks, k, rng)) for k in ks]
            runs.append([*(errors(part, refs) for part in at_k), full])
    return np.array(runs, dtype=np.float64).reshape(replicates * draws, len(ks) + 1,
                                                    2).transpose(1, 0, 2)


def pairs_curve(world: ConfusionFit | TypesFit, data: LabelSet, classes: np.ndarray,
                judged: np.ndarray | None, ks: tuple[int, ...], replicates: int = 5,
                draws: int = DRAWS // 5, seed: int = 0) -> DesignCurve:
    """The world's design curve on the real pairs (:func:`pairs_runs`)."""
    runs = pairs_runs(world, data, classes, judged, ks, replicates, draws, seed)
    return DesignCurve.from_runs(ks, runs[..., 0], runs[..., 1],
                                 "truth" if judged is not None else "full-data answer")
