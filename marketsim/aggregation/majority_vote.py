"""Majority vote, and the fractional-tie error measure of Zhang et al.'s tables (§6)."""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.aggregation._numeric import as_generator, majority_posterior
from marketsim.aggregation._ties import seeded_ties
from marketsim.aggregation.base import BaseAggregator
from marketsim.aggregation.identifiability import warn_if_not_identifiable
from marketsim.aggregation.metrics import stratified_mean
from marketsim.aggregation.options import Params, random_state_param
from marketsim.data.labels import LabelSet


def fractional_tie_error(counts: np.ndarray, truth: np.ndarray,
                         mix: tuple[float, ...] | None = None) -> float:
    """Error of majority vote where a tie among the top classes counts ``1/n_tied`` correct.

    ``truth`` holds a class index per task, or -1 where unknown; only known tasks count.
    Tasks without labels tie among all K classes. With ``mix``, each class's error is
    weighted by its share (:func:`~marketsim.aggregation.metrics.stratified_mean`).
    """
    truth = np.asarray(truth)
    return 1.0 - stratified_mean(fractional_tie_hits(counts, truth), truth[truth >= 0], mix)


def fractional_tie_hits(counts: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Majority vote's credit on each task whose ``truth`` is known (``truth >= 0``), in task
    order: 1 when the truth is the one top class, ``1/n_tied`` when it ties among ``n_tied``
    top classes, 0 when it is not among them (what :func:`fractional_tie_error` averages,
    kept per task for errors weighted by class)."""
    truth = np.asarray(truth)
    known = truth >= 0
    c = counts[known]
    top = c.max(axis=1, keepdims=True)
    is_top = c == top
    n_tied = is_top.sum(axis=1)
    hit = is_top[np.arange(c.shape[0]), truth[known]]
    return hit / np.maximum(n_tied, 1)


class MajorityVote(BaseAggregator):
    """Per-task vote shares; ``labels_`` breaks ties uniformly at random with ``random_state``,
    by a draw that no renaming of classes, workers or tasks changes
    (:func:`marketsim.aggregation._ties.seeded_ties`).

    Examples
    --------
    >>> from marketsim.data import LabelSet
    >>> data = LabelSet.from_arrays([0, 0, 0, 1], [0, 1, 2, 0], [1, 1, 0, 0])
    >>> MajorityVote().fit(data).labels_.tolist()
    [1, 0]
    """

    method = "mv"
    description = "majority vote (ties broken at random; tables use fractional ties)"

    class Options(Params):
        """Parameters of majority vote."""

        random_state: Any = random_state_param()

    random_state: Any

    def fit(self, data: LabelSet, **_: Any) -> MajorityVote:
        """Count votes; no iterations, log-likelihood undefined (empty history)."""
        seed = int(as_generator(self.random_state).integers(0, 2**63))
        counts = data.vote_counts()
        self.counts_ = counts
        self.proba_ = majority_posterior(data)
        self.labels_ = seeded_ties(counts, data, seed)
        k = data.n_classes
        self.prior_ = self.proba_.mean(axis=0) if data.n_tasks else np.full(k, 1 / k)
        self.log_likelihood_: list[float] = []
        self.n_iter_ = 0
        self.converged_ = True
        warn_if_not_identifiable(data)
        return self
