"""Per-arm summaries of curve rows: mean error, its interval, labels (money, time) to each
target error."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from marketsim.record.comparisons import compare_arms
from marketsim.record.curves import CurveRow
from marketsim.record.metric import metric_of_rows
from marketsim.record.reach import (
    TARGETS,
    cost_axes,
    edges_to_reach,
    final_values,
    reach_summary,
    under_budget,
)
from marketsim.record.stats import mean_interval
from marketsim.record.summary_model import ArmSummary, StoppedEarly, Summary
from marketsim.record.units import UnitResult, canonical_rows

__all__ = ["TARGETS", "build_summary", "edges_to_reach", "summarise", "targets_of"]

#: Per-edge means a continuous arm's summary adds.
SCORE_COLUMNS = ("rmse", "plain_rmse", "good_accuracy")


def _finite_mean(values: list[float]) -> float | None:
    """Mean of ``values``, or None when any is NaN (a metric this market does not have)."""
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()) if v.size and np.all(np.isfinite(v)) else None


def _num(x: float) -> float | None:
    """A float for JSON (NaN, i.e. unknown, as null)."""
    return float(x) if math.isfinite(x) else None


def summarise(rows: list[CurveRow], arm_order: list[str] | None = None,
              targets: Sequence[float] = TARGETS,
              budget_edges: int | None = None) -> dict[str, ArmSummary]:
    """Per arm: edges, mean error and its 95 % Student-t interval over replicates, and the
    edges needed to reach each target error. Only edge counts every replicate reached are
    averaged.

    ``error_ci95`` is the interval's half-width (t with n - 1 degrees of freedom; null
    with one replicate); ``error_low``/``error_high`` are its ends, clipped to
    [0, 1] for an error rate and to >= 0 for an RMSE. ``edges_to_reach`` is read off the
    mean curve; ``edges_to_reach_replicates`` holds each replicate's own labels-to-target and
    ``edges_to_reach_ci95`` their mean and interval (when every replicate reached it);
    ``time_to_reach_*`` and (when every row has money) ``money_to_reach_*`` are the same for
    the simulated time and the money spent (:mod:`marketsim.record.reach`). ``sim_time`` (and
    ``money``) hold their mean per edge count, the x values of the error-against-time (money)
    plots.

    "Final" is each replicate's own last point (where its run ended: the budget, or where it
    stopped), then the mean over replicates and its interval
    (:func:`~marketsim.record.reach.final_values`): ``final_edges``, ``final_error``,
    ``final_time``, ``final_money``, ``gold_labels``, ``gold_money``, ``blocked_workers``;
    ``final_error_mean`` is ``final_error``'s mean. The mean curve ends at the labels every
    replicate reached, which is not where the runs end when some stopped early. With
    ``budget_edges``, an arm some of whose replicates ended before it also gets
    ``ended_under_budget`` (:func:`~marketsim.record.reach.under_budget`).

    Arms of a continuous-score market (finite ``rmse`` everywhere) also get the mean
    ``rmse``, ``plain_rmse`` and ``good_accuracy`` per edge count, and ``metric = "rmse"``
    (``error`` is then the RMSE); other arms have ``metric = "error_rate"`` (``error`` is the
    task error rate)."""
    by_arm: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    ability: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    confusion: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    scores: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: {c: defaultdict(list) for c in SCORE_COLUMNS}
    )
    reps: dict[str, set[int]] = defaultdict(set)
    arm_rows: dict[str, list[CurveRow]] = defaultdict(list)
    x_values: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: {"money": defaultdict(list), "sim_time": defaultdict(list)})
    for r in rows:
        x_values[r.arm]["money"][r.edges].append(r.money)
        x_values[r.arm]["sim_time"][r.edges].append(r.sim_time)
        by_arm[r.arm][r.edges].append(r.error_rate)
        ability[r.arm][r.edges].append(r.ability_error)
        confusion[r.arm][r.edges].append(r.confusion_error)
        for c in SCORE_COLUMNS:
            scores[r.arm][c][r.edges].append(getattr(r, c))
        reps[r.arm].add(r.replicate)
        arm_rows[r.arm].append(r)
    order = arm_order or list(dict.fromkeys(r.arm for r in rows))
    arms: dict[str, ArmSummary] = {}
    for arm in order:
        if arm not in by_arm:
            continue
        n_rep = len(reps[arm])
        axis_values = x_values[arm]
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
        reach = reach_summary(arm_rows[arm], replicates, targets)
        ends = final_values(arm_rows[arm], replicates, bounds,
                            math.inf if budget_edges is None else budget_edges)
        fields: dict[str, Any] = {
            "metric": metric,
            "replicates": n_rep,
            "replicate_ids": replicates,
            "edges": edges,
            "error": means,
            "error_ci95": halfs,
            "error_low": lows,
            "error_high": highs,
            "ability_error": abil,
            "confusion_error": conf,
            "final_error_mean": (ends.get("final_error") or {}).get("mean"),
            "edges_to_reach": {
                f"{t:g}": edges_to_reach(e_arr, m_arr, t) for t in targets
            },
            **reach,
            "sim_time": [float(np.mean(axis_values["sim_time"][e])) for e in edges],
            **ends,
            **under_budget(arm_rows[arm], replicates, budget_edges),
        }
        if "money_to_reach_ci95" in reach:
            fields["money"] = [float(np.mean(axis_values["money"][e])) for e in edges]
        if metric == "rmse":
            for c in SCORE_COLUMNS:
                fields[c] = [_finite_mean(scores[arm][c][e]) for e in edges]
        arms[arm] = ArmSummary.model_validate(fields)
    return arms


def build_summary(
    *,
    name: str,
    seed: int | None,
    replicates: int,
    arm_names: Sequence[str],
    results: list[UnitResult],
    seconds: float | None,
    complete: bool,
    targets: Sequence[float] = TARGETS,
    budget_edges: int | None = None,
) -> Summary:
    """The ``summary.json`` content of a study's finished units (``seconds`` None: not
    known, as when re-rendered from ``curves.csv`` alone)."""
    rows = canonical_rows(results)
    return Summary.model_validate({
        "scenario": name,
        "metric": metric_of_rows(rows),
        "seed": seed,
        "replicates": replicates,
        "complete": complete,
        "units_finished": len(results),
        "units_total": replicates * len(arm_names),
        "seconds": None if seconds is None else round(seconds, 3),
        "arms": (arms := _with_stops(summarise(rows, list(arm_names), targets, budget_edges),
                                   arm_names, results)),
        "comparisons": compare_arms(rows, arms),
        "cost_axes": cost_axes(rows),
    })


def _with_stops(arms: dict[str, ArmSummary], arm_names: Sequence[str],
                results: list[UnitResult]) -> dict[str, ArmSummary]:
    """``arms`` with each arm's replicates that stopped early (``stopped``), by replicate."""
    stops: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for unit in sorted(results, key=lambda u: (u.arm, u.replicate)):
        if unit.stop is not None and unit.arm < len(arm_names):
            stops[arm_names[unit.arm]].append({
                "replicate": unit.replicate, "labels": unit.stop.labels,
                "causes": list(unit.stop.causes), "detail": unit.stop.detail})
    return {name: arm.model_copy(update={"stopped": [StoppedEarly(**s) for s in stops[name]]})
            if stops.get(name) else arm for name, arm in arms.items()}


def targets_of(arms: Mapping[str, ArmSummary]) -> tuple[float, ...]:
    """The target errors a summary's arms were measured against, largest first (the
    scenario's ``[report] targets``, else :data:`TARGETS`)."""
    for arm in arms.values():
        if arm.edges_to_reach:
            return tuple(sorted((float(k) for k in arm.edges_to_reach), reverse=True))
    return TARGETS
