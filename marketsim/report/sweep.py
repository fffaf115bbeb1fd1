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

from marketsim.errors import InputError
from marketsim.record.files import (
    write_bytes_atomic,
    write_csv_atomic,
    write_json_atomic,
    write_text_atomic,
)
from marketsim.record.metric import ERROR_RATE, Metric, metric_of
from marketsim.record.run_model import read_run
from marketsim.record.summary import TARGETS
from marketsim.record.summary_model import Summary, read_summary
from marketsim.report.formatting import DASH, fmt_error, num, table
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


def _reach_columns(t: float) -> list[str]:
    """The columns of target ``t``: the mean curve's labels-to-target, then the mean over
    replicates of each replicate's own labels-to-target with its 95 % interval, and how many
    replicates reached the target."""
    base = f"edges_to_{t:g}"
    return [base, f"{base}_mean", f"{base}_low", f"{base}_high", f"{base}_reached"]


def columns(keys: list[str]) -> list[str]:
    """The header of ``sweep.csv``: the grid point, the swept keys, the arm, the results."""
    return ["point", *keys, "arm", "final_error_rate", "replicates",
            *(c for t in TARGETS for c in _reach_columns(t))]


def load_points(run_dir: Path) -> list[dict[str, Any]]:
    """The finished grid points of a sweep run folder: folder, swept values, summary (read
    from ``points/pNNN/run.json`` and ``summary.json``; a point without them is not finished,
    an invalid one is an :class:`InputError`)."""
    points = []
    for folder in sorted(Path(run_dir).glob("points/p*")):
        try:
            meta = read_run(folder / "run.json")
            summary = read_summary(folder / "summary.json")
        except OSError:
            continue
        values = meta.resolved_scenario.get("sweep_point") or {}
        points.append({"folder": f"points/{folder.name}", "values": tuple(values.items()),
                       "summary": summary})
    if not points:
        raise InputError("no finished sweep point (points/pNNN/summary.json) here",
                         source=str(run_dir))
    return points


def sweep_rows(source: Path | str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (grid point, arm): the swept values, the final error and, per target, the
    labels needed with their interval (:func:`columns`). ``source`` is a sweep run folder or
    the points :func:`load_points` returns."""
    points = load_points(Path(source)) if isinstance(source, str | Path) else source
    rows = []
    for pt in points:
        summary: Summary = pt["summary"]
        for arm, s in summary.arms.items():
            row: dict[str, Any] = {"point": pt["folder"], **dict(pt["values"]), "arm": arm,
                                   "replicates": s.replicates,
                                   "final_error_rate": s.final_error_rate}
            for t in TARGETS:
                key = f"{t:g}"
                base, iv = f"edges_to_{key}", s.edges_to_reach_ci95.get(key)
                row[base] = s.edges_to_reach[key]
                row[f"{base}_mean"] = None if iv is None else iv.mean
                row[f"{base}_low"] = None if iv is None else iv.low
                row[f"{base}_high"] = None if iv is None else iv.high
                row[f"{base}_reached"] = None if iv is None else iv.reached
            rows.append(row)
    return rows


def sweep_frame(source: Path | str | list[dict[str, Any]]) -> Any:
    """:func:`sweep_rows` as a pandas DataFrame (pandas is optional: ImportError without
    it)."""
    import pandas as pd  # optional dependency, only for callers who want a frame

    return pd.DataFrame(sweep_rows(source))


def write_sweep_report(run_dir: Path, keys: list[str], points: list[dict[str, Any]]) -> None:
    """Write the sweep table, its JSON and Markdown, and the plot (if matplotlib is
    available)."""
    rows = sweep_rows(points)
    metric = metric_of(points[0]["summary"]) if points else ERROR_RATE
    header = columns(keys)
    write_csv_atomic(
        run_dir / "sweep.csv", header,
        ([("" if r.get(h) is None else r[h]) for h in header] for r in rows),
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


def _count(x: float | None) -> str:
    return num(None if x is None else round(x))


def reach_cell(row: dict[str, Any], target: float) -> str:
    """``1,240 [1,100, 1,380]``: the mean over replicates of the labels needed to reach
    ``target`` and its 95 % interval; ``— (2/3 reached)`` when some replicate never reached
    it (no mean then), ``—`` when none did; a row without interval columns shows the mean
    curve's reading."""
    base = f"edges_to_{target:g}"
    if f"{base}_mean" not in row:
        return num(row.get(base))
    mean, low, high = (row.get(f"{base}_{end}") for end in ("mean", "low", "high"))
    if mean is not None:
        return _count(mean) + (f" [{_count(low)}, {_count(high)}]" if low is not None
                               and high is not None else "")
    reached, of = row.get(f"{base}_reached"), row.get("replicates")
    return f"{DASH} ({reached}/{of} reached)" if reached else DASH


def sweep_markdown(keys: list[str], rows: list[dict[str, Any]],
                   metric: Metric = ERROR_RATE) -> str:
    """A readable table: per grid point and arm, the labels needed to reach each target with
    its interval (targets and the final value are the run's headline error: error rate or
    RMSE)."""
    head = [*keys, "arm", f"final {metric.short}",
            *(f"labels to {metric.target_short(t)}" for t in TARGETS)]
    cells = [[*(str(r[k]) for k in keys), r["arm"], fmt_error(r["final_error_rate"]),
              *(reach_cell(r, t) for t in TARGETS)] for r in rows]
    return "\n".join([
        f"# Sweep: labels needed to reach a target {metric.short}",
        "",
        "Each grid point is a full study in `points/`. A cell is the mean over replicates of "
        "the labels each replicate needed to stay at or below the target, with its 95 % "
        "Student-t interval [low, high] (no interval with one replicate); "
        f"'{DASH}' means some replicate did not reach the target within the budget. The plot "
        f"is `{PLOT_NAME}.png`.",
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


def _reach_point(row: dict[str, Any], target: float,
                 x: float) -> tuple[float, float, float, float] | None:
    """(x, mean, low, high) of the labels needed to reach ``target``, or None when not every
    replicate reached it; without an interval (one replicate) low = high = mean."""
    base = f"edges_to_{target:g}"
    mean = row.get(f"{base}_mean", row.get(base))
    if mean is None:
        return None
    low, high = row.get(f"{base}_low"), row.get(f"{base}_high")
    return (x, float(mean), float(mean if low is None else low),
            float(mean if high is None else high))


def sweep_figure(keys: list[str], rows: list[dict[str, Any]],
                 metric: Metric = ERROR_RATE) -> Figure:
    """The labels needed to reach each target against the first swept key: a column of panels
    per target, a row per combination of the other swept values; one line per arm, styled by
    the arm's place in the scenario as in the error-versus-budget plot. A point is the mean
    over replicates of the labels needed, its error bar the 95 % interval; points where some
    replicate did not reach the target are left out."""
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
    span = (max(positions) - min(positions)) or 1.0

    def dodge(x: float, index: int) -> float:
        """Arms side by side around each swept value, so their error bars do not overlap."""
        step = index - (len(arms) - 1) / 2
        return x * 1.03 ** step if log_x else x + 0.012 * span * step

    combos = list(dict.fromkeys(tuple(r[k] for k in other) for r in rows)) or [()]
    fig = Figure(figsize=(5.2 * len(TARGETS), 0.8 + 3.4 * len(combos)), dpi=120,
                 layout="constrained")
    axes = fig.subplots(len(combos), len(TARGETS), squeeze=False)
    for (row, combo), (col, target) in itertools.product(enumerate(combos),
                                                         enumerate(TARGETS)):
        ax = axes[row][col]
        drawn = 0
        for index, arm in enumerate(arms):
            pts = sorted(p for r in rows if r["arm"] == arm
                         and tuple(r[k] for k in other) == combo
                         and (p := _reach_point(r, target, dodge(where(r[x_key]), index)))
                         is not None)
            drawn += len(pts)
            style = arm_style(index)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=arm, linewidth=1.6,
                    markersize=6, markerfacecolor="white", markeredgewidth=1.3, zorder=3,
                    **style)
            # The 95 % intervals as vertical bars in the arm's colour (no bar: one replicate).
            bars = [p for p in pts if p[3] > p[2]]
            if bars:
                ax.vlines([p[0] for p in bars], [p[2] for p in bars], [p[3] for p in bars],
                          colors=style["color"], linewidth=1.2, alpha=0.8, zorder=2,
                          label="_interval")
        where_txt = ", ".join(f"{k} = {v}" for k, v in zip(other, combo, strict=True))
        ax.set_title(f"to reach {metric.target(target)}" + (f"\n{where_txt}" if where_txt
                                                           else ""), fontsize="medium")
        _x_axis(ax, positions, [str(v) for v in x_values], log_x)
        ax.set_xlabel(axis_label(x_key))
        ax.set_ylabel("labels needed (mean, 95 % interval)")
        ax.grid(alpha=0.3)
        if drawn:
            ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:,.0f}"))
        else:
            ax.set_yticks([])
            ax.text(0.5, 0.5, "no arm reached it within the budget", transform=ax.transAxes,
                    ha="center", va="center", color="0.4")
    fig.suptitle(f"Labels needed to reach a target {metric.short}: mean over replicates, 95 % "
                 "interval (missing point: not reached within the budget)", fontsize="medium")
    if arms:
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, title="arm", loc="outside lower center",
                   ncols=min(len(arms), 4), fontsize="small")
    return fig
