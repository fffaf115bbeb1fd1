"""The long-format ``curves.csv`` and the per-arm summary computed from it."""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.errors import InputError
from marketsim.report.files import write_csv_atomic

CURVE_COLUMNS = ("arm", "replicate", "edges", "error_rate", "ability_error", "sim_time")
#: Optional columns after the required ones (older files may lack them).
EXTRA_COLUMNS = ("confusion_error",)
TARGETS = (0.05, 0.01)


@dataclass(frozen=True)
class CurveRow:
    """One recorded point of one (arm, replicate) unit."""

    arm: str
    replicate: int
    edges: int
    error_rate: float
    ability_error: float
    sim_time: float
    #: Mean absolute error of the estimated confusion matrices (workers with a label).
    confusion_error: float = float("nan")


def _fmt(x: float) -> str:
    return repr(float(x))


def write_curves(path: str | Path, rows: list[CurveRow]) -> None:
    """Write rows in a canonical order (arms as given, then replicate, then edges)."""
    write_csv_atomic(
        path,
        CURVE_COLUMNS + EXTRA_COLUMNS,
        (
            (r.arm, r.replicate, r.edges, _fmt(r.error_rate), _fmt(r.ability_error),
             _fmt(r.sim_time), _fmt(r.confusion_error))
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
                            float(rec.get("confusion_error") or "nan"),
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


def summarise(rows: list[CurveRow], arm_order: list[str] | None = None) -> dict[str, Any]:
    """Per arm: edges, mean error and its 95% CI half-width over replicates, and the edges
    needed to reach each target error. Only edge counts every replicate reached are averaged."""
    by_arm: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    ability: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    confusion: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    reps: dict[str, set[int]] = defaultdict(set)
    for r in rows:
        by_arm[r.arm][r.edges].append(r.error_rate)
        ability[r.arm][r.edges].append(r.ability_error)
        confusion[r.arm][r.edges].append(r.confusion_error)
        reps[r.arm].add(r.replicate)
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
        arms[arm] = {
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
    return arms
