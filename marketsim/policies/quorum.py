"""A quorum of agreeing answers: a task is labelled until ``agree`` of its answers agree, at most
``max_overlap`` labels — the ``until-agreement`` preset's rule, and the humans' rule on the tasks
the machine-first policies (``cascade``, ``verify``, ``cost-aware-models``) send them.

One implementation (:class:`AgreementQuorum`) of the overlap rule's three questions (labels
first, labels at most, when a judged task is settled), so a preset on humans alone and the human
step of a mixed market close a task on exactly the same votes.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from marketsim.options import F, Options
from marketsim.policies.base import MarketState
from marketsim.policies.overlap import OverlapRule


class QuorumOptions(Options):
    """A quorum of agreeing answers, capped."""

    agree: int = F(2, "close a task once this many of its answers agree (a quorum)", ge=1,
                   le=1000)
    max_overlap: int = F(3, "labels per task at most, the initial graph's included (close the "
                         "task without agreement there)", ge=1, le=1000)


QuorumT = TypeVar("QuorumT", bound=QuorumOptions)


class AgreementQuorum(OverlapRule[QuorumT]):
    """The overlap rule "until ``agree`` answers agree, at most ``max_overlap`` labels"."""

    #: Options counting a task's labels, each from a distinct worker (at most workers.count).
    per_task_options = ("agree", "max_overlap")
    #: ``max_overlap`` may not be below ``agree``.
    ordered_options = ("agree", "max_overlap")

    def first(self) -> int:
        """No quorum of ``agree`` before ``agree`` labels."""
        return self.options.agree

    def cap(self) -> int:
        """``max_overlap`` labels at most."""
        return self.options.max_overlap

    def satisfied(self, tasks: np.ndarray, state: MarketState) -> np.ndarray:
        """Some answer has ``agree`` votes."""
        assert state.task_votes is not None
        return np.asarray(state.task_votes)[tasks].max(axis=1) >= self.options.agree
