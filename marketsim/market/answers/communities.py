"""Communities of workers who share a confusion bias (``workers.model = "communities"``),
Venanzi, Guiver, Kazai, Kohli & Shokouhi, "Community-based Bayesian aggregation models for
crowdsourcing" (WWW 2014).

Worker ``j`` belongs to community ``m_j ~ Categorical(weights)``; row ``c`` of the worker's
matrix is ``Dirichlet(concentration * confusion[m_j, c])``, a perturbation of the community's
row (its mean); a small ``concentration`` puts members near the vertices (each row's mass on
one answer), drawn in log space where the plain gamma draws underflow. Drawn once per
replicate, before the task effects (``lookalike``, ``sigma``:
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
#: A row whose gamma draws sum below this (every draw underflowed: tiny parameters) is drawn
#: again in log space (:func:`log_space_rows`).
TINY_SUM = 1e-290


def log_space_rows(log_shape: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rows ``Dirichlet(exp(log_shape))`` (shape (..., K); ``-inf``: a zero parameter, never
    drawn) in log space, for parameters far below 1 whose gamma draws all underflow to 0:
    ``log Gamma(a) = log Gamma(a + 1) + log(U) / a`` (Marsaglia & Tsang's boost), normalised
    by log-sum-exp. When even that underflows (``a`` so small that ``log(U) / a`` is ``-inf``
    for every entry), the row is the vertex that wins the exponential race ``E_k / a_k``,
    which is the limit: vertex ``k`` with probability ``a_k / sum(a)``."""
    shape = np.exp(log_shape)
    exponential = -np.log1p(-rng.random(log_shape.shape))  # E = -log U, U in (0, 1]
    race = np.log(exponential) - log_shape  # log(E / a): the smallest wins as a -> 0
    with np.errstate(over="ignore"):
        logs = np.log(rng.standard_gamma(shape + 1.0)) - np.exp(race)
    top = logs.max(axis=-1, keepdims=True)
    vertex = np.arange(log_shape.shape[-1]) == race.argmin(axis=-1)[..., None]
    rows = np.where(np.isfinite(top), np.exp(logs - np.where(np.isfinite(top), top, 0.0)),
                    vertex)
    return rows / rows.sum(axis=-1, keepdims=True)


def draw_members(scenario: Scenario, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each worker's community and own matrix (n_workers, K, K), vectorised over workers."""
    spec = scenario.workers.communities
    base = np.asarray(spec.confusion, dtype=np.float64)  # (C, K, K)
    n_comm = base.shape[0]
    weights = np.ones(n_comm) if spec.weights is None else np.asarray(spec.weights)
    community = rng.choice(n_comm, size=scenario.workers.count, p=weights / weights.sum())
    shape = np.maximum(spec.concentration * base[community], MIN_CONCENTRATION)  # (m, K, K)
    gamma = rng.standard_gamma(shape)
    sums = gamma.sum(axis=2, keepdims=True)
    tiny = sums[..., 0] < TINY_SUM
    if tiny.any():  # extra draws only for rows that would otherwise be 0/0
        with np.errstate(divide="ignore"):  # a zero entry of the community's row: log 0
            log_shape = np.log(spec.concentration) + np.log(base[community][tiny])
        gamma[tiny], sums[tiny] = log_space_rows(log_shape, rng), 1.0
    return community, gamma / sums


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
