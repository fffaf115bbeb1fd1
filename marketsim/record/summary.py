"""Per-arm summaries of curve rows: mean error, its interval, edges to each target error."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from marketsim.record.comparisons import compare_arms
from marketsim.record.curves import CurveRow
from marketsim.record.metric import metric_of_rows
from marketsim.record.stats import Interval, mean_interval
from marketsim.record.units import UnitResult, canonical_rows

#: Target errors whose edges-to-reach every summary reports.
TARGETS = (0.05, 0.01)
#: Per-edge means a continuous arm's summary adds.
SCORE_COLUMNS = ("rmse", "plain_rmse", "good_accuracy")


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


def _per_replicate_reach(rows: list[CurveRow], replicates: list[int]) -> dict[str, list[Any]]:
    """Per target: each replicate's own labels-to-target (None when never reached)."""
    curves: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for r in rows:
        curves[r.replicate].append((r.edges, r.error_rate))
    out: dict[str, list[Any]] = {}
    for t in TARGETS:
        reach = []
        for rep in replicates:
            pts = sorted(curves[rep])
            reach.append(edges_to_reach(np.asarray([e for e, _ in pts]),
                                        np.asarray([x for _, x in pts]), t))
        out[f"{t:g}"] = reach
    return out


def _interval_dict(iv: Interval) -> dict[str, Any]:
    return {"mean": _num(iv.mean), "low": _num(iv.low), "high": _num(iv.high), "n": iv.n}


def _num(x: float) -> float | None:
    """A float for JSON (NaN, i.e. unknown, as null)."""
    return float(x) if math.isfinite(x) else None


def summarise(rows: list[CurveRow], arm_order: list[str] | None = None) -> dict[str, Any]:
    """Per arm: edges, mean error and its 95 % Student-t interval over replicates, and the
    edges needed to reach each target error. Only edge counts every replicate reached are
    averaged.

    ``error_rate_ci95`` is the interval's half-width (t with n - 1 degrees of freedom; null
    with one replicate); ``error_rate_low``/``error_rate_high`` are its ends, clipped to
    [0, 1] for an error rate and to >= 0 for an RMSE. ``edges_to_reach`` is read off the
    mean curve; ``edges_to_reach_replicates`` holds each replicate's own labels-to-target and
    ``edges_to_reach_ci95`` their mean and interval (when every replicate reached it).

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
        metric = metric_of_rows(arm_rows[arm])
        bounds = (0.0, 1.0) if metric == "error_rate" else (0.0, math.inf)
        edges = sorted(e for e, v in by_arm[arm].items() if len(v) == n_rep)
        means, halfs, lows, highs, abil, conf = [], [], [], [], [], []
        for e in edges:
            iv = mean_interval(by_arm[arm][e], bounds=bounds)
            means.append(iv.mean)
            halfs.append(_num(iv.half_width))
            lows.append(_num(iv.low))
            highs.append(_num(iv.high))
            abil.append(float(np.mean(ability[arm][e])))
            cells = np.asarray(confusion[arm][e])
            conf.append(float(cells.mean()) if np.all(np.isfinite(cells)) else None)
        e_arr, m_arr = np.asarray(edges), np.asarray(means)
        replicates = sorted(reps[arm])
        per_rep = _per_replicate_reach(arm_rows[arm], replicates)
        arms[arm] = {
            "metric": metric,
            "replicates": n_rep,
            "replicate_ids": replicates,
            "edges": edges,
            "error_rate": means,
            "error_rate_ci95": halfs,
            "error_rate_low": lows,
            "error_rate_high": highs,
            "ability_error": abil,
            "confusion_error": conf,
            "final_error_rate": means[-1] if means else None,
            "edges_to_reach": {
                f"{t:g}": edges_to_reach(e_arr, m_arr, t) for t in TARGETS
            },
            "edges_to_reach_replicates": per_rep,
            "edges_to_reach_ci95": {
                key: {**_interval_dict(mean_interval(
                    [v for v in values if v is not None] if None not in values else [],
                    bounds=(0.0, math.inf))),
                      "reached": sum(v is not None for v in values), "of": len(values)}
                for key, values in per_rep.items()
            },
        }
        if metric == "rmse":
            for c in SCORE_COLUMNS:
                arms[arm][c] = [_finite_mean(scores[arm][c][e]) for e in edges]
    return arms


def build_summary(
    *,
    name: str,
    seed: Any,
    replicates: int,
    arm_names: Sequence[str],
    results: list[UnitResult],
    seconds: float,
    complete: bool,
) -> dict[str, Any]:
    """The ``summary.json`` content of a study's finished units."""
    rows = canonical_rows(results)
    return {
        "scenario": name,
        "metric": metric_of_rows(rows),
        "seed": seed,
        "replicates": replicates,
        "complete": complete,
        "units_finished": len(results),
        "units_total": replicates * len(arm_names),
        "seconds": round(seconds, 3),
        "arms": (arms := summarise(rows, list(arm_names))),
        "comparisons": compare_arms(rows, arms),
    }
