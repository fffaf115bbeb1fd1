"""Dynamic overlap (Toloka's incremental relabelling): a task starts with ``min_overlap`` labels
and gets one more at a time until the confidence of its aggregated answer reaches
``confidence``, or ``max_overlap`` labels.

The confidence is Toloka's: each worker's accuracy on control (gold) questions,
q = (s + correct) / (2 s + answered) with smoothing s = 0.5; the winning answer is the one with
the largest sum of its voters' q; its confidence is the posterior probability that it is the
true answer, with a uniform prior over the K answer options and each voter right with
probability q, else any of the K − 1 other answers with probability (1 − q) / (K − 1)."""

from __future__ import annotations

from typing import Literal

import numpy as np

from marketsim.options import F, Options
from marketsim.policies.base import MarketState
from marketsim.policies.overlap import OverlapRule

#: Toloka's smoothing constant of a worker's control-task accuracy.
SMOOTHING = 0.5


def gold_accuracy(correct: np.ndarray | int, answered: np.ndarray | int) -> np.ndarray:
    """Toloka's worker accuracy on control tasks, (0.5 + correct) / (1 + answered)."""
    return (SMOOTHING + np.asarray(correct, dtype=np.float64)) / (
        2 * SMOOTHING + np.asarray(answered, dtype=np.float64))


def answer_confidence(workers: np.ndarray, labels: np.ndarray, accuracy: np.ndarray,
                      n_classes: int) -> tuple[int, float]:
    """(winning answer, its confidence) of one task's labels (``workers[j]`` answered
    ``labels[j]``; ``accuracy``: every worker's q): the answer with the largest sum of its
    voters' q (the lowest index on a tie) and its posterior probability under a uniform prior,
    P(z | answers) ∝ Π_j (q_j if labels[j] = z else (1 − q_j) / (K − 1))."""
    q = np.clip(accuracy[workers], 1e-12, 1.0 - 1e-12)
    votes = np.zeros(n_classes)
    np.add.at(votes, labels, q)
    winner = int(np.argmax(votes))
    right, wrong = np.log(q), np.log((1.0 - q) / max(n_classes - 1, 1))
    score = np.full(n_classes, wrong.sum())
    np.add.at(score, labels, right - wrong)
    post = np.exp(score - score.max())
    return winner, float(post[winner] / post.sum())


class DynamicOverlapOptions(Options):
    """``dynamic-overlap`` (Toloka's dynamic overlap)."""

    min_overlap: int = F(2, "labels every task gets before its confidence is judged, the "
                         "initial graph's included (Toloka: the pool's overlap; it recommends "
                         "dynamic overlap for overlaps of 2 to 5)", ge=1, le=1000)
    max_overlap: int = F(5, "labels per task at most (Toloka's maximum overlap)", ge=1, le=1000)
    confidence: float = F(0.8, "close a task once its winning answer's confidence reaches this "
                          "(Toloka: at least 0.7, 0.8 recommended)", ge=0.5, le=0.999)
    weights: Literal["skill", "equal"] = F(
        "skill", "each worker's q: their own accuracy on the gold questions (Toloka's "
        "aggregation by skill), or the same q for everyone, the whole crowd's gold accuracy")


class DynamicOverlapPolicy(OverlapRule[DynamicOverlapOptions]):
    """Toloka's dynamic overlap: more labels for a task until its answer is confident."""

    name = "dynamic-overlap"
    Options = DynamicOverlapOptions
    #: Options counting a task's labels, each from a distinct worker (at most workers.count).
    per_task_options = ("min_overlap", "max_overlap")
    #: ``max_overlap`` may not be below ``min_overlap``.
    ordered_options = ("min_overlap", "max_overlap")
    description = (
        "Dynamic-overlap is Toloka's incremental relabelling: each task gets `min_overlap` "
        "labels, then one more at a time until the posterior confidence of its winning "
        "answer, from the workers' accuracies on gold questions, reaches `confidence`, or "
        "`max_overlap` labels; tasks in order, a closed task is never labelled again, and the "
        "requester stops spending once every task is closed."
    )

    @classmethod
    def rule(cls, options: DynamicOverlapOptions) -> str:
        """Overlaps and confidence, and how the workers are weighted."""
        weights = ("each worker weighted by their own gold accuracy" if options.weights ==
                   "skill" else "every worker weighted alike, by the crowd's gold accuracy")
        return (f"every task gets {options.min_overlap} labels, then one more at a time until "
                f"its winning answer's confidence reaches {options.confidence:g} ({weights}), "
                f"at most {options.max_overlap} labels")

    def first(self) -> int:
        """``min_overlap`` labels before the first judgement."""
        return self.options.min_overlap

    def cap(self) -> int:
        """``max_overlap`` labels at most."""
        return self.options.max_overlap

    def accuracy(self, state: MarketState) -> np.ndarray:
        """Every worker's q now: their own gold accuracy, or the crowd's pooled one (0.5, no
        gold answers, without the live worker record)."""
        if state.workers is None:
            return np.full(self.n_workers, float(gold_accuracy(0, 0)))
        correct, answered = state.workers.gold_correct, state.workers.gold_answered
        if self.options.weights == "equal":
            pooled = gold_accuracy(int(np.sum(correct)), int(np.sum(answered)))
            return np.full(self.n_workers, float(pooled))
        return gold_accuracy(correct, answered)

    def satisfied(self, tasks: np.ndarray, state: MarketState) -> np.ndarray:
        """The winning answer's confidence reaches ``confidence``."""
        q = self.accuracy(state)
        out = np.zeros(tasks.shape[0], dtype=bool)
        for j, task in enumerate(tasks.tolist()):
            pairs = np.asarray(self.by_task[task], dtype=np.int64).reshape(-1, 2)
            _, conf = answer_confidence(pairs[:, 0], pairs[:, 1], q, self.n_classes)
            out[j] = conf >= self.options.confidence
        return out
