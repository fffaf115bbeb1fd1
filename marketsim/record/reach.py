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


def final_counts(rows: Sequence[CurveRow], replicates: Sequence[int]) -> dict[str, Any]:
    """Gold spend and blocked workers at the end of each replicate, as mean and interval:
    ``gold_labels``, ``gold_money`` (the money paid for them) and ``blocked_workers``; a key
    only when its column is finite in every row."""
    last: dict[int, CurveRow] = {}
    for r in rows:
        if r.replicate not in last or r.edges > last[r.replicate].edges:
            last[r.replicate] = r
    ends = [last[rep] for rep in replicates if rep in last]
    columns = {
        "gold_labels": [r.gold_labels for r in ends],
        "gold_money": [r.gold_money for r in ends],
        "blocked_workers": [r.blocked_workers for r in ends],
    }
    needs = {"gold_labels": ("gold_labels",), "gold_money": ("gold_money",),
             "blocked_workers": ("blocked_workers",)}
    return {key: interval_dict(mean_interval(values, bounds=(0.0, math.inf)))
            for key, values in columns.items()
            if rows and all(math.isfinite(getattr(r, c)) for r in rows for c in needs[key])}


def under_budget(rows: Sequence[CurveRow], replicates: Sequence[int],
                 budget_edges: int | None) -> dict[str, Any]:
    """When some replicate ended before ``budget_edges`` labels (a preset closed every task,
    or the money ran out): how many did (``ended_under_budget``) and every replicate's final
    labels, money and error as mean and interval (``final_edges``, ``final_money``,
    ``final_error``); ``{}`` when
    every replicate spent the whole budget or the budget is not known."""
    last: dict[int, CurveRow] = {}
    for r in rows:
        if r.replicate not in last or r.edges > last[r.replicate].edges:
            last[r.replicate] = r
    ends = [last[rep] for rep in replicates if rep in last]
    early = sum(r.edges < budget_edges for r in ends) if budget_edges is not None else 0
    if not early:
        return {}
    out: dict[str, Any] = {
        "ended_under_budget": early,
        "final_edges": interval_dict(mean_interval([float(r.edges) for r in ends],
                                                   bounds=(0.0, math.inf))),
        "final_error": interval_dict(mean_interval([r.error_rate for r in ends],
                                                   bounds=(0.0, math.inf)))}
    if all(math.isfinite(r.money) for r in ends):
        out["final_money"] = interval_dict(mean_interval([r.money for r in ends],
                                                         bounds=(0.0, math.inf)))
    return out


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
