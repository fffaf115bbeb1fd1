"""The long-format ``curves.csv`` and the per-arm summary computed from it."""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.errors import InputError
from marketsim.report.files import write_csv_atomic
from marketsim.report.metric import metric_of_rows

CURVE_COLUMNS = ("arm", "replicate", "edges", "error_rate", "ability_error", "sim_time")
#: Optional columns after the required ones (older files may lack them). In a continuous-score
#: market ``error_rate`` is the task-mean RMSE and equals ``rmse``; ``rmse``, ``plain_rmse`` and
#: ``good_accuracy`` are empty (NaN) in class markets.
EXTRA_COLUMNS = ("confusion_error", "rmse", "plain_rmse", "good_accuracy")
TARGETS = (0.05, 0.01)
#: Per-edge means a continuous arm's summary adds.
SCORE_COLUMNS = ("rmse", "plain_rmse", "good_accuracy")


@dataclass(frozen=True, eq=False)
class CurveRow:
    """One recorded point of one (arm, replicate) unit.

    Equality treats NaN as equal to NaN (a metric the market does not have), so identical runs
    give equal rows whether or not the rows crossed a process boundary."""

    arm: str
    replicate: int
    edges: int
    error_rate: float
    ability_error: float
    sim_time: float
    #: Mean absolute error of the estimated confusion matrices (workers with a label).
    confusion_error: float = float("nan")
    #: Continuous markets: RMSE of the estimated task means, of the plain (unweighted) means of
    #: the same scores, and accuracy of the good/bad annotator call.
    rmse: float = float("nan")
    plain_rmse: float = float("nan")
    good_accuracy: float = float("nan")


    def _key(self) -> tuple[Any, ...]:
        return tuple(None if isinstance(v, float) and math.isnan(v) else v
                     for v in (getattr(self, f.name) for f in fields(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CurveRow):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def _fmt(x: float) -> str:
    return repr(float(x))


def write_curves(path: str | Path, rows: list[CurveRow]) -> None:
    """Write rows in a canonical order (arms as given, then replicate, then edges)."""
    write_csv_atomic(
        path,
        CURVE_COLUMNS + EXTRA_COLUMNS,
        (
            (r.arm, r.replicate, r.edges, _fmt(r.error_rate), _fmt(r.ability_error),
             _fmt(r.sim_time), _fmt(r.confusion_error), _fmt(r.rmse), _fmt(r.plain_rmse),
             _fmt(r.good_accuracy))
            for r in rows
        ),
    )


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
                            rec["arm"], int(rec["replicate"]), int(rec["edges"]),
                            float(rec["error_rate"]), float(rec["ability_error"]),
                            float(rec["sim_time"]),
                            *(float(rec.get(c) or "nan") for c in EXTRA_COLUMNS),
                        )
                    )
                except (TypeError, ValueError) as exc:
                    raise InputError(f"bad value ({exc})", source=str(path), where=str(line)) \
                        from None
    except FileNotFoundError:
        raise InputError("file not found", source=str(path)) from None
    return rows


def edges_to_reach(edges: np.ndarray, error: np.ndarray, target: float) -> int | None:
    """Fewest edges after which the mean error stays at or below ``target``."""
    above = np.nonzero(error > target)[0]
    if above.size == 0:
        return int(edges[0]) if edges.size else None
    last = above[-1]
    return int(edges[last + 1]) if last + 1 < edges.size else None


def _finite_mean(values: list[float]) -> float | None:
    """Mean of ``values``, or None when any is NaN (a metric this market does not have)."""
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()) if v.size and np.all(np.isfinite(v)) else None


def summarise(rows: list[CurveRow], arm_order: list[str] | None = None) -> dict[str, Any]:
    """Per arm: edges, mean error and its 95% CI half-width over replicates, and the edges
    needed to reach each target error. Only edge counts every replicate reached are averaged.

    Arms of a continuous-score market (finite ``rmse`` everywhere) also get the mean
    ``rmse``, ``plain_rmse`` and ``good_accuracy`` per edge count, and ``metric = "rmse"``
    (``error_rate`` is then the RMSE); other arms have ``metric = "error_rate"``."""
    by_arm: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    ability: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    confusion: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    scores: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: {c: defaultdict(list) for c in SCORE_COLUMNS}
    )
    reps: dict[str, set[int]] = defaultdict(set)
    arm_rows: dict[str, list[CurveRow]] = defaultdict(list)
    for r in rows:
        by_arm[r.arm][r.edges].append(r.error_rate)
        ability[r.arm][r.edges].append(r.ability_error)
        confusion[r.arm][r.edges].append(r.confusion_error)
        for c in SCORE_COLUMNS:
            scores[r.arm][c][r.edges].append(getattr(r, c))
        reps[r.arm].add(r.replicate)
        arm_rows[r.arm].append(r)
    order = arm_order or list(dict.fromkeys(r.arm for r in rows))
    arms: dict[str, Any] = {}
    for arm in order:
        if arm not in by_arm:
            continue
        n_rep = len(reps[arm])
        edges = sorted(e for e, v in by_arm[arm].items() if len(v) == n_rep)
        means, halfs, abil, conf = [], [], [], []
        for e in edges:
            v = np.asarray(by_arm[arm][e])
            means.append(float(v.mean()))
            halfs.append(float(1.96 * v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else 0.0)
            abil.append(float(np.mean(ability[arm][e])))
            c = np.asarray(confusion[arm][e])
            conf.append(float(c.mean()) if np.all(np.isfinite(c)) else None)
        e_arr, m_arr = np.asarray(edges), np.asarray(means)
        metric = metric_of_rows(arm_rows[arm])
        arms[arm] = {
            "metric": metric,
            "replicates": n_rep,
            "edges": edges,
            "error_rate": means,
            "error_rate_ci95": halfs,
            "ability_error": abil,
            "confusion_error": conf,
            "final_error_rate": means[-1] if means else None,
            "edges_to_reach": {
                f"{t:g}": edges_to_reach(e_arr, m_arr, t) for t in TARGETS
            },
        }
        if metric == "rmse":
            for c in SCORE_COLUMNS:
                arms[arm][c] = [_finite_mean(scores[arm][c][e]) for e in edges]
    return arms
