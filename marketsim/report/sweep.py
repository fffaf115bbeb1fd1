"""The sweep report: labels needed to reach each target error, per arm, against the swept
parameters (``sweep.csv``, ``sweep.json``, ``sweep.md`` and ``labels_needed_vs_sweep.png``).

The plot has one panel per target (columns) and per combination of the other swept values
(rows); the first swept key is on the x-axis. Each arm keeps one colour, marker and line style
in every panel, the same as in the run's error-versus-budget plot (:func:`arm_style`)."""

from __future__ import annotations

import io
import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from marketsim.record.files import (
    write_bytes_atomic,
    write_csv_atomic,
    write_json_atomic,
    write_text_atomic,
)
from marketsim.record.metric import ERROR_RATE, Metric, metric_of
from marketsim.record.summary import TARGETS
from marketsim.report.formatting import fmt_error, num, table
from marketsim.report.plots import arm_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PLOT_NAME = "labels_needed_vs_sweep"

#: What the value of a swept key counts, for the axis label (keys not listed get none).
UNITS = {
    "tasks.count": "tasks",
    "tasks.classes": "classes",
    "tasks.features.count": "features",
    "workers.count": "workers",
    "workers.arrivals.rate": "arrivals per unit of simulated time",
    "workers.service.mean": "units of simulated time",
    "budget.edges": "labels",
    "budget.batch": "labels per batch",
    "scenario.replicates": "replicates",
}


def axis_label(key: str) -> str:
    """The x-axis label of a swept key: the dotted key and its unit (``workers.count
    (workers)``)."""
    unit = UNITS.get(key)
    return f"{key} ({unit})" if unit else key


def sweep_rows(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (grid point, arm) from the points' summaries."""
    rows = []
    for pt in points:
        for arm, s in pt["summary"]["arms"].items():
            row: dict[str, Any] = {"point": pt["folder"], **dict(pt["values"]), "arm": arm,
                                   "final_error_rate": s["final_error_rate"]}
            for t in TARGETS:
                row[f"edges_to_{t:g}"] = s["edges_to_reach"][f"{t:g}"]
            rows.append(row)
    return rows


def write_sweep_report(run_dir: Path, keys: list[str], points: list[dict[str, Any]]) -> None:
    """Write the sweep table, its JSON and Markdown, and the plot (if matplotlib is
    available)."""
    rows = sweep_rows(points)
    metric = metric_of(points[0]["summary"]) if points else ERROR_RATE
    header = ["point", *keys, "arm", "final_error_rate", *(f"edges_to_{t:g}" for t in TARGETS)]
    write_csv_atomic(
        run_dir / "sweep.csv", header,
        ([("" if r[h] is None else r[h]) for h in header] for r in rows),
    )
    write_json_atomic(run_dir / "sweep.json", {"keys": keys, "metric": metric.key, "rows": rows})
    write_text_atomic(run_dir / "sweep.md", sweep_markdown(keys, rows, metric))
    try:
        fig = sweep_figure(keys, rows, metric)
    except ImportError:  # matplotlib is optional: the tables are the sweep's result
        return
    for ext in ("png", "svg"):
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, metadata={"Software": None} if ext == "png" else
                    {"Date": None})
        write_bytes_atomic(run_dir / f"{PLOT_NAME}.{ext}", buf.getvalue())


def sweep_markdown(keys: list[str], rows: list[dict[str, Any]],
                   metric: Metric = ERROR_RATE) -> str:
    """A readable table: per grid point and arm, the labels needed to reach each target
    (targets and the final value are the run's headline error: error rate or RMSE)."""
    head = [*keys, "arm", f"final {metric.short}",
            *(f"labels to {metric.target_short(t)}" for t in TARGETS)]
    cells = [[*(str(r[k]) for k in keys), r["arm"], fmt_error(r["final_error_rate"]),
              *(num(r[f"edges_to_{t:g}"]) for t in TARGETS)] for r in rows]
    return "\n".join([
        f"# Sweep: labels needed to reach a target {metric.short}",
        "",
        "Each grid point is a full study in `points/`; '—' means the target was not reached "
        f"within the budget. The plot is `{PLOT_NAME}.png`.",
        "",
        *table(head, cells, "l" * len(head)),
        "",
        f"![labels needed]({PLOT_NAME}.png)",
        "",
    ])


def _numeric(values: list[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _x_axis(ax: Any, positions: list[float], labels: list[str], log: bool) -> None:
    """Ticks at exactly the swept values, with a margin so end points are not on the frame."""
    lo, hi = min(positions), max(positions)
    if log:
        ax.set_xscale("log")
        ax.set_xlim(lo / 1.25, hi * 1.25)
    else:
        pad = 0.06 * (hi - lo) if hi > lo else 0.5
        ax.set_xlim(lo - pad, hi + pad)
    ax.set_xticks(positions, labels)
    ax.minorticks_off()


def sweep_figure(keys: list[str], rows: list[dict[str, Any]],
                 metric: Metric = ERROR_RATE) -> Figure:
    """The labels needed to reach each target against the first swept key: a column of panels
    per target, a row per combination of the other swept values; one line per arm, styled by
    the arm's place in the scenario as in the error-versus-budget plot. Points where the target
    was not reached are left out."""
    # matplotlib is optional and slow to import: only a run that draws a plot loads it.
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    x_key, other = keys[0], keys[1:]
    arms = list(dict.fromkeys(r["arm"] for r in rows))
    x_values = list(dict.fromkeys(r[x_key] for r in rows))
    numeric = _numeric(x_values)
    if numeric:
        def where(v: Any) -> float:
            return float(v)
    else:  # categories (e.g. a swept model name) sit at 0, 1, 2, ... in sweep order
        def where(v: Any) -> float:
            return float(x_values.index(v))
    positions = [where(v) for v in x_values]
    log_x = numeric and min(positions) > 0 and max(positions) / min(positions) >= 10
    combos = list(dict.fromkeys(tuple(r[k] for k in other) for r in rows)) or [()]
    fig = Figure(figsize=(5.2 * len(TARGETS), 0.8 + 3.4 * len(combos)), dpi=120,
                 layout="constrained")
    axes = fig.subplots(len(combos), len(TARGETS), squeeze=False)
    for (row, combo), (col, target) in itertools.product(enumerate(combos),
                                                         enumerate(TARGETS)):
        ax = axes[row][col]
        column = f"edges_to_{target:g}"
        drawn = 0
        for index, arm in enumerate(arms):
            pts = sorted((where(r[x_key]), float(r[column])) for r in rows
                         if r["arm"] == arm and r[column] is not None
                         and tuple(r[k] for k in other) == combo)
            drawn += len(pts)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=arm, linewidth=1.6,
                    markersize=6, markerfacecolor="white", markeredgewidth=1.3,
                    **arm_style(index))
        where_txt = ", ".join(f"{k} = {v}" for k, v in zip(other, combo, strict=True))
        ax.set_title(f"to reach {metric.target(target)}" + (f"\n{where_txt}" if where_txt
                                                           else ""), fontsize="medium")
        _x_axis(ax, positions, [str(v) for v in x_values], log_x)
        ax.set_xlabel(axis_label(x_key))
        ax.set_ylabel("labels needed")
        ax.grid(alpha=0.3)
        if drawn:
            ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:,.0f}"))
        else:
            ax.set_yticks([])
            ax.text(0.5, 0.5, "no arm reached it within the budget", transform=ax.transAxes,
                    ha="center", va="center", color="0.4")
    fig.suptitle(f"Labels needed to reach a target {metric.short} (missing point: not reached "
                 "within the budget)", fontsize="medium")
    if arms:
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, title="arm", loc="outside lower center",
                   ncols=min(len(arms), 4), fontsize="small")
    return fig
