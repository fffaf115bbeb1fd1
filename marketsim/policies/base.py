"""The assignment-policy protocol: at every refresh of the inference service a policy ranks the
tasks; arriving workers then get the highest-ranked task of the round they have not labelled.

A round hands out ``batch`` labels to distinct tasks, so a policy that ranks tasks is exactly
Maginnis & Gupta's "assign one new worker to each of the top B tasks", and the
uniform policy's random permutation is its "B distinct tasks uniformly" baseline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from marketsim.data.labels import LabelSet


@dataclass(frozen=True)
class MarketInfo:
    """What a policy may know about the market before it starts (fixed for the whole run).

    ``truth`` is only filled in for policies that declare ``needs_truth = True`` (the oracle).
    ``inference`` is the arm's estimator factory: calling it returns a fresh, unfitted estimator
    configured exactly like the market's inference service (used by simulation-based policies).
    """

    n_tasks: int
    n_workers: int
    n_classes: int
    class_prior: np.ndarray
    ability_alpha: float
    ability_beta: float
    ability_low: float
    inference: Any
    truth: np.ndarray | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MarketState:
    """The requester's view at a refresh: the labels so far and the latest estimate.

    ``proba`` (n_tasks, K) and ``skill`` (n_workers,) come from the inference service and may be
    stale by up to one batch, as in a real market. ``skill`` is the one-coin accuracy, or the
    accuracy implied by the confusion matrices and class prior for Dawid–Skene estimators.

    In a continuous-score market (Hoiem's bad-annotator model) ``proba`` is a column of ones
    (one "class"),
    ``skill`` and ``good_proba`` are each annotator's ``P(good)``, ``means`` the estimated task
    means (NaN for unscored tasks) and ``sigma`` the fitted noise of good annotators; these three
    are ``None`` in class markets.
    """

    labels: LabelSet
    proba: np.ndarray
    skill: np.ndarray
    spent: int
    budget: int
    means: np.ndarray | None = None
    good_proba: np.ndarray | None = None
    sigma: float | None = None


@runtime_checkable
class AssignmentPolicy(Protocol):
    """What the requester needs from a policy."""

    name: str
    needs_truth: bool

    def bind(self, info: MarketInfo) -> None:
        """Receive the market's fixed description once, before the first round."""

    def rank(self, state: MarketState, rng: np.random.Generator) -> np.ndarray:
        """Return task indices, most wanted first (a permutation of, or a prefix of, all tasks)."""
