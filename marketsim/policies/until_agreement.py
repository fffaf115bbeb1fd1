"""Until agreement: label a task until ``agree`` answers agree, at most ``max_overlap`` labels
(``agree = 2``, ``max_overlap = 3``: "two labels, a third on disagreement")."""

from __future__ import annotations

from marketsim.policies.quorum import AgreementQuorum, QuorumOptions


class UntilAgreementOptions(QuorumOptions):
    """``until-agreement`` (a quorum of agreeing answers)."""


class UntilAgreementPolicy(AgreementQuorum[UntilAgreementOptions]):
    """Labels per task until ``agree`` answers agree or ``max_overlap`` labels."""

    name = "until-agreement"
    Options = UntilAgreementOptions
    description = (
        "Until-agreement hands each task `agree` labels, then one more at a time while no "
        "answer has `agree` votes, up to `max_overlap` (agree = 2, max_overlap = 3 is \"two "
        "labels, a third on disagreement\"); tasks in order, a closed task is never labelled "
        "again, and the requester stops spending once every task is closed."
    )

    @classmethod
    def rule(cls, options: UntilAgreementOptions) -> str:
        """The quorum and the cap."""
        return (f"every task gets {options.agree} labels, then one more at a time until "
                f"{options.agree} of its answers agree, at most {options.max_overlap} labels")
