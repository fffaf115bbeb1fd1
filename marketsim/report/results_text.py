"""The results tables of ``report.md``: the arms table, the plot caption, the error at budget
checkpoints and the labels needed to reach each target (the claims are
:mod:`~marketsim.report.comparison_text`'s)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.record.metric import Metric
from marketsim.record.summary import targets_of
from marketsim.record.summary_model import ArmSummary, Interval
from marketsim.report.arm_text import ArmSpec, method_name, policy_name
from marketsim.report.comparison_text import BASELINE_POLICY, baseline
from marketsim.report.formatting import num, table
from marketsim.report.plots import PNG_NAME, SVG_NAME, PlotInfo

#: Budget checkpoints in the error table (evenly spaced, first and last included).
N_CHECKPOINTS = 5

#: ``summary.json``'s ``arms``: per arm name, its mean curve and targets.
Arms = Mapping[str, ArmSummary]


def checkpoints(arms: Arms, n: int = N_CHECKPOINTS) -> list[int]:
    """``n`` recorded edge counts evenly spaced over the run, the first and last included
    (taken from the edges every arm recorded when there are any)."""
    edge_sets = [set(a.edges) for a in arms.values() if a.edges]
    if not edge_sets:
        return []
    common = set.intersection(*edge_sets)
    grid = np.asarray(sorted(common or set.union(*edge_sets)))
    targets = np.linspace(grid[0], grid[-1], n)
    picks = [int(grid[np.argmin(np.abs(grid - t))]) for t in targets]
    return list(dict.fromkeys(picks))


def score_section(
    arms: Arms, names: Sequence[str], metric: Metric
) -> list[str]:
    """Continuous markets: each arm's final RMSE against the plain mean of the same scores, and
    how well the good/bad annotator call matches the truth."""
    rows = []
    for name in names:
        a = arms[name]
        em, plain, good = (v[-1] if v else None
                           for v in (a.rmse, a.plain_rmse, a.good_accuracy))
        if em is None or plain is None:
            continue
        gain = f"{100 * (1 - em / plain):.0f} %" if plain > 0 else "—"
        rows.append([name, metric.fmt(em), metric.fmt(plain), gain,
                     "—" if good is None else f"{100 * good:.1f} %"])
    if not rows:
        return []
    return [
        "## Estimator against the plain mean", "",
        "At the last label count all of the arm's replicates reached (the mean curve's last "
        "point: the end of the budget, unless some replicate stopped early): the arm's "
        "task-mean RMSE, the RMSE of the plain (unweighted) mean of exactly the same scores, "
        "how much lower the estimator's is, and the share of "
        "annotators (with at least one score) whose good/bad call P(good) > 0.5 is right.", "",
        *table(["arm", "RMSE", "plain-mean RMSE", "reduction", "good/bad call accuracy"],
               rows), "",
    ]


def saving(arm: ArmSummary, base: ArmSummary, key: str) -> str:
    """Labels ``arm`` saved against ``base`` to reach target ``key`` (``+1,200 (+25 %)``)."""
    mine, theirs = arm.edges_to_reach.get(key), base.edges_to_reach.get(key)
    if mine is None:
        return "— (not reached)"
    if theirs is None:
        last = base.edges[-1] if base.edges else None
        if last is None:
            return "—"
        return f"> {num(max(last - mine, 0))} (baseline never reached it)"
    diff = theirs - mine
    rel = f" ({100 * diff / theirs:+.0f} %)" if theirs else ""
    return f"{diff:+,}{rel}" if diff else "0"


def _mean_ci(metric: Metric, mean: float | None, low: float | None, high: float | None) -> str:
    """``1.23 % [0.83, 1.63]``: the mean and its 95 % interval (already clipped to the
    metric's range; ``—`` with one replicate), the interval without its unit."""
    if low is None or high is None:
        return f"{metric.fmt(mean)} [—]"
    return (f"{metric.fmt(mean)} [{metric.fmt(low).removesuffix(' %')}, "
            f"{metric.fmt(high).removesuffix(' %')}]")


def _bounds(arm: ArmSummary, i: int) -> tuple[float | None, float | None]:
    """The interval ends at point ``i`` (already clipped to the metric's range)."""
    return arm.error_low[i], arm.error_high[i]


def labels_cell(iv: Interval | None) -> str:
    """Labels at the end of the runs: ``1,600`` when every replicate ended there, else the
    mean over replicates with its 95 % interval, ``151 [138, 163]``."""
    if iv is None or iv.mean is None:
        return "—"
    if iv.low is None or iv.high is None or iv.low == iv.high:
        return num(iv.mean)
    return f"{num(iv.mean)} [{num(iv.low)}, {num(iv.high)}]"


def arms_section(arms: Arms, names: Sequence[str], specs: Mapping[str, ArmSpec],
                 metric: Metric) -> list[str]:
    """"Arms": policy, inference, replicates, labels spent and final error of each arm, both
    read where each replicate's run ended (:meth:`ArmSummary.final`)."""
    rows = []
    ended = False
    for name in names:
        spec, a = specs.get(name), arms[name]
        final, labels = a.final("error"), a.final("edges")
        final_txt = ("—" if final is None or final.mean is None else
                     _mean_ci(metric, final.mean, final.low, final.high))
        ended |= labels_cell(labels).endswith("]")
        rows.append([name, f"`{policy_name(spec) or '?'}`", f"`{method_name(spec) or '?'}`",
                     a.replicates, labels_cell(labels), final_txt])
    note = ([f"Labels spent and final {metric.short} at the end of each replicate's run "
             "(where it stopped, when it stopped before the budget): the mean over replicates "
             "with its 95 % interval.", ""] if ended else [])
    return ["## Arms", "", *note, *table(["arm", "policy", "inference", "replicates",
                                          "labels spent", f"final {metric.short}"], rows,
                                         "lllrrr"), ""]


def plot_section(plot: PlotInfo, metric: Metric, replicates: int = 2) -> list[str]:
    """The plot with its caption (what the band is, and the log-scale floor); with fewer than
    two ``replicates`` (the fewest any arm finished) no band can be drawn, and it says so."""
    band = (f"*Mean {metric.label} over replicates (line) with its 95 % confidence band "
            "(shaded: Student-t interval with n - 1 degrees of freedom, clipped at 0)"
            if replicates >= 2 else
            f"*{metric.sentence} of the one replicate (line; a confidence band needs at "
            "least two replicates, so none is drawn)")
    return [
        f"## {metric.heading} against labels spent", "",
        f"![{metric.sentence} against labels spent, one curve per arm]({PNG_NAME})",
        "",
        f"{band}, on a log scale"
        + ("; thin dotted lines: the plain (unweighted) mean of the same arm's scores"
           if not metric.percent else "")
        + f". An error of exactly 0 cannot be drawn on "
        f"a log axis, so {'means and band edges' if replicates >= 2 else 'values'} below "
        f"{plot.floor:.2g} ("
        + ("half of one task's error, 0.5 / number of tasks" if metric.percent else
           "half the smallest positive mean")
        + ") are drawn at that floor (dotted line)"
        + (f"; {plot.clipped_points} mean point(s) were clipped this way" if plot.clipped_points
           else "; no mean point needed clipping")
        + f". Vector version: [`{SVG_NAME}`]({SVG_NAME}).*", "",
    ]


def no_plot_section(metric: Metric, run_dir: Path | None = None) -> list[str]:
    """In place of the plot when none was drawn (``--no-figures``): the command that draws
    it."""
    folder = run_dir if run_dir is not None else "RUN_DIR"
    return [f"## {metric.heading} against labels spent", "",
            "*No figure drawn (`--no-figures`); draw the figures with "
            f"`python -m marketsim report {folder}`.*", ""]


def checkpoints_section(arms: Arms, names: Sequence[str], metric: Metric,
                        replicates: int = 2) -> list[str]:
    """Mean error and its 95 % interval for each arm at the budget :func:`checkpoints` (no
    interval with fewer than two ``replicates``, and the text says so)."""
    cps = checkpoints(arms)
    lines = [f"## {metric.heading} at budget checkpoints", ""]
    if not cps:
        return lines + ["No unit has finished yet.", ""]
    if replicates >= 2:
        lines += [f"Mean {metric.label} and its 95 % confidence interval (Student's t with "
                  "n - 1 degrees of freedom, clipped to the possible range) after the given "
                  "number of labels.", ""]
    else:
        lines += [f"{metric.sentence} of the one replicate after the given number of labels; "
                  "`[—]`: a confidence interval needs at least two replicates.", ""]
    rows = []
    for name in names:
        a = arms[name]
        at = {e: (m, *_bounds(a, i)) for i, (e, m) in enumerate(zip(a.edges, a.error,
                                                                      strict=True))}
        rows.append([name] + [_mean_ci(metric, *at[e]) if e in at else "—" for e in cps])
    return lines + table(["arm \\ labels spent", *(num(e) for e in cps)], rows) + [""]


def reach_interval(arm: ArmSummary, key: str, axis: str = "edges",
                   fmt: Callable[[float | None], str] = num) -> str:
    """`` (mean 9,600 [8,900, 10,300])``: each replicate's own labels (``axis`` ``money``,
    ``time``: money, simulated time) to target, their mean and 95 % interval when every
    replicate reached the target, else how many did."""
    ci = arm.to_reach_ci95(axis).get(key)
    if not ci or not ci.of:
        return ""
    if ci.reached != ci.of or ci.mean is None:
        if not ci.reached:
            return (" (not reached in its one replicate)" if ci.of == 1 else
                    f" (not reached in any of the {ci.of} replicates)")
        return f" (reached in {ci.reached} of {ci.of} replicates)"
    if ci.low is None:
        return f" (one replicate: {fmt(ci.mean)})"
    return f" (replicates' mean {fmt(ci.mean)} [{fmt(ci.low)}, {fmt(ci.high)}])"


def targets_section(arms: Arms, names: Sequence[str], specs: Mapping[str, ArmSpec],
                    metric: Metric, replicates: int = 2) -> list[str]:
    """Labels each arm needed to reach each target, and the saving against its baseline (no
    interval with fewer than two ``replicates``, and the text says so)."""
    targets = targets_of(arms)
    goal = (" / ".join(f"{100 * t:g} %" for t in targets) + " error" if metric.percent
            else "RMSE " + " / ".join(f"{t:g}" for t in targets))
    lines = [f"## Labels needed to reach {goal}", ""]
    lines += [
        "Two figures per target. *Mean curve*: the fewest labels after which the mean error "
        "(over replicates) stays at or below the target for the rest of the run ('—' = not "
        "reached within the budget). In brackets, *replicates' mean*: the mean of each "
        + ("replicate's own labels-to-target with its 95 % Student-t interval (when every "
           "replicate reached it, else how many did)" if replicates >= 2 else
           "replicate's own labels-to-target (one replicate: no interval), or that it was not "
           "reached")
        + ". The saving is measured against the "
        "uniform-policy arm with the same inference method (else the first uniform arm): a "
        "positive number is labels saved.", "",
    ]
    has_uniform = any(policy_name(specs.get(n)) == BASELINE_POLICY for n in names)
    head = ["arm"]
    for t in targets:
        short = f"{100 * t:g} %" if metric.percent else f"{t:g}"
        head += [f"labels to {short} (mean curve)"] + (
            [f"saving at {short} (mean curve)"] if has_uniform else [])
    if has_uniform:
        head.append("baseline")
    rows = []
    for name in names:
        a = arms[name]
        base = baseline(name, specs, names)
        row: list[Any] = [name]
        for t in targets:
            key = f"{t:g}"
            row.append(num(a.edges_to_reach.get(key)) + reach_interval(a, key))
            if has_uniform:
                row.append("(baseline)" if base == name else
                           saving(a, arms[base], key) if base else "—")
        if has_uniform:
            row.append(base or "—")
        rows.append(row)
    lines += table(head, rows) + [""]
    if not has_uniform:
        lines += ["There is no uniform-policy arm in this run, so no savings are shown.", ""]
    return lines


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def stop_lines(arm: ArmSummary) -> list[str]:
    """How an arm's replicates stopped before the budget, one phrase per kind of stop and its
    detail (each replicate's own: replicates share a phrase only when their details agree):
    ``ran out of workers at 1,064 labels (blocking) in replicate 2: <what stopped them>``."""
    groups: dict[tuple[tuple[str, ...], str], list[Any]] = {}
    for stop in arm.stopped:  # "closed every task" says it all: no detail to tell apart
        key = tuple(stop.causes), "" if "closed" in stop.causes else stop.detail
        groups.setdefault(key, []).append(stop)
    out = []
    for (causes, detail), stops in groups.items():
        what = ("the money budget ran out" if "money" in causes else
                "closed every task" if "closed" in causes else "ran out of workers")
        at = _listed([num(s.labels) for s in stops])
        reps = _listed([str(s.replicate) for s in stops])
        why = "" if "closed" in causes else f" ({', '.join(causes)})"
        tail = f": {detail}" if detail else ""
        out.append(f"{what} at {at} labels{why} in "
                   f"{'replicate' if len(stops) == 1 else 'replicates'} {reps} of "
                   f"{arm.replicates}{tail}")
    return out
