"""The terminal error chart: curves rasterised on a character grid with a log-scale error axis
against labels spent (or money, or simulated time), drawn as rich Text (used by the live
dashboard)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.text import Text

from marketsim.report.formatting import clean_name, fmt_axis

#: Errors at or below this are drawn on the bottom of the log-scale chart.
ERROR_FLOOR = 1e-4


@dataclass(frozen=True)
class Series:
    """One curve of the chart: an arm's error against the labels spent (``edges``; on the
    money and time charts, ``edges`` holds the money spent or the simulated time)."""

    name: str
    edges: np.ndarray
    error: np.ndarray
    marker: str = "●"
    colour: str = "cyan"
    live: bool = False


@dataclass
class ChartGrid:
    """A ``height`` × ``width`` grid of series indices (``None`` is empty); row 0 is the top."""

    cells: list[list[int | None]]
    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float
    clamped: bool = False

    def rows_of(self, index: int) -> list[int]:
        """Rows (top = 0) where series ``index`` is drawn, column by column."""
        return [r for c in range(len(self.cells[0])) for r in range(len(self.cells))
                if self.cells[r][c] == index]


def _clean_curve(edges: Any, error: Any) -> tuple[np.ndarray, np.ndarray]:
    e = np.asarray(edges, dtype=float).ravel()
    y = np.asarray(error, dtype=float).ravel()
    n = min(e.size, y.size)
    e, y = e[:n], y[:n]
    keep = np.isfinite(e) & np.isfinite(y)
    e, y = e[keep], y[keep]
    order = np.argsort(e, kind="stable")
    return e[order], y[order]


def chart_grid(
    series: list[Series],
    width: int = 60,
    height: int = 12,
    x_range: tuple[float, float] | None = None,
) -> ChartGrid:
    """Rasterise the series on a log-error grid; later series are drawn over earlier ones,
    and live series under finished ones. The y range spans whole decades of the positive
    errors, no lower than :data:`ERROR_FLOOR`; errors of 0 or below the range sit on the
    bottom row (``clamped``); NaNs are skipped."""
    width, height = max(2, int(width)), max(2, int(height))
    curves = [_clean_curve(s.edges, s.error) for s in series]
    xs = np.concatenate([e for e, _ in curves]) if curves else np.empty(0)
    ys = np.concatenate([y for _, y in curves]) if curves else np.empty(0)
    ys = ys[ys > 0]
    if x_range is not None:
        x_lo, x_hi = float(x_range[0]), float(x_range[1])
    elif xs.size:
        x_lo, x_hi = float(xs.min()), float(xs.max())
    else:
        x_lo, x_hi = 0.0, 1.0
    if not x_hi > x_lo:
        x_hi = x_lo + 1.0
    if ys.size:
        y_lo = 10.0 ** math.floor(math.log10(float(ys.min())) + 1e-9)
        y_hi = 10.0 ** math.ceil(math.log10(float(ys.max())) - 1e-9)
    else:
        y_lo, y_hi = 1e-3, 1.0
    clamped = any(bool(np.any(y < max(y_lo, ERROR_FLOOR))) for _, y in curves)
    if clamped:  # keep errors of 0 below the smallest positive one
        y_lo /= 10.0
    y_lo = max(y_lo, ERROR_FLOOR)
    if not y_hi > y_lo:
        y_hi = y_lo * 10.0
    l_lo, l_hi = math.log10(y_lo), math.log10(y_hi)
    cells: list[list[int | None]] = [[None] * width for _ in range(height)]
    cols = x_lo + (x_hi - x_lo) * np.arange(width) / (width - 1)
    order = sorted(range(len(series)), key=lambda i: (not series[i].live, i))
    for i in order:
        e, y = curves[i]
        if e.size == 0:
            continue
        logs = np.log10(np.maximum(y, y_lo))
        if e.size == 1:
            c = int(round((e[0] - x_lo) / (x_hi - x_lo) * (width - 1)))
            points = [(c, float(logs[0]))] if 0 <= c < width else []
        else:
            inside = (cols >= e[0] - 1e-9) & (cols <= e[-1] + 1e-9)
            points = [(int(c), float(v)) for c, v in
                      zip(np.nonzero(inside)[0], np.interp(cols[inside], e, logs), strict=True)]
            # A curve shorter than one column still shows its last point.
            last = int(round((e[-1] - x_lo) / (x_hi - x_lo) * (width - 1)))
            if 0 <= last < width:
                points.append((last, float(logs[-1])))
        for c, v in points:
            frac = (l_hi - v) / (l_hi - l_lo)
            r = min(height - 1, max(0, int(round(frac * (height - 1)))))
            cells[r][c] = i
    return ChartGrid(cells, x_lo, x_hi, y_lo, y_hi, clamped)


def render_chart(
    series: list[Series],
    width: int = 60,
    height: int = 12,
    x_range: tuple[float, float] | None = None,
    title: str = "error (log scale) vs labels spent",
    legend: list[Series] | None = None,
    line_width: int | None = None,
    xlabel: str = "labels (edges)",
) -> Text:
    """The error-versus-budget chart as rich Text: y tick labels on decades, an x axis with
    three tick labels and its title ``xlabel``, and a legend (one marker and colour per series
    of ``legend``, by default all of ``series``; legend lines wrap at ``line_width``)."""
    out, indent = chart_text(series, width, height, x_range, title, xlabel)
    out.append("\n")
    out.append_text(legend_text(series if legend is None else legend, indent, line_width))
    return out


def chart_text(
    series: list[Series],
    width: int = 60,
    height: int = 12,
    x_range: tuple[float, float] | None = None,
    title: str = "error (log scale) vs labels spent",
    xlabel: str = "labels (edges)",
) -> tuple[Text, int]:
    """The chart of :func:`render_chart` without its legend (charts side by side share one),
    and the column where its plotting area starts (where a legend under it is indented to)."""
    grid = chart_grid(series, width, height, x_range)
    width, height = len(grid.cells[0]), len(grid.cells)
    l_lo, l_hi = math.log10(grid.y_lo), math.log10(grid.y_hi)
    ticks: dict[int, str] = {}
    for k in range(int(round(l_lo)), int(round(l_hi)) + 1):
        r = int(round((l_hi - k) / (l_hi - l_lo) * (height - 1)))
        ticks.setdefault(r, f"{10.0 ** k:g}")
    if grid.clamped:  # errors of 0 (or below the floor) are drawn on the bottom row
        ticks[height - 1] = "≤" + ticks.get(height - 1, f"{grid.y_lo:g}")
    pad = max(len(t) for t in ticks.values()) if ticks else 1
    out = Text(no_wrap=True, overflow="crop")
    out.append(" " * (pad + 1) + title + "\n", style="bold")
    for r in range(height):
        label = ticks.get(r, "")
        out.append(f"{label:>{pad}} ", style="dim")
        out.append("┤" if label else "│", style="dim")
        for c in range(width):
            i = grid.cells[r][c]
            if i is None:
                out.append(" ")
            else:
                s = series[i]
                out.append(s.marker, style=f"{s.colour} dim" if s.live else s.colour)
        out.append("\n")
    out.append(" " * pad + " └" + "─" * width + "\n", style="dim")
    lo, mid, hi = fmt_axis(grid.x_lo), fmt_axis((grid.x_lo + grid.x_hi) / 2), \
        fmt_axis(grid.x_hi)
    axis = [" "] * (width + 2)
    for text, at in ((lo, 0), (mid, (width - len(mid)) // 2), (hi, width + 2 - len(hi))):
        at = max(0, min(at, width + 2 - len(text)))
        axis[at:at + len(text)] = list(text)
    out.append(" " * pad + "".join(axis)[: width + 2] + "\n", style="dim")
    out.append(" " * (pad + 2 + max(0, (width - len(xlabel)) // 2)) + xlabel, style="dim")
    return out, pad + 2


def legend_text(series: list[Series], indent: int, line_width: int | None = None) -> Text:
    """One marker and name per series, indented by ``indent`` columns, lines wrapped at
    ``line_width``; running units' series are marked ``(live)``."""
    pad = " " * indent
    room = max(1, (line_width or 10**9) - indent)
    used = 0
    out = Text(pad, no_wrap=True, overflow="crop")
    for s in series:
        item = s.marker + " " + clean_name(s.name) + (" (live)" if s.live else "")
        if used and used + 2 + len(item) > room:
            out.append("\n" + pad)
            used = 0
        elif used:
            out.append("  ")
            used += 2
        out.append(s.marker, style=s.colour)
        out.append(item[len(s.marker):])
        used += len(item)
    return out
