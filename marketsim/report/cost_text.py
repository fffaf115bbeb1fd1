"""The worker-aware sections of ``report.md``: labels, money and simulated time to each target,
the error plotted against money and time, and the gold spend and blocked workers.

Each appears only when it has something to show: money when some label did not cost 1, time
when the arms took different times for the same labels (a policy declined workers, or blocked
workers' arrivals were skipped) — ``summary.json``'s ``cost_axes`` — and the gold and blocking
table when an arm bought gold answers or blocked a worker. A market without these mechanics
gets the report it always had."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from marketsim.record.metric import Metric
from marketsim.record.summary import targets_of
from marketsim.record.summary_model import ArmSummary, Interval, Summary
from marketsim.report.arm_text import ArmSpec
from marketsim.report.comparison_text import (
    DIFF_FORMATS,
    LABELS,
    MONEY,
    TIME,
    Reach,
    diff_cell,
    key_results,
)
from marketsim.report.formatting import table
from marketsim.report.plots import X_AXES, PlotInfo
from marketsim.report.results_text import reach_interval, stop_lines

Arms = Mapping[str, ArmSummary]
#: The axes of ``summary.json``'s ``cost_axes`` and how they are worded.
REACHES = {"money": MONEY, "time": TIME}
_NOUNS = {"edges": "labels", "money": "money", "time": "time"}
#: Which arms a plot against money (time) tells apart.
_WHY = {"money": "arms that pay different prices per label",
        "time": "arms that wait longer for their labels (declined or blocked workers)"}


def cost_axes(summary: Summary) -> list[str]:
    """The axes the run's report shows beside labels (``money``, ``time``), in that order."""
    return [a for a in REACHES if a in summary.cost_axes]


def cost_plot_section(plots: Mapping[str, PlotInfo], metric: Metric) -> list[str]:
    """The error plotted against money spent and against simulated time, when drawn."""
    lines: list[str] = []
    for axis, plot in plots.items():
        x = X_AXES[axis]
        lines += [
            f"## {metric.heading} against {x.title}", "",
            f"![{metric.sentence} against {x.title}, one curve per arm]({plot.png.name})", "",
            f"*The same mean {metric.label} and 95 % band as above, drawn at each arm's mean "
            f"{x.title} over replicates for every label count: {_WHY[axis]} separate here even "
            "where their curves against labels coincide. Vector version: "
            f"[`{plot.svg.name}`]({plot.svg.name}).*", "",
        ]
    return lines


def _cells(arm: ArmSummary, key: str, axes: Sequence[str]) -> list[str]:
    reaches: dict[str, Reach] = {"edges": LABELS, **REACHES}
    out = []
    for axis in axes:
        cell = reach_interval(arm, key, axis, reaches[axis].fmt).strip()
        out.append(cell.removeprefix("(").removesuffix(")") or "—")
    return out


def costs_section(summary: Summary, names: Sequence[str],
                  specs: Mapping[str, ArmSpec], metric: Metric) -> list[str]:
    """"Labels, money and time to reach each target": per arm the mean of the replicates' own
    figures with its 95 % interval, which arm needs the least (named only when its paired
    interval against every other arm excludes zero); the paired differences against the
    reference arm are in "Paired comparisons" (:func:`cost_differences`)."""
    axes = cost_axes(summary)
    if not axes:
        return []
    arms: Arms = summary.arms
    targets = targets_of(arms)
    shown = ["edges", *axes]
    words = " and ".join([", ".join(_NOUNS[a] for a in shown[:-1]), _NOUNS[shown[-1]]])
    lines = [f"## {words[:1].upper() + words[1:]} to reach each target", "",
             "Each replicate's own labels, money spent and simulated time at the point its "
             "curve reaches the target and stays there; the mean over replicates with its 95 % "
             "Student-t interval in brackets, or how many replicates reached it.", ""]
    head = ["arm"]
    for t in targets:
        head += [f"{_NOUNS[a]} to {metric.target_short(t)}" for a in shown]
    rows = [[name, *(c for t in targets for c in _cells(arms[name], f"{t:g}", shown))]
            for name in names]
    lines += table(head, rows) + [""]
    for axis in axes:
        reach = REACHES[axis]
        lines += [f"Least {'money' if axis == 'money' else 'simulated time'} to each target "
                  "(a difference is claimed only when its paired 95 % interval excludes "
                  "zero):", "", *key_results(arms, specs, names, metric, reach), ""]
    return lines


def cost_differences(summary: Summary, names: Sequence[str], metric: Metric) -> list[str]:
    """The paired differences (arm minus reference) in money and time to each target, for the
    "Paired comparisons" section: a difference may be negative, unlike every figure of
    :func:`costs_section` (nothing without a cost axis or a reference arm)."""
    axes = cost_axes(summary)
    comp = summary.comparisons
    if not axes or not comp.arms:
        return []
    targets = targets_of(summary.arms)
    rows = []
    for name in names:
        entry = comp.arms.get(name)
        if entry is None:
            continue
        rows.append([name, *(diff_cell(entry.to_reach(a).get(f"{t:g}"), DIFF_FORMATS[a])
                             for t in targets for a in axes)])
    head = ["arm", *(f"{_NOUNS[a]} to {metric.target_short(t)}" for t in targets
                     for a in axes)]
    return [f"Paired differences against *{comp.reference}* in "
            f"{' and '.join(_NOUNS[a] for a in axes)} to each target (arm minus reference, "
            "replicates where both reached the target; **bold**: the interval excludes "
            "zero):", "", *table(head, rows), ""]


def _interval_cell(iv: Interval | None, digits: int) -> str:
    if iv is None or iv.mean is None:
        return "—"
    text = f"{iv.mean:,.{digits}f}"
    return text + (f" [{iv.low:,.{digits}f}, {iv.high:,.{digits}f}]"
                   if iv.low is not None and iv.high is not None else "")


def under_budget_section(arms: Arms, names: Sequence[str]) -> list[str]:
    """"Runs that ended under budget", the one place a report says so: per arm some of whose
    replicates stopped before ``budget.edges`` — a platform preset closed every task (its
    stopping rule, not the budget, ended the run), the money ran out, or no worker was left
    — where and why (:func:`~marketsim.report.results_text.stop_lines`), then how many did,
    and their labels, money and error at the end."""
    causes = [f"- *{name}*: {line}" for name in names for line in stop_lines(arms[name])]
    ended = [n for n in names if arms[n].ended_under_budget]
    if not ended and not causes:
        return []
    lines = ["## Runs that ended under budget", "",
             "Replicates that stopped before `budget.edges`: a platform preset closed every "
             "task (the requester stops spending, which is the preset's point), the money ran "
             "out, or no worker who may still work was left. A replicate's curve ends where it "
             "stopped; the arm's mean curve (the plots, the checkpoints) stops at the labels "
             "all its replicates reached, while its final figures (the Arms table, the table "
             "below) are each replicate's own at the end of its run.", ""]
    if causes:
        lines += [*causes, ""]
    if ended:
        rows = [[n, f"{arms[n].ended_under_budget} of {arms[n].replicates}",
                 _interval_cell(arms[n].final_edges, 0), _interval_cell(arms[n].final_money, 2),
                 _interval_cell(arms[n].final_error, 4)] for n in ended]
        lines += ["Labels, money and error at the end of each replicate, mean over replicates "
                  "with its 95 % Student-t interval:", "",
                  *table(["arm", "ended under budget", "labels at the end", "money at the end",
                          "error at the end"], rows), ""]
    return lines


def gold_section(arms: Arms, names: Sequence[str]) -> list[str]:
    """"Gold questions and blocked workers": each arm's gold answers bought, their money and the
    workers blocked by the end of the run, when any arm had gold answers or blocked a worker."""
    def mean(iv: Interval | None) -> float:
        return float(iv.mean) if iv is not None and iv.mean is not None else 0.0

    if not any(mean(iv) > 0 for n in names
               for iv in (arms[n].gold_labels, arms[n].blocked_workers)):
        return []

    cell = _interval_cell
    rows = [[name, cell(arms[name].gold_labels, 1), cell(arms[name].gold_money, 2),
             cell(arms[name].blocked_workers, 1)] for name in names]
    return ["## Gold questions and blocked workers", "",
            "At the end of the run, mean over replicates with its 95 % Student-t interval: the "
            "gold (control) answers bought — counted in the labels and the money spent, never "
            "in the results —, the money paid for them and the workers the blocking rule had "
            "blocked.", "",
            *table(["arm", "gold answers", "gold money", "blocked workers"], rows), ""]
