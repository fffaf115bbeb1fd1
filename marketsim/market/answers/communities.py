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

from marketsim.market.answers import AnswerModel
from marketsim.market.answers.classes import ClassWorkers
from marketsim.market.answers.confusion import ConfusionAnswers, draw_labels
from marketsim.market.answers.task_effects import EffectAnswers, EffectParams, draw_effect_world
from marketsim.market.world import World
from marketsim.scenario.specs import Scenario

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


class CommunityWorkers(ClassWorkers):
    """The communities worker model: members' matrices perturb their community's."""

    def draw_confusion(self, scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
        """Each worker's own matrix (:func:`draw_members`)."""
        return draw_members(scenario, rng)[1]

    def initial_answers(self, truth: np.ndarray, confusion: np.ndarray, workers: np.ndarray,
                        n_classes: int, rng: np.random.Generator) -> np.ndarray:
        """Answers drawn through each worker's row (:func:`~marketsim.market.answers.
        confusion.draw_labels`)."""
        return draw_labels(truth, confusion, workers, rng)

    def draw(self, scenario: Scenario, rng: np.random.Generator, initial: str,
             initial_rng: np.random.Generator | None) -> World:
        """The shared class-model draw; with task effects, the matrices then the effects."""
        spec = scenario.workers.communities
        if not spec.has_effects:
            return super().draw(scenario, rng, initial, initial_rng)
        prior = np.asarray(scenario.tasks.prior)
        truth = rng.choice(scenario.tasks.classes, size=scenario.tasks.count,
                           p=prior).astype(np.int64)
        matrices = self.draw_confusion(scenario, rng)
        return draw_effect_world(self, scenario, spec, matrices, truth, rng, initial,
                                 initial_rng)

    def answers(self, world: World, n_classes: int, rng: np.random.Generator) -> AnswerModel:
        """Per-label answers through each worker's matrix (with the task effects if any)."""
        if isinstance(world.params, EffectParams):
            return EffectAnswers(world.params, rng, world.truth)
        return ConfusionAnswers(world.truth, world.confusion, rng)
