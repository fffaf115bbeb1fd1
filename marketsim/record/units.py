"""The result of one (replicate, arm) unit and the canonical order of a study's rows."""

from __future__ import annotations

from dataclasses import dataclass

from marketsim.record.curves import CurveRow


@dataclass(frozen=True)
class UnitResult:
    """The recorded curve of one (replicate, arm) unit and how long it took."""

    replicate: int
    arm: int
    rows: tuple[CurveRow, ...]
    seconds: float


def canonical_rows(results: list[UnitResult]) -> list[CurveRow]:
    """All rows ordered by arm index, replicate, then edges (as recorded), whatever order the
    units finished in: ``curves.csv`` does not depend on ``--jobs``."""
    ordered = sorted(results, key=lambda u: (u.arm, u.replicate))
    return [row for unit in ordered for row in unit.rows]
