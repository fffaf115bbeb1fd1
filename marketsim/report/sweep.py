"""The sweep report: per grid point and arm, the final error and the labels, money and
simulated time needed to reach each target error, against the swept parameters (``sweep.csv``,
``sweep.json``, ``sweep.md``; the figure, ``labels_needed_vs_sweep.png``, is
:mod:`~marketsim.report.sweep_plot`'s).

A swept value may be a list (``workers.tiers.prices = [[1, 1.5], [1, 2]]``): the tables print
it as written, the figure places it as a category."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marketsim.errors import InputError
from marketsim.record.files import (
    write_csv_atomic,
    write_json_atomic,
    write_text_atomic,
)
from marketsim.record.metric import ERROR_RATE, Metric, metric_of
from marketsim.record.summary import TARGETS, targets_of
from marketsim.record.summary_model import Summary, read_summary
from marketsim.report.figure_style import REPORT_STYLE, FigureStyle
from marketsim.report.formatting import DASH, fmt_error, md_literal, num, table
from marketsim.report.glossary import link_terms, write_glossary
from marketsim.report.plots import write_png_svg
from marketsim.report.results_text import stop_lines
from marketsim.report.sweep_plot import PLOT_NAME, sweep_figure
from marketsim.scenario.run_migration import read_run

__all__ = ["PLOT_NAME", "SweepPoint", "columns", "load_points", "reach_cell", "sweep_figure",
           "sweep_frame", "sweep_markdown", "sweep_rows", "write_sweep_figure",
           "write_sweep_report"]



@dataclass(frozen=True)
class SweepPoint:
    """One finished grid point of a sweep: its folder (``points/p000``, or the API's
    ``p000``), the swept values as ``(dotted key, value)`` pairs, and its summary."""

    folder: str
    values: tuple[tuple[str, Any], ...]
    summary: Summary


def _reach_columns(t: float) -> list[str]:
    """The columns of target ``t``: the mean curve's labels-to-target; the mean over
    replicates of each replicate's own labels-to-target with its 95 % interval (empty unless
    every replicate reached it), how many replicates reached it and the mean over those that
    did (``_mean_of_reached``); then the same for the money and the simulated time each
    replicate had spent when it reached the target (money empty in a market without money)."""
    base = f"edges_to_{t:g}"
    return [base, f"{base}_mean", f"{base}_low", f"{base}_high", f"{base}_reached",
            f"{base}_mean_of_reached",
            *(f"{axis}_to_{t:g}_{end}" for axis in ("money", "time")
              for end in ("mean", "low", "high", "mean_of_reached"))]


def columns(keys: list[str], targets: Sequence[float] = TARGETS) -> list[str]:
    """The header of ``sweep.csv``: the grid point, the swept keys, the arm, the results (the
    headline metric, ``error_rate`` or ``rmse`` as ``summary.json`` names it, and the final
    error in that metric with its interval, the final labels, money spent and simulated time
    as means over replicates — "final" is each replicate's own last point, where its run
    ended, as in ``summary.json``'s ``final_*`` —, :func:`_reach_columns` per target, and
    :func:`diff_columns`)."""
    return ["point", *keys, "arm", "metric", "final_error", "final_error_low", "final_error_high",
            "replicates", "stopped", "stopped_detail", "final_edges", "final_money",
            "final_time",
            *(c for t in targets for c in _reach_columns(t)), *diff_columns(targets)]


def diff_columns(targets: Sequence[float] = TARGETS) -> list[str]:
    """The paired differences to the point's reference arm (its first): the final error (each
    replicate's own final error minus the reference's on the same replicate: its mean is the
    difference of the two rows' ``final_error``) and the labels and money to each target
    (the replicates where both reached it), mean with the 95 % paired interval (empty for the
    reference itself)."""
    return ["reference", *(f"diff_{what}_{end}" for what in (
        "final_error", *(f"{axis}_to_{t:g}" for axis in ("edges", "money") for t in targets))
        for end in ("mean", "low", "high"))]


def _differences(summary: Summary, arm: str) -> dict[str, Any]:
    """The :func:`diff_columns` of ``arm`` at one grid point."""
    cmp = summary.comparisons
    targets = targets_of(summary.arms)
    out: dict[str, Any] = dict.fromkeys(diff_columns(targets))
    out.update(reference=cmp.reference)
    entry = cmp.arms.get(arm)
    if entry is None or arm == cmp.reference:
        return out
    found: list[tuple[str, Any]] = [("final_error", entry.final_error)]
    found += [(f"{axis}_to_{t:g}", entry.to_reach(axis).get(f"{t:g}"))
              for axis in ("edges", "money") for t in targets]
    for what, value in found:
        if value is not None:
            out[f"diff_{what}_mean"] = value.difference
            out[f"diff_{what}_low"], out[f"diff_{what}_high"] = value.low, value.high
    return out


def _mean_of_reached(values: list[Any]) -> float | None:
    reached = [float(v) for v in values if v is not None]
    return sum(reached) / len(reached) if reached else None


def load_points(run_dir: Path) -> list[SweepPoint]:
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
        points.append(SweepPoint(f"points/{folder.name}", tuple(meta.sweep_point.items()),
                                 summary))
    if not points:
        raise InputError("no finished sweep point (points/pNNN/summary.json) here",
                         source=str(run_dir))
    return points


def sweep_rows(source: Path | str | Sequence[SweepPoint]) -> list[dict[str, Any]]:
    """One row per (grid point, arm): the swept values, the headline metric, the final error
    in it and, per target, the labels needed with their interval (:func:`columns`).
    ``source`` is a sweep run folder or the points :func:`load_points` returns."""
    points = load_points(Path(source)) if isinstance(source, str | Path) else source
    rows = []
    for pt in points:
        summary = pt.summary
        metric = metric_of(summary).key
        for arm, s in summary.arms.items():
            error, edges = s.final("error"), s.final("edges")
            money, time = s.final("money"), s.final("time")
            row: dict[str, Any] = {
                "point": pt.folder, **dict(pt.values), "arm": arm,
                "replicates": s.replicates, "metric": metric,
                "final_error": None if error is None else error.mean,
                "final_error_low": None if error is None else error.low,
                "final_error_high": None if error is None else error.high,
                "final_edges": None if edges is None else edges.mean,
                "final_money": None if money is None else money.mean,
                "final_time": None if time is None else time.mean}
            for t in targets_of(summary.arms):
                key = f"{t:g}"
                base, iv = f"edges_to_{key}", s.edges_to_reach_ci95.get(key)
                row[base] = s.edges_to_reach[key]
                row[f"{base}_mean"] = None if iv is None else iv.mean
                row[f"{base}_low"] = None if iv is None else iv.low
                row[f"{base}_high"] = None if iv is None else iv.high
                row[f"{base}_reached"] = None if iv is None else iv.reached
                row[f"{base}_mean_of_reached"] = _mean_of_reached(
                    s.to_reach_replicates("edges").get(key) or [])
                for axis in ("money", "time"):
                    cost = s.to_reach_ci95(axis).get(key)
                    for end in ("mean", "low", "high"):
                        row[f"{axis}_to_{key}_{end}"] = None if cost is None else \
                            getattr(cost, end)
                    row[f"{axis}_to_{key}_mean_of_reached"] = _mean_of_reached(
                        s.to_reach_replicates(axis).get(key) or [])
            row.update(stopped=len(s.stopped), stopped_detail="; ".join(stop_lines(s)))
            rows.append(row | _differences(summary, arm))
    return rows


def sweep_frame(source: Path | str | Sequence[SweepPoint]) -> Any:
    """:func:`sweep_rows` as a pandas DataFrame (pandas is optional: ImportError without
    it)."""
    import pandas as pd  # optional dependency, only for callers who want a frame

    return pd.DataFrame(sweep_rows(source))


def write_sweep_report(run_dir: Path, keys: list[str], points: Sequence[SweepPoint], *,
                       figures: bool = True) -> None:
    """Write the sweep table, its JSON and Markdown, and the plot (if matplotlib is
    available, and unless ``figures`` is False: ``--no-figures``)."""
    rows = sweep_rows(points)
    metric = metric_of(points[0].summary) if points else ERROR_RATE
    targets = targets_of(points[0].summary.arms) if points else TARGETS
    header = columns(keys, targets)
    write_csv_atomic(
        run_dir / "sweep.csv", header,
        ([("" if r.get(h) is None else r[h]) for h in header] for r in rows),
    )
    write_json_atomic(run_dir / "sweep.json", {"keys": keys, "metric": metric.key, "rows": rows})
    for ext in ("png", "svg"):  # a plot of an earlier sweep is not this one's
        (run_dir / f"{PLOT_NAME}.{ext}").unlink(missing_ok=True)
    if figures:
        write_sweep_figure(run_dir, keys, points, rows)
    write_glossary(run_dir)
    write_text_atomic(run_dir / "sweep.md", link_terms(sweep_markdown(
        keys, rows, metric, plot=(run_dir / f"{PLOT_NAME}.png").is_file(), targets=targets),
        names={md_literal(r["arm"]) for r in rows}))


def write_sweep_figure(out_dir: Path, keys: list[str], points: Sequence[SweepPoint],
                       rows: list[dict[str, Any]], style: FigureStyle = REPORT_STYLE) -> bool:
    """Write the sweep figure (PNG and SVG) into ``out_dir`` in ``style``; False when
    matplotlib is missing (it is optional: the tables are the sweep's result)."""
    metric = metric_of(points[0].summary) if points else ERROR_RATE
    targets = targets_of(points[0].summary.arms) if points else TARGETS
    money = any("money" in p.summary.cost_axes for p in points)
    try:
        with style.fonts():
            fig = sweep_figure(keys, rows, metric, targets,
                               axes=("edges", "money") if money else ("edges",), style=style)
            write_png_svg(fig, out_dir / f"{PLOT_NAME}.png", out_dir / f"{PLOT_NAME}.svg")
    except ImportError:
        return False
    return True


def _count(x: float | None) -> str:
    return num(x)


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
                   metric: Metric = ERROR_RATE, *, plot: bool = True,
                   targets: Sequence[float] = TARGETS) -> str:
    """A readable table: per grid point and arm, the labels needed to reach each target with
    its interval (targets and the final value are the run's headline error: error rate or
    RMSE); the figure is linked only when ``plot`` (it was written)."""
    head = [*keys, "arm", f"final {metric.short}",
            *(f"labels to {metric.target_short(t)}" for t in targets)]
    cells = [[*(value_text(r[k]) for k in keys), md_literal(r["arm"]),
              fmt_error(r["final_error"]), *(reach_cell(r, t) for t in targets)] for r in rows]
    stops = [f"- {r['point']} ({', '.join(f'{k} = {value_text(r[k])}' for k in keys)}), "
             f"*{md_literal(r['arm'])}*: {r['stopped_detail']}" for r in rows if r.get("stopped")]
    if stops:
        stops = ["Stopped before the budget (the curve ends there; see the point's "
                 "`report.md`):", "", *stops, ""]
    figure = ([f"![labels needed and final {metric.short} against the swept value]"
               f"({PLOT_NAME}.png)", ""] if plot else [])
    return "\n".join([
        f"# Sweep: labels needed to reach a target {metric.short}",
        "",
        "Each grid point is a full study in `points/`. A cell is the mean over replicates of "
        "the labels each replicate needed to stay at or below the target, with its 95 % "
        "Student-t interval [low, high] (no interval with one replicate); "
        f"'{DASH} (k/n reached)' means only k of the n replicates reached the target within "
        f"the budget (no mean then). The final {metric.short} is the mean over replicates of "
        "each one's own at the end of its run (where it stopped, when it stopped before the "
        "budget). `sweep.csv` adds its interval, the money and simulated time to each target, "
        "the labels, money and time at the end, the mean over the replicates that reached a "
        "target, and the paired differences to the point's first arm."
        + (f" The plot is `{PLOT_NAME}.png`." if plot else ""),
        "",
        *table(head, cells, "l" * len(head)),
        "",
        *stops,
        *figure,
    ])


def value_text(value: Any) -> str:
    """A swept value as the scenario writes it: ``20``, ``one-coin``, ``[1, 1.5]``."""
    if isinstance(value, list | tuple):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)
