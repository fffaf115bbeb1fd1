"""Communities of workers who share a confusion bias (``workers.model = "communities"``),
Venanzi, Guiver, Kazai, Kohli & Shokouhi, "Community-based Bayesian aggregation models for
crowdsourcing" (WWW 2014).

Worker ``j`` belongs to community ``m_j ~ Categorical(weights)``; row ``c`` of the worker's
matrix is ``Dirichlet(concentration * confusion[m_j, c])``, a perturbation of the community's
row (its mean); a small ``concentration`` puts members near the vertices (each row's mass on
one answer), drawn in log space where the plain gamma draws underflow. Drawn once per
replicate, before the task effects (``lookalike``, ``sigma``:
:mod:`~marketsim.workers.task_effects`), which apply as with ``[workers.confusion]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self

import numpy as np
from pydantic import model_validator

from marketsim.options import F
from marketsim.tables import FloatMatrices, KeyProblem, Table, positive_weights
from marketsim.workers.base import AbilityView, Crowd
from marketsim.workers.confusion import ConfusionWorkers
from marketsim.workers.task_effects import TaskEffects, check_stochastic
from marketsim.workers.task_types import TaskTypes
from marketsim.workers.words import mean_diagonal, pct

#: Each community's share of the workers.
CommunityWeights = positive_weights()


class CommunitiesSpec(TaskEffects):
    """``[workers.communities]`` (`model = "communities"` only)

    Communities of workers who share a confusion bias (Venanzi, Guiver, Kazai, Kohli &
    Shokouhi, WWW 2014): worker j belongs to community m_j ~ Categorical(weights); community m
    has the K×K matrix ``confusion[m]``; row c of the worker's own matrix is
    Dirichlet(concentration·confusion[m][c]), a perturbation of the community's (its mean;
    large ``concentration``: every member answers like the community). Drawn once per
    replicate. Look-alike tasks and difficulty (``lookalike``, ``sigma``) as in
    `[workers.confusion]`."""

    confusion: FloatMatrices | None = F(
        None, "one K×K matrix per community, rows summing to 1", shown="required")
    weights: CommunityWeights | None = F(  # type: ignore[valid-type]  # positive_weights
        None, "each community's share of the workers (one number > 0 per community)",
        shown="equal shares")
    concentration: float = F(100.0, "members' rows ~ Dirichlet(concentration × the "
                             "community's row)", gt=0, le=1e9)

    @model_validator(mode="after")
    def _community_keys(self) -> Self:
        for matrix in self.confusion or ():
            check_stochastic("confusion", matrix)
        if self.weights is not None and self.confusion is not None and len(
                self.weights) != len(self.confusion):
            raise KeyProblem("weights", f"must have one entry per community "
                             f"({len(self.confusion)}), got {len(self.weights)}")
        return self


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


def draw_members(spec: CommunitiesSpec, n_workers: int, rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Each worker's community and own matrix (n_workers, K, K), vectorised over workers."""
    base = np.asarray(spec.confusion, dtype=np.float64)  # (C, K, K)
    n_comm = base.shape[0]
    weights = np.ones(n_comm) if spec.weights is None else np.asarray(spec.weights)
    community = rng.choice(n_comm, size=n_workers, p=weights / weights.sum())
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

    name: ClassVar[str] = "communities"
    summary: ClassVar[str] = (
        "communities sharing a confusion bias (Venanzi et al. 2014): each member's rows "
        "Dirichlet around its community's matrix")
    table: ClassVar[str | None] = "communities"
    Options: ClassVar[type[Table]] = CommunitiesSpec
    example: ClassVar[Mapping[str, Any]] = {"confusion": [
        [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]]]}

    def draw_confusion(self, crowd: Crowd, rng: np.random.Generator) -> np.ndarray:
        """Each worker's own matrix (:func:`draw_members`)."""
        return draw_members(self.options, crowd.workers.count, rng)[1]

    def task_types(self, k: int) -> TaskTypes | None:
        """None: communities have one matrix per member (task types are ``per-worker``)."""
        return None

    def crowd_problem(self, n_classes: int, n_workers: int) -> tuple[str, str] | None:
        """Look-alikes K×K; the communities' matrices given, each K×K."""
        k = n_classes
        problem = self.task_effects().lookalike_problem(k)
        if problem is not None:
            return f"communities.{problem[0]}", problem[1]
        mats = self.options.confusion
        if mats is None:
            return ("communities.confusion", f"is required with workers.model = '{self.name}' "
                    "(one K×K matrix per community)")
        if any(len(m) != k or any(len(r) != k for r in m) for m in mats):
            return "communities.confusion", f"must hold {k}×{k} matrices (tasks.classes = {k})"
        return None

    def answer_words(self, classes: int, ability: AbilityView) -> str:
        """Workers sharing a community's confusion bias (Venanzi et al. 2014)."""
        spec = self.options
        mats, weights = spec.confusion or [], spec.weights
        m = len(mats)
        total = sum(weights) if weights else 0.0
        shares = (", ".join(pct(w / total) for w in weights) if weights and total > 0
                  else "equal")
        diag = [mean_diagonal([mat]) for mat in mats]
        diag_txt = ", ".join(f"{d:.3f}" for d in diag if d is not None)
        return (f"workers belong to {m} communit{'y' if m == 1 else 'ies'} sharing a confusion "
                f"bias (Venanzi et al. 2014), drawn once per replicate with shares {shares}; "
                f"each community has its own K × K matrix (mean chance of the true class: "
                f"{diag_txt}) and each member's row c is drawn from Dirichlet("
                f"{spec.concentration:g} × the community's row c).{spec.words()}")
