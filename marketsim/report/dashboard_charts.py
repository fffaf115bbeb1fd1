"""The error charts of the live dashboard: error against the labels spent and, when the study
has cost axes (money differs from labels, or simulated time differs between arms), against
the money spent and the simulated time too.

Layout, chosen so that the charts never cost the frame a row (the bars and the table of an
8-arm study already fill most of a 40-row terminal, and rich's live display crops what does
not fit, so stacked charts would push the labels chart off the screen):

- side by side when the terminal is wide enough for every chart to have at least
  :data:`MIN_CHART_COLUMNS` plotting columns (the labels chart on the left, one legend under
  them all, since the arms and markers are the same);
- when only two fit (a 120-column terminal with both money and time), the labels chart stays
  on the left and the right one shows money and simulated time in turn, every
  :data:`ROTATE_SECONDS` of wall clock, so a user watching sees both;
- when only one fits, that one chart's x axis rotates among labels, money and time;
- a narrow terminal (under :data:`NARROW` columns), or a one-chart frame too short to read
  (under :data:`MIN_ROTATING_ROWS` rows), keeps the labels chart alone, as does every market
  without cost axes, whose frames are the same as before these charts existed.

The last frame (left on screen when the study ends) shows the first axes of the rotation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from marketsim.report.study_state import ArmView, StudyState
from marketsim.report.text_chart import Series, chart_text, legend_text, render_chart

#: Marker and colour of each arm in the bars, the table and the charts (they cycle).
MARKERS = ("●", "■", "▲", "◆", "✚", "○", "□", "△", "▼", "◇")
COLOURS = (
    "cyan", "magenta", "yellow", "green", "red", "bright_blue", "orange3", "bright_white",
    "purple", "turquoise2",
)
#: Fewest plotting columns a chart drawn beside another gets.
MIN_CHART_COLUMNS = 40
#: Columns a chart takes besides its plotting area (y tick labels, axis) and between charts.
CHART_MARGIN, CHART_GAP = 10, 2
#: Terminals narrower than this keep the labels chart alone.
NARROW = 64
#: A single chart shorter than this keeps to labels (switching its axis would only flicker).
MIN_ROTATING_ROWS = 6
#: Wall-clock seconds each axis of a rotating chart stays on screen.
ROTATE_SECONDS = 5.0


def terminal_style(index: int) -> tuple[str, str]:
    """Marker and rich colour of the ``index``-th arm."""
    return MARKERS[index % len(MARKERS)], COLOURS[index % len(COLOURS)]


@dataclass(frozen=True)
class ChartAxis:
    """An x axis of the dashboard: its words in the chart title and under the axis, and the
    summary key (mean per edge count) and ``CurvePoint`` attribute that hold its values."""

    title: str
    xlabel: str
    field: str


#: The dashboard's x axes, by the names :func:`marketsim.record.reach.cost_axes` returns.
AXES = {
    "labels": ChartAxis("labels spent", "labels (edges)", "edges"),
    "money": ChartAxis("money spent", "money spent", "money"),
    "time": ChartAxis("simulated time", "simulated time", "sim_time"),
}


def chart_panels(cost_axes: list[str], width: int, chart_rows: int, phase: int) -> list[str]:
    """The axes to draw side by side, left to right, at rotation step ``phase`` (see the
    module docstring for the layout)."""
    panels = ["labels", *(a for a in cost_axes if a in AXES)]
    costs = panels[1:]
    fits = (width + CHART_GAP) // (MIN_CHART_COLUMNS + CHART_MARGIN + CHART_GAP)
    if not costs or width < NARROW:
        return ["labels"]
    if fits >= len(panels):
        return panels
    if fits >= 2:
        return ["labels", costs[phase % len(costs)]]
    return ["labels"] if chart_rows < MIN_ROTATING_ROWS else [panels[phase % len(panels)]]


def axis_series(state: StudyState, axis: str) -> list[Series]:
    """Each arm's mean curve on ``axis`` (or, before its first unit finished, the longest
    running unit), then the running units of arms that have a mean curve, drawn under it."""
    key = AXES[axis].field
    out = []
    for i, view in enumerate(state.arms):
        marker, colour = terminal_style(i)
        s = view.summary
        if s and s.edges:
            out.append(Series(view.name, np.asarray(s.axis_values(key) or (), dtype=float),
                              np.asarray(s.error), marker, colour))
        elif view.live:
            out.append(live_series(view, i, key))
        else:
            out.append(Series(view.name, np.empty(0), np.empty(0), marker, colour))
    out += [live_series(view, i, key) for i, view in enumerate(state.arms)
            if view.summary and view.live]
    return out


def live_series(view: ArmView, index: int, key: str = "edges") -> Series:
    """The longest running unit of an arm on the axis of ``CurvePoint`` attribute ``key``."""
    pts = max(view.live.values(), key=len)
    return Series(view.name, np.array([getattr(p, key) for p in pts], dtype=float),
                  np.array([p.error_rate for p in pts]), *terminal_style(index), live=True)


def _x_range(state: StudyState, axis: str, series: list[Series]) -> tuple[float, float]:
    """Labels: from the first point to the budget. Money, time: from the first point (0 at
    the latest) to the largest value seen."""
    xs = [s.edges[np.isfinite(s.edges)] for s in series]
    starts = [float(x.min()) for x in xs if x.size]
    x_lo = min(starts, default=0.0)
    if axis == "labels":
        return min(x_lo, state.budget), state.budget
    return min(x_lo, 0.0), max((float(x.max()) for x in xs if x.size), default=1.0)


def render_charts(state: StudyState, width: int, rows_left: int, phase: int) -> RenderableType:
    """The frame's charts under the table, given the terminal ``width`` and the rows left."""
    if width < 28:
        return Text("(terminal too narrow for the chart)", style="dim")
    series = axis_series(state, "labels")
    if not any(len(s.edges) for s in series):
        return Text("chart: waiting for the first refresh…", style="dim")
    legend = series[: len(state.arms)]
    legend_len = sum(len(s.name) + 11 for s in legend)
    legend_lines = 1 + legend_len // max(1, width - 10)
    height = max(4, min(12, rows_left - 5 - legend_lines))
    panels = chart_panels(state.cost_axes, width, height, phase)
    if panels == ["labels"]:
        chart_w = max(16, min(60, width - 10))
        return render_chart(series, chart_w, height, x_range=_x_range(state, "labels", series),
                            legend=legend, line_width=width,
                            title=f"{state.metric.short} (log scale) vs labels spent")
    column = (width + CHART_GAP) // len(panels) - CHART_GAP
    chart_w = max(16, min(60, column - CHART_MARGIN))
    charts, indent = [], 0
    for axis in panels:
        on_axis = series if axis == "labels" else axis_series(state, axis)
        text, at = chart_text(on_axis, chart_w, height, _x_range(state, axis, on_axis),
                              title=f"{state.metric.short} (log scale) vs {AXES[axis].title}",
                              xlabel=AXES[axis].xlabel)
        charts.append(text)
        indent = indent or at
    grid = Table.grid(padding=(0, CHART_GAP, 0, 0))
    for _ in panels:
        grid.add_column(no_wrap=True)
    grid.add_row(*charts)
    both = Table.grid()
    both.add_row(grid)
    both.add_row(legend_text(legend, indent, width))
    return both
