"""The long-format ``curves.csv`` and the per-arm summary computed from it."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from marketsim.errors import InputError
from marketsim.record.files import write_csv_atomic

CURVE_COLUMNS = ("arm", "replicate", "edges", "error_rate", "ability_error", "sim_time")
#: Optional columns after the required ones (older files may lack them). In a continuous-score
#: market ``error_rate`` is the task-mean RMSE and equals ``rmse``; ``rmse``, ``plain_rmse`` and
#: ``good_accuracy`` are empty (NaN) in class markets.
#: ``money`` is the amount spent (gold included; equal to ``edges`` when every label costs 1),
#: ``gold_labels`` the gold (control) answers bought, ``blocked_workers`` the workers blocked so
#: far, ``gold_money`` the money paid for the gold answers.
EXTRA_COLUMNS = ("confusion_error", "rmse", "plain_rmse", "good_accuracy",
                 "money", "gold_labels", "blocked_workers", "gold_money")


@dataclass(frozen=True, eq=False)
class CurvePoint:
    """One sample of the recorder, taken at every refresh of the inference service.

    ``error_rate`` is the market's headline error: the fraction of misclassified tasks, or in a
    continuous-score market the RMSE of the task means (then equal to ``rmse``). ``plain_rmse``
    is the RMSE of the unweighted mean of the same scores, ``good_accuracy`` the accuracy of
    the good/bad annotator call; all three are NaN in class markets.

    Equality treats NaN as equal to NaN (a metric the market does not have), so identical runs
    give equal points whether or not they crossed a process boundary.

    >>> CurvePoint(100, 0.25, 0.1, 3.0) == CurvePoint(100, 0.25, 0.1, 3.0)
    True
    """

    edges: int
    error_rate: float
    ability_error: float
    sim_time: float
    #: Mean absolute error of the estimated confusion matrices (workers with a label).
    confusion_error: float = float("nan")
    rmse: float = float("nan")
    plain_rmse: float = float("nan")
    good_accuracy: float = float("nan")
    #: Money spent so far, gold included (= ``edges`` at flat price 1).
    money: float = float("nan")
    #: Gold answers bought so far (counted in ``edges`` and ``money``, never in the results).
    gold_labels: float = 0.0
    #: Workers blocked so far by the market's blocking rule.
    blocked_workers: float = 0.0
    #: Money paid for the gold answers (part of ``money``).
    gold_money: float = 0.0

    def _key(self) -> tuple[Any, ...]:
        return tuple(None if isinstance(v, float) and math.isnan(v) else v
                     for v in (getattr(self, f.name) for f in fields(self)))

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, CurvePoint)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def metrics(self) -> tuple[float, ...]:
        """The point's numbers after ``edges``, in ``curves.csv`` column order."""
        return tuple(getattr(self, f.name) for f in fields(CurvePoint)[1:])

    def at(self, arm: str, replicate: int) -> CurveRow:
        """This point as the row of ``arm``'s unit on ``replicate``."""
        return CurveRow(self.edges, *self.metrics(), arm=arm, replicate=replicate)


@dataclass(frozen=True, eq=False)
class CurveRow(CurvePoint):
    """A curve point of one (arm, replicate) unit: one row of ``curves.csv``.

    >>> CurvePoint(100, 0.25, 0.1, 3.0).at("uniform", 0).arm
    'uniform'
    """

    arm: str = field(kw_only=True)
    replicate: int = field(kw_only=True)


def _fmt(x: float) -> str:
    return repr(float(x))


def csv_records(rows: list[CurveRow]) -> list[tuple[Any, ...]]:
    """The ``curves.csv`` records of ``rows`` (after the header), as written."""
    return [(r.arm, r.replicate, r.edges, *(_fmt(x) for x in r.metrics())) for r in rows]


def write_curves(path: str | Path, rows: list[CurveRow]) -> None:
    """Write rows in a canonical order (arms as given, then replicate, then edges)."""
    write_csv_atomic(path, CURVE_COLUMNS + EXTRA_COLUMNS, csv_records(rows))


def read_curves(path: str | Path) -> list[CurveRow]:
    """Read a ``curves.csv`` back; a malformed file is a one-line InputError."""
    rows: list[CurveRow] = []
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = set(CURVE_COLUMNS) - set(reader.fieldnames or ())
            if missing:
                raise InputError(f"missing columns {sorted(missing)}", source=str(path), where="1")
            for line, rec in enumerate(reader, start=2):
                try:
                    rows.append(
                        CurveRow(
                            int(rec["edges"]), float(rec["error_rate"]),
                            float(rec["ability_error"]), float(rec["sim_time"]),
                            *(float(rec.get(c) or "nan") for c in EXTRA_COLUMNS),
                            arm=rec["arm"], replicate=int(rec["replicate"]),
                        )
                    )
                except (TypeError, ValueError) as exc:
                    raise InputError(f"bad value ({exc})", source=str(path), where=str(line)) \
                        from None
    except FileNotFoundError:
        raise InputError("file not found", source=str(path)) from None
    return rows
