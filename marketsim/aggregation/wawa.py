"""Wawa, "Worker Agreement With Aggregate" (crowd-kit's ``Wawa``).

Three steps, each one pass of ``np.bincount`` over the labels:

1. majority vote (ties by the one tie rule of :mod:`._ties`; crowd-kit's ``idxmax`` takes the
   class whose value sorts first);
2. each worker's skill = the share of their labels that agree with the majority labels;
3. a weighted vote with those skills as weights.

``proba_`` is the weighted vote's share of each class, ``S[i, c] / sum_c S[i, c]`` with
``S[i, c]`` the summed skills of the workers who said c (crowd-kit's ``probas_``): a
normalised score, not a posterior of a probability model. Multi-class.
"""

from __future__ import annotations

import numpy as np

from marketsim.aggregation._weighted_vote import WeightedVote, agreement, top_class, vote_scores
from marketsim.data.labels import LabelSet


class Wawa(WeightedVote):
    """Worker Agreement With Aggregate: majority vote, agreement skills, weighted vote.

    Takes no parameters. Fitted attributes: ``skills_`` (n_workers,) agreement rate of each
    worker with the majority vote (0 for a worker without labels), also ``skill_`` and
    ``weights_``; ``scores_`` (n_tasks, K) summed skills per class; ``proba_`` their shares
    (a task without labels gets the uniform row); ``labels_``; ``prior_`` the mean of
    ``proba_``. ``predict``/``predict_proba`` vote with the fitted skills on other labels of
    the same workers.

    Examples
    --------
    >>> from marketsim.data import LabelSet
    >>> data = LabelSet.from_arrays([0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [1, 1, 0, 0, 0, 1])
    >>> Wawa().fit(data).skills_.round(2).tolist()
    [1.0, 1.0, 0.0]
    """

    method = "wawa"
    description = "Wawa: majority vote, skills = agreement with it, then a skill-weighted vote"

    def _fit_weights(self, data: LabelSet) -> np.ndarray:
        majority = top_class(vote_scores(data, np.ones(data.n_workers)), data)
        self.skills_ = agreement(data, majority, idle=0.0)
        self.skill_ = self.skills_
        self.n_iter_ = 1
        self.converged_ = True
        return self.skills_
