"""The error-versus-budget figure of a run: ``error_vs_budget.png`` and ``.svg``.

Drawn on a bare :class:`matplotlib.figure.Figure` (Agg canvas, no pyplot state, no display), so
it is safe in worker processes and on headless machines. Each arm gets its own colour from the
Okabe-Ito colour-blind-safe palette *and* its own line style and marker, so curves stay
distinguishable in grey print.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.record.files import write_bytes_atomic
from marketsim.record.metric import ERROR_RATE, Metric
from marketsim.record.summary_model import ArmSummary
from marketsim.report.figure_style import REPORT_STYLE, FigureStyle
from marketsim.report.formatting import plot_text

#: The error plot's size in inches (the report's files and a notebook's figure alike).
FIGSIZE = (7.5, 4.8)
PNG_NAME = "error_vs_budget.png"
SVG_NAME = "error_vs_budget.svg"
#: The SVG id salt's start (:func:`write_png_svg`; any fixed text gives the same bytes run
#: after run: this one names the writer).
SVG_SALT_PREFIX = "marketsim:"


@dataclass(frozen=True)
class XAxis:
    """An x axis of the error plot: the ``summary.json`` arm field holding its values, the axis
    label, the words after "vs." in the title, and the files' stem."""

    key: str
    label: str
    title: str
    stem: str


#: The error plot's x axes by ``summary.json`` axis name (``cost_axes`` lists the extra ones).
X_AXES = {
    "edges": XAxis("edges", "labels spent (edges)", "labels spent", "error_vs_budget"),
    "money": XAxis("money", "money spent (mean over replicates)", "money spent",
                   "error_vs_money"),
    "time": XAxis("sim_time", "simulated time (mean over replicates)", "simulated time",
                  "error_vs_time"),
}

#: Okabe & Ito (2008) colour-blind-safe palette (black last: it is the default text colour).
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
           "#000000")
LINESTYLES: tuple[Any, ...] = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (8, 2)),
                               (0, (1, 1)), (0, (3, 1, 1, 1)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: Markers drawn per curve (spread out, offset per arm so they do not sit on top of each other).
MARKERS_PER_CURVE = 8


@dataclass(frozen=True)
class PlotInfo:
    """What the figure did, for the caption: the log-scale floor and how many points it hit."""

    png: Path
    svg: Path
    floor: float
    clipped_points: int
    arms_plotted: int


def error_floor(n_tasks: int | None, arms: Mapping[str, ArmSummary]) -> float:
    """Lowest error drawn on the log axis: half of one task's error, ``0.5 / n_tasks``.

    Without a task count, half of the smallest positive mean error (or 1e-4) is used.
    """
    if n_tasks and n_tasks > 0:
        return 0.5 / n_tasks
    positive = [e for a in arms.values() for e in a.error if e and e > 0]
    return 0.5 * min(positive) if positive else 1e-4


def _plain_tick(value: float, _pos: int | None = None) -> str:
    """A log-axis tick as a plain number (RMSE): ``0.1``, ``0.05``."""
    return f"{value:.3g}"


def _percent_tick(value: float, _pos: int | None = None) -> str:
    """A log-axis tick as a percentage: ``10 %``, ``1 %``, ``0.1 %``, ``0.025 %``."""
    return f"{100 * value:.3g} %"


def arm_colour(index: int) -> str:
    """The colour of the ``index``-th arm (:func:`arm_style`'s ``color``)."""
    return COLOURS[index % len(COLOURS)]


def arm_style(index: int) -> dict[str, Any]:
    """Colour, line style and marker of the ``index``-th arm (cycles after eight arms, with the
    line style shifted so the pairs stay distinct)."""
    n = len(COLOURS)
    return {
        "color": arm_colour(index),
        "linestyle": LINESTYLES[(index + index // n) % len(LINESTYLES)],
        "marker": MARKERS[(index + 3 * (index // n)) % len(MARKERS)],
    }


def _markevery(n_points: int, index: int, n_arms: int) -> list[int]:
    """About MARKERS_PER_CURVE marker positions, staggered between arms."""
    if n_points <= MARKERS_PER_CURVE:
        return list(range(n_points))
    step = n_points / MARKERS_PER_CURVE
    offset = step * index / max(n_arms, 1)
    return sorted({min(n_points - 1, int(offset + k * step)) for k in range(MARKERS_PER_CURVE)})


def plot_error_vs_budget(
    out_dir: str | Path,
    arms: Mapping[str, ArmSummary],
    *,
    scenario_name: str,
    n_tasks: int | None = None,
    partial: bool = False,
    metric: Metric = ERROR_RATE,
    x: str = "edges",
    targets: Sequence[float] = (),
    style: FigureStyle = REPORT_STYLE,
) -> PlotInfo:
    """Draw the mean headline error (log scale) against labels spent, with a shaded 95 % band
    per arm, and write the PNG and SVG atomically into ``out_dir``.

    ``arms`` is the ``arms`` mapping of ``summary.json`` (edges, error, error_ci95,
    replicates). Means or band edges below the floor (see :func:`error_floor`) are clipped to it.
    For the RMSE of a continuous market (``metric``), each arm's plain-mean RMSE (the
    ``plain_rmse`` list) is drawn as a thin dotted line of the arm's colour, and the floor is
    half the smallest positive mean (one task's share is not a meaningful RMSE unit).
    ``x`` picks the x axis (:data:`X_AXES`): labels (``error_vs_budget.*``), money
    (``error_vs_money.*``) or simulated time (``error_vs_time.*``), each arm's mean per label
    count. ``targets``: the target errors, drawn as dashed lines. ``style``: the figure's size
    and fonts (a slide's: :data:`~marketsim.report.figure_style.SLIDE_STYLE`).
    """
    out_dir, stem = Path(out_dir), X_AXES[x].stem
    png, svg = out_dir / f"{stem}.png", out_dir / f"{stem}.svg"
    with style.fonts():
        fig, floor, clipped, plotted = draw_error_vs_budget(
            arms, scenario_name=scenario_name, n_tasks=n_tasks, partial=partial, metric=metric,
            x=x, targets=targets, style=style)
        write_png_svg(fig, png, svg)
    return PlotInfo(png, svg, floor, clipped, plotted)


def write_png_svg(fig: Any, png: Path, svg: Path) -> None:
    """Write ``fig`` as a PNG and an SVG (atomically, no date or software stamp, so the same
    figure gives the same bytes; not flushed to the disk: ``marketsim report`` draws them
    again).

    The figure's layout engine (the constrained layout, which measures every text: the
    costliest part of a save) runs once, here, and is then removed, so each format is drawn
    once with the positions it found. ``savefig`` on a figure that has a layout engine draws
    the whole figure once more, without output, before the real draw, to run the engine: a
    wasted draw for the PNG, and for the SVG even when the engine is matplotlib's
    "none" placeholder.
    A figure without a canvas of its own (a bare ``Figure``) is given an Agg canvas first.

    The SVG's element ids (clip paths, markers) are hashes salted with
    :data:`SVG_SALT_PREFIX` and the file name: matplotlib's default salt is random, which
    made every run's SVG bytes differ; the file name keeps the ids of a run's different
    figures apart when a page embeds several."""
    import matplotlib  # loaded already: the figure was drawn with it
    from matplotlib.backend_bases import FigureCanvasBase
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if type(fig.canvas) is FigureCanvasBase:
        # A bare Figure: given the PNG's canvas now, the layout and the PNG's draw measure the
        # texts with one renderer, which keeps their sizes (savefig would make a canvas and a
        # renderer of its own, after the layout measured everything on another): 10 % less.
        FigureCanvasAgg(fig)
    with warnings.catch_warnings():  # a name in a script the font lacks: boxes, no noise
        warnings.filterwarnings("ignore", r"Glyph \d+ .*missing from font", UserWarning)
        engine = fig.get_layout_engine()
        if engine is not None and fig.axes:  # as ``Figure.draw`` runs it
            try:
                engine.execute(fig)
            except ValueError:  # as ``Figure.draw``: a layout that cannot fit is not applied
                pass
        with matplotlib.rc_context({"figure.autolayout": False,
                                    "figure.constrained_layout.use": False}):
            fig.set_layout_engine(None)  # keep the positions found; no engine, no extra draw
        for path, fmt, meta in ((png, "png", {"Software": None}),
                                (svg, "svg", {"Date": None})):
            buf = io.BytesIO()
            with matplotlib.rc_context({"svg.hashsalt": f"{SVG_SALT_PREFIX}{svg.name}"}):
                fig.savefig(buf, format=fmt, metadata=meta)
            write_bytes_atomic(path, buf.getvalue(), durable=False)


def draw_error_vs_budget(
    arms: Mapping[str, ArmSummary],
    *,
    scenario_name: str,
    n_tasks: int | None = None,
    partial: bool = False,
    metric: Metric = ERROR_RATE,
    x: str = "edges",
    targets: Sequence[float] = (),
    style: FigureStyle = REPORT_STYLE,
) -> tuple[Any, float, int, int]:
    """The figure :func:`plot_error_vs_budget` writes, not written: (matplotlib ``Figure``,
    floor, means clipped to it, arms plotted). ``style`` sets its size and resolution; its
    font size applies when drawn inside ``style.fonts()``."""
    # matplotlib is slow to import: only the processes that draw a plot load it.
    from matplotlib.figure import Figure

    fig = Figure(figsize=style.figsize or FIGSIZE, dpi=style.dpi or 150, layout="constrained")
    ax = fig.add_subplot()
    floor, clipped, plotted = draw_error_axes(
        ax, arms, scenario_name=scenario_name, n_tasks=n_tasks, partial=partial, metric=metric,
        x=x, targets=targets)
    fig.text(0.01, 0.005, floor_note(floor, n_tasks if metric.percent else None, metric),
             fontsize="x-small", color="0.35", ha="left", va="bottom")
    engine = fig.get_layout_engine()
    if engine is not None:  # the constrained layout set above: leave room for the note
        engine.set(rect=(0, 0.035, 1, 0.965))  # type: ignore[call-arg]
    return fig, floor, clipped, plotted


def floor_note(floor: float, n_tasks: int | None, metric: Metric) -> str:
    """The figure's footnote: what the line and band are, and the log-scale floor."""
    tick = _percent_tick if metric.percent else _plain_tick
    basis = f"0.5/{n_tasks:,} tasks" if n_tasks else "half the smallest error"
    return (f"line: mean over replicates; band: 95% CI. Errors below {tick(floor)} "
            f"({basis}), including 0, are drawn at that floor (dotted line).")


def draw_error_axes(
    ax: Any,
    arms: Mapping[str, ArmSummary],
    *,
    scenario_name: str,
    n_tasks: int | None = None,
    partial: bool = False,
    metric: Metric = ERROR_RATE,
    x: str = "edges",
    targets: Sequence[float] = (),
) -> tuple[float, int, int]:
    """Draw the error curves of :func:`draw_error_vs_budget` on the matplotlib ``ax`` (any
    Axes: of a pyplot figure in a notebook, or of a bare ``Figure``), with a dotted horizontal
    line at each of ``targets``; (floor, means clipped to it, arms plotted)."""
    if not metric.percent:
        n_tasks = None
    from matplotlib.ticker import FuncFormatter

    floor = error_floor(n_tasks, arms)
    clipped = 0
    plotted = 0
    n_arms = len(arms)
    top = floor
    axis = X_AXES[x]
    for idx, (name, arm) in enumerate(arms.items()):
        edges = np.asarray(arm.axis_values(axis.key) or [], dtype=float)
        mean = np.asarray(arm.error, dtype=float)
        if edges.size == 0:
            continue
        # the clipped Student-t interval (None, i.e. NaN, with one replicate)
        lo = np.asarray(arm.error_low, dtype=float)
        hi = np.asarray(arm.error_high, dtype=float)
        lo, hi = np.maximum(np.nan_to_num(lo, nan=floor), floor), np.maximum(
            np.nan_to_num(hi, nan=floor), floor)
        clipped += int(np.count_nonzero(mean < floor))
        shown = np.maximum(mean, floor)
        top = max(top, float(hi.max()), float(shown.max()))  # one replicate: no interval
        style = arm_style(idx)
        label = f"{plot_text(name)} (n={arm.replicates})"
        ax.fill_between(edges, lo, hi, color=arm_colour(idx), alpha=0.18, linewidth=0)
        ax.plot(
            edges, shown, label=label, linewidth=1.8, markersize=5,
            markevery=_markevery(edges.size, idx, n_arms),
            markerfacecolor="white", markeredgewidth=1.3, **style,
        )
        plain = arm.plain_rmse
        if not metric.percent and plain and all(p is not None for p in plain):
            plain_arr = np.maximum(np.asarray(plain, dtype=float), floor)
            top = max(top, float(plain_arr.max()))
            ax.plot(edges, plain_arr, color=arm_colour(idx), linewidth=1.0, linestyle=":",
                    label=f"{plot_text(name)}: plain mean")
        plotted += 1
    ax.set_yscale("log")
    tick = _percent_tick if metric.percent else _plain_tick
    ax.yaxis.set_major_formatter(FuncFormatter(tick))
    if not metric.percent:  # RMSE spans less than a decade: label the minor ticks plainly too
        ax.yaxis.set_minor_formatter(FuncFormatter(tick))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:,.0f}"))
    top = max([top, *targets])
    ax.set_ylim(bottom=floor * 0.8, top=max(top * 1.25, floor * 10))
    ax.set_xlabel(axis.label)
    ax.set_ylabel(f"{metric.label} (log scale)")
    what = "task error" if metric.percent else metric.label
    title = f"{plot_text(scenario_name)}: {what} vs. {axis.title}"
    if partial:
        title += " (partial run)"
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", axis="y", alpha=0.08)
    ax.axhline(floor, color="0.5", linewidth=0.8, linestyle=":", zorder=0)
    for target in targets:
        ax.axhline(target, color="0.25", linewidth=0.9, linestyle=(0, (4, 3)), zorder=1,
                   label="_target")
        ax.annotate(metric.target(target), (0, target), xycoords=("axes fraction", "data"),
                    xytext=(3, 2), textcoords="offset points", fontsize="x-small",
                    color="0.25")
    if plotted:
        ax.legend(title="arm (replicates); band = 95% CI of the mean", title_fontsize="small",
                  fontsize="small", loc="best", framealpha=0.9)
    else:
        ax.text(0.5, 0.5, "no finished units yet", transform=ax.transAxes, ha="center")
    return floor, clipped, plotted
