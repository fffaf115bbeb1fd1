"""Optimistic knowledge gradient (Chen, Lin & Zhou, ICML 2013), homogeneous-worker version.

Chen, X., Lin, Q. and Zhou, D. (2013). "Optimistic Knowledge Gradient Policy for Optimal Budget
Allocation in Crowdsourcing". ICML 2013, PMLR 28(3): 64-72.

Model (the paper's basic setting: binary tasks, identical workers)
------------------------------------------------------------------
Task ``i`` has an unknown ``theta_i = P(a worker answers "positive" on task i)``; here
"positive" is class index 0 (class 1 of the scenario, Maginnis & Gupta's ``t = +1``). With a
``Beta(a0, b0)`` prior and ``a_i - a0`` positive, ``b_i - b0`` negative labels observed, the
posterior is ``Beta(a_i, b_i)``. Task ``i`` is finally labelled positive iff
``I(a_i, b_i) = P(theta_i >= 1/2 | a_i, b_i) >= 1/2``, which is correct with posterior
probability ``h(I(a_i, b_i))``, ``h(x) = max(x, 1 - x)``.

One more label on task ``i`` moves the state to ``(a_i + 1, b_i)`` (positive answer) or
``(a_i, b_i + 1)`` (negative answer), changing the expected final accuracy by

    R1(a, b) = h(I(a + 1, b)) - h(I(a, b)),    R2(a, b) = h(I(a, b + 1)) - h(I(a, b)).

* **Optimistic KG** (the paper's Opt-KG) labels the task with the largest
  ``R+(a, b) = max(R1, R2)``: the best-case gain. The paper proves it consistent (as the
  budget grows every task is labelled infinitely often) and recommends it.
* **Plain KG** labels the task with the largest expected gain
  ``R(a, b) = p1 R1 + (1 - p1) R2``, ``p1 = E[theta] = a / (a + b)``. The paper uses it to
  motivate Opt-KG: ``h(I)`` is linear in ``I`` whenever both outcomes keep the decision, and
  ``I`` is a martingale, so ``R = 0`` whenever ``|a - b| >= 1`` (with integer counts and
  prior: whenever ``a != b``); the policy then degenerates to random tie-breaking among all
  tasks that are not exactly split. This value is set to exactly 0 rather than computed, so
  rounding noise cannot order those tasks.

In the market: the paper is fully sequential (values are recomputed after every label). Here
values are computed from the labels received by each refresh and a round hands one label to each
of the top ``batch`` distinct tasks, i.e. batched Opt-KG; ``batch = 1`` with instant answers is
the paper's policy.
The Beta decision rule above only values labels: the reported accuracy is the arm's inference
service's. With ``a0 = b0``, ``I(a, b) >= 1/2`` iff ``a >= b``, so the rule is majority vote and
matches the ``mv`` estimator (up to how exact ties are broken).

Numerics: ``I(a, b) = 1 - betainc(a, b, 1/2) = betainc(b, a, 1/2)`` (symmetry of the regularised
incomplete Beta function), so both ``I`` and ``1 - I`` are computed without cancellation, and
``1 - h(I) = min(I, 1 - I)`` (the posterior error probability) keeps its relative precision in
the tails. Gains are differences of error probabilities. For extremely lopsided tasks (about
1,000 unanimous labels) the error probability underflows to 0 and the gains tie at 0; these tasks
are then ordered at random, after every task with a positive gain.

Not implemented: the paper's extension to heterogeneous workers (a reliability per worker,
estimated during allocation) and its multi-class and contextual extensions. This policy
ignores the inference service's estimate and worker identities: it counts votes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import betainc

from marketsim.data.labels import LabelSet
from marketsim.errors import InputError
from marketsim.options import F, Options
from marketsim.policies.base import MarketInfo, MarketState, Policy
from marketsim.policies.simple import rank_by_score

DESCRIPTION = (
    "Knowledge-gradient (Chen, Lin & Zhou 2013, Opt-KG) sends labels to the tasks whose next "
    "answer could raise the expected final accuracy the most, assuming all workers are equally "
    "reliable. Each binary task is treated as a coin: the chance that a worker answers class 1 "
    "has a Beta posterior built from the task's vote counts, and the task is finally labelled "
    "by whether that chance is more likely above or below one half. A task's value is the "
    "best-case gain in expected accuracy from one more label (the optimistic knowledge "
    "gradient), which favours tasks with few or split votes and leaves clear majorities alone. "
    "Worker identities and the inference service's estimate are ignored (the paper's "
    "reliability-aware variant is not implemented), and only binary tasks are supported."
)


def prob_positive(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """``I(a, b) = P(theta >= 1/2)`` for ``theta ~ Beta(a, b)`` (Chen et al. 2013).

    Computed as ``betainc(b, a, 1/2)``, which equals ``1 - betainc(a, b, 1/2)`` exactly.
    """
    return betainc(np.asarray(b, dtype=np.float64), np.asarray(a, dtype=np.float64), 0.5)


def error_probability(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """``1 - h(I(a, b)) = min(I, 1 - I)``: posterior probability that the final label is wrong."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.minimum(betainc(b, a, 0.5), betainc(a, b, 0.5))


def expected_accuracy(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """``h(I(a, b)) = max(I, 1 - I)``: the expected reward of the final decision on a task."""
    return 1.0 - error_probability(a, b)


def gains(a: np.ndarray | float, b: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """The one-step gains ``(R1, R2)`` of Chen et al. (2013).

    ``R1 = h(I(a+1, b)) - h(I(a, b))`` if the next label is positive (class index 0),
    ``R2 = h(I(a, b+1)) - h(I(a, b))`` if it is negative.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    now = error_probability(a, b)
    return now - error_probability(a + 1.0, b), now - error_probability(a, b + 1.0)


def knowledge_gradient(
    a: np.ndarray | float, b: np.ndarray | float, *, optimistic: bool = True
) -> np.ndarray:
    """Knowledge-gradient value of labelling a task in state ``Beta(a, b)`` once more.

    Parameters
    ----------
    a, b : array_like
        Posterior Beta parameters (prior plus positive / negative vote counts), broadcastable.
    optimistic : bool
        ``True``: Opt-KG's ``R+ = max(R1, R2)`` (Chen et al. 2013). ``False``: plain KG's
        expected gain ``p1 R1 + (1 - p1) R2`` with ``p1 = a / (a + b)``.

    Returns
    -------
    ndarray
        One value per state; ``R+ > 0`` for every finite state (up to underflow).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    r1, r2 = gains(a, b)
    if optimistic:
        return np.maximum(r1, r2)
    # p2 = b / (a + b) rather than 1 - p1 keeps KG(a, b) == KG(b, a) bit for bit.
    kg = (a / (a + b)) * r1 + (b / (a + b)) * r2
    # I(a, b) >= 1/2 iff a >= b, so with |a - b| >= 1 the decision is the same (or at the tie
    # I = 1/2, where h is continuous) after either answer: h(I) is then linear in I, I is a
    # martingale and KG is exactly 0. Setting it so avoids ranking by rounding noise.
    return np.where(np.abs(a - b) >= 1.0, 0.0, kg)


class KnowledgeGradientOptions(Options):
    """``knowledge-gradient`` (Chen, Lin & Zhou's Opt-KG, binary tasks)."""

    a0: float = F(1.0, "Beta prior on each task's θᵢ = P(a worker answers class index 0): a0 "
                  "(the default a0 = b0 = 1 is the paper's uniform prior)", gt=0)
    b0: float = F(1.0, "Beta prior: b0", gt=0)
    optimistic: bool = F(True, "true: Opt-KG's R⁺ = max(R1, R2); false: plain KG's expected "
                         "gain (0 for most states, which then order tasks at random)")


class KnowledgeGradientPolicy(Policy[KnowledgeGradientOptions]):
    """Chen, Lin & Zhou (2013) optimistic knowledge gradient, homogeneous workers, binary tasks.

    Options: :class:`KnowledgeGradientOptions` (the Beta prior and Opt-KG or plain KG).

    Notes
    -----
    Assumes every worker is equally reliable: the posterior is built from the task's vote counts
    only (``LabelSet.vote_counts``), so worker identities and the inference service's estimate
    are ignored. The paper's reliability-aware variant is not implemented. Binary tasks
    only: :meth:`bind` raises for ``K != 2``.
    """

    name = "knowledge-gradient"
    unit_cost = 1.5
    #: Beta posteriors of class votes: class markets with 2 classes only.
    binary_only = True
    description = DESCRIPTION
    Options = KnowledgeGradientOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.n_tasks: int | None = None

    # --- protocol ----------------------------------------------------------------------------
    def bind(self, info: MarketInfo) -> None:
        """Check the market is binary and remember its size."""
        if info.n_classes != 2:
            raise InputError(
                f"the knowledge-gradient policy supports binary tasks only (2 classes), "
                f"got {info.n_classes} classes"
            )
        self.n_tasks = info.n_tasks

    def rank(self, state: MarketState, rng: np.random.Generator) -> np.ndarray:
        """All task indices by descending knowledge-gradient value, random tie-break."""
        return rank_by_score(self.score(state.labels), rng)

    # --- the algorithm -----------------------------------------------------------------------
    def posterior(self, labels: LabelSet) -> tuple[np.ndarray, np.ndarray]:
        """Beta posterior ``(a, b)`` of every task: prior plus class-0 / class-1 vote counts."""
        if labels.n_classes != 2:
            raise InputError(
                f"the knowledge-gradient policy supports binary tasks only (2 classes), "
                f"got {labels.n_classes} classes"
            )
        counts = labels.vote_counts()
        return self.options.a0 + counts[:, 0], self.options.b0 + counts[:, 1]

    def score(self, labels: LabelSet) -> np.ndarray:
        """Knowledge-gradient value of one more label on each task (``R+`` or plain KG)."""
        a, b = self.posterior(labels)
        return knowledge_gradient(a, b, optimistic=self.options.optimistic)
