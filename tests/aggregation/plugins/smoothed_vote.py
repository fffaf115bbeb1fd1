"""An inference method from outside marketsim, for the plug-in tests (``[arms.inference] method
= "smoothed_vote:SmoothedVote"`` with this folder on the path): majority vote whose vote
shares are smoothed by ``alpha`` pseudo-votes per class."""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.aggregation.base import BaseAggregator
from marketsim.aggregation.options import Params, param
from marketsim.data.labels import LabelSet


class SmoothedVote(BaseAggregator):
    """Posterior ``(votes + alpha) / (labels + K alpha)`` per task; the most voted class
    (the first of a tie)."""

    method = "smoothed-vote"
    description = "majority vote smoothed by pseudo-votes"

    class Options(Params):
        """Parameters of the smoothed vote."""

        alpha: float = param(1.0, "pseudo-votes added to every class of every task", ge=0,
                             le=100)

    alpha: float

    def fit(self, data: LabelSet, **_: Any) -> SmoothedVote:
        """Count votes, add ``alpha`` to each class, normalise."""
        counts = data.vote_counts() + self.alpha
        totals = np.maximum(counts.sum(axis=1, keepdims=True), 1e-12)
        self.proba_ = counts / totals
        self.labels_ = self.proba_.argmax(axis=1)
        return self
