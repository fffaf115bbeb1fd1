"""Until agreement: label a task until ``agree`` answers agree, at most ``max_overlap`` labels
(``agree = 2``, ``max_overlap = 3``: "two labels, a third on disagreement")."""

from __future__ import annotations

import numpy as np

from marketsim.options import F, OptionError, Options
from marketsim.policies.base import MarketState
from marketsim.policies.overlap import OverlapRule


class UntilAgreementOptions(Options):
    """``until-agreement`` (a quorum of agreeing answers)."""

    agree: int = F(2, "close a task once this many of its answers agree (a quorum)", ge=1,
                   le=1000)
    max_overlap: int = F(3, "labels per task at most, the initial graph's included (close the "
                         "task without agreement there)", ge=1, le=1000)


class UntilAgreementPolicy(OverlapRule[UntilAgreementOptions]):
    """Labels per task until ``agree`` answers agree or ``max_overlap`` labels."""

    name = "until-agreement"
    Options = UntilAgreementOptions
    #: Options counting a task's labels, each from a distinct worker (at most workers.count).
    per_task_options = ("agree", "max_overlap")
    description = (
        "Until-agreement hands each task `agree` labels, then one more at a time while no "
        "answer has `agree` votes, up to `max_overlap` (agree = 2, max_overlap = 3 is \"two "
        "labels, a third on disagreement\"); tasks in order, a closed task is never labelled "
        "again, and the requester stops spending once every task is closed."
    )

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        if self.options.max_overlap < self.options.agree:
            raise OptionError(type(self).__name__, f"max_overlap = {self.options.max_overlap} "
                              f"must be >= agree = {self.options.agree}")

    @classmethod
    def rule(cls, options: UntilAgreementOptions) -> str:
        """The quorum and the cap."""
        return (f"every task gets {options.agree} labels, then one more at a time until "
                f"{options.agree} of its answers agree, at most {options.max_overlap} labels")

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
