"""Labels, money and simulated time to reach a target error.

One rule for every x axis: a curve reaches a target at its first point after which the error
stays at or below the target for the rest of the run; the labels, money and simulated time to
target are that point's ``edges``, ``money`` and ``sim_time``. Money counts only where every row
of the arm has it (``curves.csv`` files written before the market had prices hold NaN)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from marketsim.record.curves import CurveRow
from marketsim.record.stats import Interval, mean_interval

#: Target errors whose labels (money, time) to reach every summary reports.
TARGETS = (0.05, 0.01)
#: The x axes of a target: ``summary.json`` key prefix -> ``CurveRow`` attribute.
AXES = {"edges": "edges", "money": "money", "time": "sim_time"}


def reach_index(error: np.ndarray, target: float) -> int | None:
    """Index of the first point after which ``error`` stays at or below ``target`` (None when
    the last point is above it, or there are no points)."""
    above = np.nonzero(error > target)[0]
    if above.size == 0:
        return 0 if error.size else None
    last = int(above[-1])
    return last + 1 if last + 1 < error.size else None


def edges_to_reach(edges: np.ndarray, error: np.ndarray, target: float) -> int | None:
    """Fewest edges after which the mean error stays at or below ``target``."""
    i = reach_index(error, target)
    return None if i is None else int(edges[i])


def axes_of(rows: Sequence[CurveRow]) -> list[str]:
    """The axes ``rows`` can be read on: labels and time always, money when every row has it."""
    finite_money = bool(rows) and all(math.isfinite(r.money) for r in rows)
    return [a for a in AXES if a != "money" or finite_money]


def per_replicate_reach(rows: Sequence[CurveRow], replicates: Sequence[int],
                        axes: Sequence[str], targets: Sequence[float] = TARGETS
                        ) -> dict[str, dict[str, list[Any]]]:
    """Per axis and target: each replicate's own value at the point its curve reaches the
    target (None when it never does); labels as ints, money and time as floats."""
    curves: dict[int, list[CurveRow]] = defaultdict(list)
    for r in rows:
        curves[r.replicate].append(r)
    out: dict[str, dict[str, list[Any]]] = {a: {} for a in axes}
    for t in targets:
        found: dict[str, list[Any]] = {a: [] for a in axes}
        for rep in replicates:
            pts = sorted(curves[rep], key=lambda r: r.edges)
            i = reach_index(np.asarray([r.error_rate for r in pts]), t)
            for a in axes:
                value = None if i is None else getattr(pts[i], AXES[a])
                found[a].append(value if value is None or a == "edges" else float(value))
        for a in axes:
            out[a][f"{t:g}"] = found[a]
    return out


def interval_dict(iv: Interval) -> dict[str, Any]:
    """An interval for JSON: ``mean, low, high, n`` (NaN, i.e. unknown, as null)."""
    return {"mean": _num(iv.mean), "low": _num(iv.low), "high": _num(iv.high), "n": iv.n}


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def reach_intervals(per_rep: dict[str, list[Any]]) -> dict[str, dict[str, Any]]:
    """Per target: the mean of the replicates' values with its Student-t interval (when every
    replicate reached the target), and how many of them did."""
    return {
        key: {**interval_dict(mean_interval(
            [v for v in values if v is not None] if None not in values else [],
            bounds=(0.0, math.inf))),
              "reached": sum(v is not None for v in values), "of": len(values)}
        for key, values in per_rep.items()
    }


def reach_summary(rows: Sequence[CurveRow], replicates: Sequence[int],
                  targets: Sequence[float] = TARGETS) -> dict[str, Any]:
    """An arm's ``summary.json`` keys for every axis it has: ``<axis>_to_reach_replicates``
    (each replicate's own value) and ``<axis>_to_reach_ci95`` (their mean and interval)."""
    out: dict[str, Any] = {}
    for axis, per_rep in per_replicate_reach(rows, replicates, axes_of(rows),
                                             targets).items():
        out[f"{axis}_to_reach_replicates"] = per_rep
        out[f"{axis}_to_reach_ci95"] = reach_intervals(per_rep)
    return out


def replicate_ends(rows: Sequence[CurveRow]) -> dict[int, CurveRow]:
    """Each replicate's last point (most labels): where its run ended — the budget, or where
    it stopped (a preset closed every task, the money ran out, no worker was left)."""
    last: dict[int, CurveRow] = {}
    for r in rows:
        if r.replicate not in last or r.edges > last[r.replicate].edges:
            last[r.replicate] = r
    return last


#: ``summary.json`` key -> the ``CurveRow`` attribute read at each replicate's end.
FINAL_COLUMNS = {"final_edges": "edges", "final_error": "error_rate",
                 "final_time": "sim_time", "final_money": "money",
                 "gold_labels": "gold_labels", "gold_money": "gold_money",
                 "blocked_workers": "blocked_workers"}


def final_values(rows: Sequence[CurveRow], replicates: Sequence[int],
                 error_bounds: tuple[float, float] = (0.0, 1.0),
                 max_edges: float = math.inf) -> dict[str, Any]:
    """What "final" means, defined once: each replicate's value at its own last point
    (:func:`replicate_ends`), then their mean and 95 % Student-t interval — the labels
    (``final_edges``, clipped to ``max_edges``, the budget), the headline error
    (``final_error``, clipped to ``error_bounds``: [0, 1] for an error rate), the simulated
    time (``final_time``), the money (``final_money``), the gold answers, their money and the
    blocked workers (``gold_labels``, ``gold_money``, ``blocked_workers``). A key only when
    its column is finite in every row (money: in every replicate's last row)."""
    last = replicate_ends(rows)
    ends = [last[rep] for rep in replicates if rep in last]
    if not ends:
        return {}
    out: dict[str, Any] = {}
    for key, column in FINAL_COLUMNS.items():
        values = [float(getattr(r, column)) for r in ends]
        checked = ends if key in ("final_money", "final_edges", "final_error",
                                  "final_time") else rows
        if not all(math.isfinite(getattr(r, column)) for r in checked):
            continue
        bounds = {"final_error": error_bounds, "final_edges": (0.0, max_edges)}.get(
            key, (0.0, math.inf))
        out[key] = interval_dict(mean_interval(values, bounds=bounds))
    return out


def under_budget(rows: Sequence[CurveRow], replicates: Sequence[int],
                 budget_edges: int | None) -> dict[str, Any]:
    """``ended_under_budget``: how many replicates ended before ``budget_edges`` labels (a
    preset closed every task, the money ran out, no worker was left), only when some did and
    the budget is known (their labels, money and error at the end are :func:`final_values`,
    as for every run)."""
    last = replicate_ends(rows)
    early = (sum(last[rep].edges < budget_edges for rep in replicates if rep in last)
             if budget_edges is not None else 0)
    return {"ended_under_budget": early} if early else {}


def cost_axes(rows: Sequence[CurveRow]) -> list[str]:
    """The axes that tell more than the labels: ``money`` when some label did not cost 1
    (money differs from edges), ``time`` when arms took different simulated times for the same
    labels on the same replicate (a policy declined workers, or a blocked worker's arrivals
    were skipped) or a worker was blocked. Empty for every market without prices, declines
    and blocking, whose reports then stay as they were."""
    out = []
    if rows and all(math.isfinite(r.money) for r in rows) and any(
            r.money != r.edges for r in rows):
        out.append("money")
    times: dict[tuple[int, int], float] = {}
    differs = any(math.isfinite(r.blocked_workers) and r.blocked_workers > 0 for r in rows)
    for r in rows:
        if differs:
            break
        seen = times.setdefault((r.replicate, r.edges), r.sim_time)
        differs = seen != r.sim_time
    if differs:
        out.append("time")
    return out
