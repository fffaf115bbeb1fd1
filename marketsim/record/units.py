"""The result of one (replicate, arm) unit and the canonical order of a study's rows."""

from __future__ import annotations

from dataclasses import dataclass

from marketsim.record.curves import CurveRow

#: Why a market may stop buying before ``budget.edges``: a recorded result, not an error.
STOP_CAUSES = ("money", "blocking", "capacity", "sessions", "abandonment", "closed")


@dataclass(frozen=True)
class Stop:
    """A unit that stopped buying labels before ``budget.edges``: at ``labels`` labels (gold
    answers included, the last curve point), because of ``causes`` (from
    :data:`STOP_CAUSES`: the money budget was spent, no worker was left who may work (blocked,
    at their capacity, gone after their session, or holding, as labelled or abandoned, every
    task they could still be given), or the policy closed every task (a platform preset's
    stopping rule), with ``detail`` in words (what stopped how many workers, and what to
    change)."""

    labels: int
    causes: tuple[str, ...]
    detail: str

    @property
    def out_of_workers(self) -> bool:
        """The workers ran out (not the money)."""
        return "money" not in self.causes


@dataclass(frozen=True)
class UnitResult:
    """The recorded curve of one (replicate, arm) unit, how long it took, and why it stopped
    early (``stop``; ``None`` when it bought its whole budget)."""

    replicate: int
    arm: int
    rows: tuple[CurveRow, ...]
    seconds: float
    stop: Stop | None = None


def canonical_rows(results: list[UnitResult]) -> list[CurveRow]:
    """All rows ordered by arm index, replicate, then edges (as recorded), whatever order the
    units finished in: ``curves.csv`` does not depend on ``--jobs``."""
    ordered = sorted(results, key=lambda u: (u.arm, u.replicate))
    return [row for unit in ordered for row in unit.rows]
