"""Zero-Based Skill (crowd-kit's ``ZeroBasedSkill``): skills re-estimated by gradient steps.

Every worker starts at skill ``1/K' + eps`` (K' = the number of distinct label values in the
data). Each of ``n_iter`` iterations votes with the current skills (a weighted vote, ties by
the one rule of :mod:`._ties`), then moves each skill toward the worker's agreement rate with that
vote: ``s <- s + lr (agreement - s)``, a gradient step on the squared error between them. The
learning rate starts at ``lr_init`` and is multiplied by ``lr_reduce_factor`` at every
iteration that is a multiple of ``lr_steps_to_reduce``. The answer is the weighted vote with
the final skills. There is no stopping rule: crowd-kit runs all ``n_iter`` iterations, so does
this. Each iteration is two ``np.bincount`` passes over the labels. Multi-class.

``proba_`` is the final weighted vote's share of each class (crowd-kit's ``probas_``), a
normalised score rather than a model posterior.
"""

from __future__ import annotations

import numpy as np

from marketsim.aggregation._weighted_vote import WeightedVote, agreement, top_class, vote_scores
from marketsim.aggregation.options import Params, param
from marketsim.data.labels import LabelSet


class ZeroBasedSkill(WeightedVote):
    """Weighted vote whose skills are re-estimated by gradient steps from 1/K.

    Parameters: :class:`ZeroBasedSkill.Options` (the learning rate is multiplied by
    ``lr_reduce_factor`` at every iteration ``t``, 1-based, with ``t % lr_steps_to_reduce ==
    0``).

    Fitted attributes: ``skills_`` (n_workers,) the final skills (a worker without labels keeps
    the start), also ``skill_`` and ``weights_``; ``scores_``, ``proba_``, ``labels_``,
    ``prior_`` as in :class:`~marketsim.aggregation.wawa.Wawa`; ``n_iter_``.
    """

    method = "zbs"
    description = ("Zero-Based Skill: weighted vote, skills stepped toward agreement with it "
                   "from 1/K")

    class Options(Params):
        """Parameters of Zero-Based Skill."""

        n_iter: int = param(100, "skill updates (all are run)", ge=1, le=100_000)
        lr_init: float = param(1.0, "first learning rate", gt=0, le=1)
        lr_steps_to_reduce: int = param(20, "the learning rate shrinks every this many "
                                        "iterations", ge=1, le=100_000)
        lr_reduce_factor: float = param(0.5, "what the learning rate is multiplied by then",
                                        gt=0, le=1)
        eps: float = param(1e-5, "added to the starting skill 1/K", ge=0, le=1)

    n_iter: int
    lr_init: float
    lr_steps_to_reduce: int
    lr_reduce_factor: float
    eps: float

    def _fit_weights(self, data: LabelSet) -> np.ndarray:
        distinct = max(int(np.unique(data.labels).size), 1)
        skills = np.full(data.n_workers, 1.0 / distinct + float(self.eps))
        rate = float(self.lr_init)
        for iteration in range(1, int(self.n_iter) + 1):
            if iteration % int(self.lr_steps_to_reduce) == 0:
                rate *= float(self.lr_reduce_factor)
            voted = top_class(vote_scores(data, skills), data)
            skills = skills + rate * (agreement(data, voted, idle=skills) - skills)
        self.skills_ = skills
        self.skill_ = np.clip(skills, 0.0, 1.0)
        self.n_iter_ = int(self.n_iter)
        self.converged_ = True
        return skills
