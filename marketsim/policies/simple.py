"""The simple policies: uniform (the paper's baseline), entropy-greedy and the oracle."""

from __future__ import annotations

import numpy as np

from marketsim.options import Options
from marketsim.policies.base import MarketInfo, MarketState, Policy


def posterior_entropy(proba: np.ndarray) -> np.ndarray:
    """Entropy of each posterior row, normalised so that a uniform row has entropy 1."""
    proba = np.asarray(proba, dtype=np.float64)
    k = proba.shape[1]
    if k < 2:
        return np.zeros(proba.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        if k >= 8:
            terms = np.where(proba > 0, -proba * np.log(proba), 0.0)
            return terms.sum(axis=1) / np.log(k)
        # Column by column, fewer temporaries; the same bits as the row sum above, which
        # adds fewer than 8 numbers one after another starting from 0 (the ``+ 0.0`` makes
        # a -0.0 term, from p = 1, the +0.0 that sum gives).
        total = None
        for c in range(k):
            col = proba[:, c]
            term = np.log(col)
            term *= col
            np.negative(term, out=term)
            term = np.where(col > 0, term, 0.0)
            total = np.add(term, 0.0, out=term) if total is None else np.add(total, term,
                                                                              out=total)
    return total / np.log(k)


def rank_by_score(score: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Task indices by descending score, ties broken uniformly at random."""
    tiebreak = rng.random((score.shape[0],))
    return np.lexsort((tiebreak, -score))


class UniformPolicy(Policy[Options]):
    """Seed 000's baseline: every round hands each task out once, in a uniformly random order."""

    name = "uniform"
    #: Works in class and continuous-score markets alike.
    markets = ("classes", "scores")
    #: Every task its share of the labels, within 1: a round hands each task out once.
    even_rounds = True
    description = (
        "Uniform spends each round on distinct tasks drawn uniformly at random, ignoring what "
        "has been learnt so far. It is the non-adaptive baseline of Maginnis & Gupta (2015): "
        "every round hands each task out once, so every task gets its share of the labels "
        "within one, easy or hard."
    )

    def bind(self, info: MarketInfo) -> None:
        """Nothing to prepare."""
        self.n_tasks = info.n_tasks

    def rank(self, state: MarketState, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random permutation of the tasks."""
        return rng.permutation(state.labels.n_tasks)


class EntropyGreedyPolicy(Policy[Options]):
    """Label next the tasks whose current posterior is most uncertain."""

    name = "entropy-greedy"
    description = (
        "Entropy-greedy ranks tasks by the entropy of their current posterior and labels the "
        "most uncertain first. It uses only the inference service's estimate, so it is "
        "realisable, but it trusts that estimate: a confidently wrong task is never revisited."
    )

    def bind(self, info: MarketInfo) -> None:
        """Nothing to prepare."""

    def rank(self, state: MarketState, rng: np.random.Generator) -> np.ndarray:
        """Tasks by descending posterior entropy, random tie-break."""
        return rank_by_score(posterior_entropy(state.proba), rng)


class OraclePolicy(Policy[Options]):
    """Teaching upper bound, NOT realisable: it knows the truth and fixes current mistakes."""

    name = "oracle"
    needs_truth = True
    description = (
        "Oracle (not realisable) knows the true labels and sends workers to the tasks the "
        "current estimate gets wrong, then to the most uncertain ones. No real requester can "
        "do this; it shows how much room any adaptive policy has."
    )

    def bind(self, info: MarketInfo) -> None:
        """Keep the truth."""
        if info.truth is None:
            raise ValueError("the oracle policy needs the true labels")
        self.truth = info.truth

    def rank(self, state: MarketState, rng: np.random.Generator) -> np.ndarray:
        """Wrongly estimated tasks first, then by entropy."""
        wrong = np.argmax(state.proba, axis=1) != self.truth
        return rank_by_score(wrong + posterior_entropy(state.proba), rng)
