"""Paired comparisons of every arm against a reference arm.

Arms run on the same worlds replicate by replicate (common random numbers), so the
difference of two arms on one replicate removes the world's own difficulty: the paired
interval is much tighter than two separate ones. Compared at each checkpoint the reference
arm also has, on the final error (each replicate's own last point, where its run ended: the
difference of the arms' final errors, replicate by replicate), and on labels-to-target
(replicates where both arms reached the target).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from marketsim.record.curves import CurveRow
from marketsim.record.reach import replicate_ends
from marketsim.record.stats import PairedComparison, paired_comparison
from marketsim.record.summary_model import ArmSummary, Comparisons


def _per_replicate(rows: list[CurveRow]) -> dict[str, dict[int, dict[int, float]]]:
    """arm -> edges -> replicate -> error."""
    out: dict[str, dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        out[r.arm][r.edges][r.replicate] = r.error_rate
    return out


def _entry(cmp: PairedComparison, fmt: Callable[[float], str] = "{:.4g}".format
           ) -> dict[str, Any]:
    d = cmp.difference
    finite = [float(x) if np.isfinite(x) else None for x in (d.mean, d.low, d.high, cmp.p_value)]
    return {
        "difference": finite[0], "low": finite[1], "high": finite[2], "p_value": finite[3],
        "replicates": d.n, "detected": cmp.detected,
        "replicates_needed": cmp.replicates_needed,
        "verdict": cmp.verdict(fmt=fmt),
    }


#: How a difference of errors is printed in a verdict, per metric: as report.md's tables
#: print it (percentage points of an error rate, four decimals of an RMSE).
ERROR_FORMATS: dict[str, Callable[[float], str]] = {
    "error_rate": lambda x: f"{100 * x:.2f} pt",
    "rmse": "{:.4f}".format,
}

#: How a difference to target is printed, per axis (``summary.json`` key prefix).
REACH_FORMATS: dict[str, Callable[[float], str]] = {
    "edges": "{:,.0f} labels".format,
    "money": "{:,.2f} in money".format,
    "time": "{:,.1f} in simulated time".format,
}


def _reach(name: str, ref: str, arm: ArmSummary, ref_arm: ArmSummary, reps: list[int],
           axis: str, fmt: Callable[[float], str]) -> dict[str, Any]:
    """Per target: ``name`` minus ``ref`` in the per-replicate values to target on ``axis``
    (e.g. ``money_to_reach_replicates``), on the replicates where both reached the target."""
    out = {}
    theirs_all = ref_arm.to_reach_replicates(axis)
    for target, values in arm.to_reach_replicates(axis).items():
        by_rep = dict(zip(arm.replicate_ids, values, strict=True))
        ref_rep = dict(zip(ref_arm.replicate_ids, theirs_all[target], strict=True))
        mine = [np.nan if (v := by_rep.get(r)) is None else v for r in reps]
        theirs = [np.nan if (v := ref_rep.get(r)) is None else v for r in reps]
        out[target] = _entry(paired_comparison(name, ref, mine, theirs), fmt)
    return out


def _final_errors(rows: list[CurveRow]) -> dict[str, dict[int, float]]:
    """arm -> replicate -> the error at that replicate's own last point."""
    by_arm: dict[str, list[CurveRow]] = defaultdict(list)
    for r in rows:
        by_arm[r.arm].append(r)
    return {arm: {rep: r.error_rate for rep, r in replicate_ends(arm_rows).items()}
            for arm, arm_rows in by_arm.items()}


def compare_arms(rows: list[CurveRow], arms: dict[str, ArmSummary],
                 reference: str | None = None) -> Comparisons:
    """``summary.json``'s ``comparisons``: each arm minus ``reference`` (default: the first
    arm) at every shared checkpoint, on the final error (``final_error``: each replicate's
    own final error, paired by replicate, so its mean is the difference of the two arms'
    ``final_error_mean`` when they have the same replicates) and on labels-to-target
    (``edges_to_reach``), and on money and simulated time to target (``money_to_reach``,
    ``time_to_reach``) where both arms have them; empty with fewer than two arms. Intervals
    of a difference of two error rates are clipped to [-1, 1].

    ``arms`` is :func:`marketsim.record.summary.summarise`'s output for the same rows."""
    names = list(arms)
    if len(names) < 2:
        return Comparisons()
    ref = reference if reference in arms else names[0]
    errors = _per_replicate(rows)
    finals = _final_errors(rows)
    out: dict[str, Any] = {"reference": ref, "arms": {}}
    ref_arm = arms[ref]
    for name in names:
        if name == ref:
            continue
        arm = arms[name]
        shared = sorted(set(arm.edges) & set(ref_arm.edges))
        reps = sorted(set(arm.replicate_ids) & set(ref_arm.replicate_ids))
        bounds = (-1.0, 1.0) if arm.metric == "error_rate" else None
        fmt = ERROR_FORMATS[arm.metric]
        checkpoints = []
        for e in shared:
            mine = [errors[name][e].get(r, np.nan) for r in reps]
            theirs = [errors[ref][e].get(r, np.nan) for r in reps]
            checkpoints.append({"edges": e, **_entry(paired_comparison(
                name, ref, mine, theirs, bounds=bounds), fmt)})
        final = paired_comparison(name, ref, [finals[name].get(r, np.nan) for r in reps],
                                  [finals[ref].get(r, np.nan) for r in reps], bounds=bounds)
        out["arms"][name] = {"checkpoints": checkpoints, "final_error": _entry(final, fmt)}
        for axis, fmt in REACH_FORMATS.items():
            if arm.to_reach_replicates(axis) and ref_arm.to_reach_replicates(axis):
                out["arms"][name][f"{axis}_to_reach"] = _reach(name, ref, arm, ref_arm, reps,
                                                               axis, fmt)
    return Comparisons.model_validate(out)
