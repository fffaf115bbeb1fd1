"""Communities of workers who share a confusion bias (``workers.model = "communities"``),
Venanzi, Guiver, Kazai, Kohli & Shokouhi, "Community-based Bayesian aggregation models for
crowdsourcing" (WWW 2014).

Worker ``j`` belongs to community ``m_j ~ Categorical(weights)``; row ``c`` of the worker's
matrix is ``Dirichlet(concentration * confusion[m_j, c])``, a perturbation of the community's
row (its mean). Drawn once per replicate, before the task effects (``lookalike``, ``sigma``:
:mod:`~marketsim.market.answers.task_effects`), which apply as with ``[workers.confusion]``.
"""

from __future__ import annotations

import numpy as np

from marketsim.market.answers.confusion import ConfusionWorkers
from marketsim.market.answers.task_types import TaskTypes
from marketsim.scenario.specs import Scenario
from marketsim.scenario.worker_models import TaskEffects

#: Dirichlet parameters are kept at least this large (a zero entry of a community's row
#: stays, to double precision, a zero of every member's).
MIN_CONCENTRATION = 1e-9


def draw_members(scenario: Scenario, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each worker's community and own matrix (n_workers, K, K), vectorised over workers."""
    spec = scenario.workers.communities
    base = np.asarray(spec.confusion, dtype=np.float64)  # (C, K, K)
    n_comm = base.shape[0]
    weights = np.ones(n_comm) if spec.weights is None else np.asarray(spec.weights)
    community = rng.choice(n_comm, size=scenario.workers.count, p=weights / weights.sum())
    shape = np.maximum(spec.concentration * base[community], MIN_CONCENTRATION)  # (m, K, K)
    gamma = rng.standard_gamma(shape)
    return community, gamma / gamma.sum(axis=2, keepdims=True)


class CommunityWorkers(ConfusionWorkers):
    """The communities worker model: members' matrices perturb their community's; answers and
    task effects as the confusion model's."""

    def draw_confusion(self, scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
        """Each worker's own matrix (:func:`draw_members`)."""
        return draw_members(scenario, rng)[1]

    def task_effects(self, scenario: Scenario) -> TaskEffects:
        """``[workers.communities]`` holds this model's ``lookalike`` and ``sigma``."""
        return scenario.workers.communities

    def task_types(self, scenario: Scenario) -> TaskTypes | None:
        """None: communities have one matrix per member (task types are ``per-worker``)."""
        return None
