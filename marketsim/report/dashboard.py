"""Progress observers for ``marketsim run``: a live terminal dashboard, plain lines, or silence.

Every observer has the same four methods, called by the runner's caller:

- ``start(scenario, run_dir)`` once before the first unit;
- ``refresh(replicate, arm, point)`` at every refresh of a running unit's inference service
  (only when units run in this process, i.e. ``jobs == 1``);
- ``unit_done(unit, finished, total)`` whenever a (replicate, arm) unit finishes (or is
  reloaded from a checkpoint when resuming);
- ``stop(interrupted)`` once at the end.

:func:`make_observer` picks one: :class:`QuietProgress` with ``--quiet``,
:class:`LiveDashboard` on a terminal, :class:`PlainProgress` otherwise (CI logs, pipes).
"""

from __future__ import annotations

import math
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

import numpy as np
from rich import box
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskProgressColumn, TextColumn
from rich.table import Table
from rich.text import Text

from marketsim.record.curves import CurvePoint
from marketsim.record.metric import ERROR_RATE, RMSE, Metric
from marketsim.record.summary import TARGETS, summarise
from marketsim.record.units import UnitResult
from marketsim.scenario.specs import Scenario

#: Errors at or below this are drawn on the bottom of the log-scale chart.
ERROR_FLOOR = 1e-4
MARKERS = ("●", "■", "▲", "◆", "✚", "○", "□", "△", "▼", "◇")
COLOURS = (
    "cyan", "magenta", "yellow", "green", "red", "bright_blue", "orange3", "bright_white",
    "purple", "turquoise2",
)
DASH = "—"


class RunObserver(Protocol):
    """What ``marketsim run`` calls while a study runs."""

    def start(self, scenario: Scenario, run_dir: Path | str | None) -> None: ...

    def refresh(self, replicate: int, arm: int, point: CurvePoint) -> None: ...

    def unit_done(self, unit: UnitResult, finished: int, total: int) -> None: ...

    def stop(self, interrupted: bool) -> None: ...


def clean_name(name: str) -> str:
    """``name`` with control characters replaced by their escapes (nothing can garble a line)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(name))


def _fmt_seconds(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "-:--:--"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _fmt_error(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return DASH
    return f"{x:.4f}"


def _fmt_edges(n: float | None) -> str:
    if n is None or not math.isfinite(n):
        return DASH
    return f"{int(n):,}"


def _fmt_axis(n: float) -> str:
    """Compact axis label for an edge count: 950, 12k, 1.5M."""
    if abs(n) >= 1e6:
        return f"{n / 1e6:.3g}M"
    if abs(n) >= 1e4:
        return f"{n / 1e3:.0f}k"
    if abs(n) >= 1e3:
        return f"{n / 1e3:.3g}k"
    return f"{n:.0f}"


# --- the character chart ----------------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    """One curve of the chart: an arm's error against the labels spent."""

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
) -> Text:
    """The error-versus-budget chart as rich Text: y tick labels on decades, an x axis with
    three tick labels and its title, and a legend (one marker and colour per series of
    ``legend``, by default all of ``series``; legend lines wrap at ``line_width``)."""
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
    lo, mid, hi = _fmt_axis(grid.x_lo), _fmt_axis((grid.x_lo + grid.x_hi) / 2), \
        _fmt_axis(grid.x_hi)
    axis = [" "] * (width + 2)
    for text, at in ((lo, 0), (mid, (width - len(mid)) // 2), (hi, width + 2 - len(hi))):
        at = max(0, min(at, width + 2 - len(text)))
        axis[at:at + len(text)] = list(text)
    out.append(" " * pad + "".join(axis)[: width + 2] + "\n", style="dim")
    xlabel = "labels (edges)"
    out.append(" " * (pad + 2 + max(0, (width - len(xlabel)) // 2)) + xlabel + "\n", style="dim")
    indent = " " * (pad + 2)
    room = max(1, (line_width or 10**9) - len(indent))
    used = 0
    out.append(indent)
    for s in series if legend is None else legend:
        item = s.marker + " " + clean_name(s.name) + (" (live)" if s.live else "")
        if used and used + 2 + len(item) > room:
            out.append("\n" + indent)
            used = 0
        elif used:
            out.append("  ")
            used += 2
        out.append(s.marker, style=s.colour)
        out.append(item[len(s.marker):])
        used += len(item)
    return out


# --- study state shared by the observers ------------------------------------------------------


@dataclass
class _ArmView:
    """What the dashboard shows of one arm."""

    name: str
    finished: dict[int, UnitResult] = field(default_factory=dict)
    live: dict[int, list[CurvePoint]] = field(default_factory=dict)
    summary: dict[str, Any] | None = None
    resumed_labels: int = 0


def scenario_metric(scenario: Scenario) -> Metric:
    """The headline error the dashboard shows: RMSE for continuous-score markets."""
    return RMSE if getattr(scenario, "continuous", False) else ERROR_RATE


class _StudyState:
    """Finished and running units of every arm, and the rates behind the ETAs."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.metric = scenario_metric(scenario)
        self.arms = [_ArmView(clean_name(a.name)) for a in scenario.arms]
        self.replicates = scenario.replicates
        self.budget = max(1, scenario.budget.edges)
        self.total_units = self.replicates * len(self.arms)
        self.finished_units = 0
        self.resumed_units = 0
        self.started = time.monotonic()
        self.ended: float | None = None

    def refresh(self, replicate: int, arm: int, point: CurvePoint) -> None:
        if not 0 <= arm < len(self.arms):
            return
        view = self.arms[arm]
        if replicate in view.finished:
            return
        view.live.setdefault(replicate, []).append(point)

    def unit_done(self, unit: UnitResult) -> None:
        if not 0 <= unit.arm < len(self.arms):
            return
        view = self.arms[unit.arm]
        seen_live = unit.replicate in view.live
        view.live.pop(unit.replicate, None)
        if unit.replicate in view.finished:
            return
        view.finished[unit.replicate] = unit
        self.finished_units += 1
        # A unit that took longer than this session has lasted was reloaded from a checkpoint:
        # it counts as done but not towards the speed behind the ETA.
        if not seen_live and unit.seconds > self.elapsed() + 0.5:
            self.resumed_units += 1
            view.resumed_labels += self.budget
        rows = [r for u in view.finished.values() for r in u.rows]
        view.summary = summarise(rows).get(rows[0].arm) if rows else None

    def elapsed(self) -> float:
        return (self.ended if self.ended is not None else time.monotonic()) - self.started

    def arm_labels(self, arm: int) -> int:
        """Labels spent in arm ``arm`` (finished units count their whole budget)."""
        view = self.arms[arm]
        live = sum(min(p[-1].edges, self.budget) for p in view.live.values() if p)
        return len(view.finished) * self.budget + live

    def units_progress(self) -> float:
        """Finished units plus the fraction of the budget spent in running ones."""
        live = sum(
            min(p[-1].edges, self.budget) / self.budget
            for view in self.arms for p in view.live.values() if p
        )
        return min(float(self.total_units), self.finished_units + live)

    def eta(self, done: float, total: float, resumed: float) -> float | None:
        """Seconds left at the average speed of this session (``None`` before any progress)."""
        made = done - resumed
        elapsed = self.elapsed()
        if done >= total:
            return 0.0
        if made <= 0 or elapsed <= 0:
            return None
        return (total - done) * elapsed / made


# --- observers ---------------------------------------------------------------------------------


class QuietProgress:
    """Prints nothing (``--quiet``, ``--json``)."""

    def start(self, scenario: Scenario, run_dir: Path | str | None) -> None:
        """Nothing."""

    def refresh(self, replicate: int, arm: int, point: CurvePoint) -> None:
        """Nothing."""

    def unit_done(self, unit: UnitResult, finished: int, total: int) -> None:
        """Nothing."""

    def stop(self, interrupted: bool) -> None:
        """Nothing."""


class PlainProgress:
    """One plain line per finished unit, for logs and pipes (no ANSI codes, no redraws)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.names: list[str] = []
        self.metric = ERROR_RATE
        self.finished = 0
        self.total = 0

    def _say(self, line: str) -> None:
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # closed pipe or stream: progress is best effort
            pass

    def start(self, scenario: Scenario, run_dir: Path | str | None) -> None:
        """Announce the study."""
        self.names = [a.name for a in scenario.arms]
        self.metric = scenario_metric(scenario)
        self.total = scenario.replicates * len(scenario.arms)
        where = f" -> {clean_name(str(run_dir))}" if run_dir is not None else ""
        self._say(
            f"marketsim: {clean_name(scenario.name)!r}: {scenario.replicates} replicates x "
            f"{len(scenario.arms)} arms = {self.total} units{where}"
        )

    def refresh(self, replicate: int, arm: int, point: CurvePoint) -> None:
        """Nothing (one line per unit is enough for a log)."""

    def unit_done(self, unit: UnitResult, finished: int, total: int) -> None:
        """``[3/8] replicate 1 arm 'uniform': final error 0.0123 (4.2s)``."""
        self.finished, self.total = finished, total
        name = self.names[unit.arm] if 0 <= unit.arm < len(self.names) else f"#{unit.arm}"
        final = _fmt_error(unit.rows[-1].error_rate) if unit.rows else DASH
        if final == DASH:
            final = "n/a"
        self._say(
            f"[{finished}/{total}] replicate {unit.replicate} arm {clean_name(name)!r}: "
            f"final {self.metric.short} {final} ({unit.seconds:.1f}s)"
        )

    def stop(self, interrupted: bool) -> None:
        """Say so if the run was interrupted."""
        if interrupted:
            self._say(f"marketsim: interrupted after {self.finished}/{self.total} units")


class _EtaColumn(ProgressColumn):
    """ETA computed by the dashboard (average speed of this session) and kept in a field."""

    def render(self, task: Task) -> Text:
        eta = task.fields.get("eta")
        if task.finished or eta == 0.0:
            return Text("done", style="green")
        return Text("ETA " + _fmt_seconds(eta), style="cyan")


class LiveDashboard:
    """A rich ``Live`` dashboard: overall and per-arm progress bars with ETAs, a table of
    mean errors with 95 % confidence intervals and edges to reach 5 % / 1 % error, and a
    log-scale error-versus-budget chart of the mean curves (plus live points)."""

    def __init__(self, console: Console | None = None, refresh_per_second: float = 4) -> None:
        self.console = console if console is not None else Console(stderr=True)
        self.refresh_per_second = refresh_per_second
        self.state: _StudyState | None = None
        self.run_dir: str | None = None
        self.interrupted = False
        self.stopped = False
        self._lock = threading.RLock()
        self._live: Live | None = None
        self._progress: Progress | None = None
        self._overall: Any = None
        self._arm_tasks: list[Any] = []

    # -- observer API --
    def start(self, scenario: Scenario, run_dir: Path | str | None) -> None:
        """Set up the bars and start the live display."""
        with self._lock:
            self.state = _StudyState(scenario)
            self.run_dir = None if run_dir is None else clean_name(str(run_dir))
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(bar_width=None),
                TaskProgressColumn(),
                TextColumn("{task.fields[count]}", markup=False),
                _EtaColumn(),
                console=self.console,
                auto_refresh=False,
                expand=True,
            )
            st = self.state
            self._overall = self._progress.add_task(
                "[bold]all units[/]", total=max(1, st.total_units), count="", eta=None
            )
            self._arm_tasks = [
                self._progress.add_task(
                    f"[{COLOURS[i % len(COLOURS)]}]{MARKERS[i % len(MARKERS)]}[/] "
                    + _escape(_short(view.name, 28)),
                    total=st.replicates * st.budget, count="", eta=None,
                )
                for i, view in enumerate(st.arms)
            ]
            self._update_bars()
            self._live = Live(
                get_renderable=self.render,
                console=self.console,
                refresh_per_second=self.refresh_per_second,
                transient=False,
                vertical_overflow="crop",
            )
        self._live.start()

    def refresh(self, replicate: int, arm: int, point: CurvePoint) -> None:
        """A running unit refreshed its inference: move the bars and the live points."""
        with self._lock:
            if self.state is None:
                return
            self.state.refresh(replicate, arm, point)
            self._update_bars()

    def unit_done(self, unit: UnitResult, finished: int, total: int) -> None:
        """A unit finished: update its arm's mean curve and summary."""
        with self._lock:
            if self.state is None:
                return
            self.state.unit_done(unit)
            self._update_bars()

    def stop(self, interrupted: bool) -> None:
        """Draw the last frame and leave it on screen."""
        with self._lock:
            self.interrupted = interrupted
            self.stopped = True
            if self.state is not None:
                self.state.ended = time.monotonic()
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None

    # -- rendering --
    def _update_bars(self) -> None:
        st, progress = self.state, self._progress
        if st is None or progress is None:
            return
        done = st.units_progress()
        progress.update(
            self._overall, completed=done,
            count=f"{st.finished_units}/{st.total_units} units",
            eta=st.eta(done, st.total_units, st.resumed_units),
        )
        for i, task in enumerate(self._arm_tasks):
            labels = st.arm_labels(i)
            total = st.replicates * st.budget
            progress.update(
                task, completed=labels,
                count=f"{_fmt_axis(labels)}/{_fmt_axis(total)} labels",
                eta=st.eta(labels, total, st.arms[i].resumed_labels),
            )

    def _header(self) -> Text:
        st = self.state
        assert st is not None
        head = Text(no_wrap=True, overflow="ellipsis")
        head.append("marketsim ", style="bold")
        head.append(clean_name(st.scenario.name), style="bold cyan")
        head.append(
            f"  {st.replicates} replicates × {len(st.arms)} arms · budget "
            f"{st.budget:,} labels · elapsed {_fmt_seconds(st.elapsed())}"
        )
        if self.stopped:
            head.append("  interrupted" if self.interrupted else "  finished",
                        style="bold red" if self.interrupted else "bold green")
        return head

    def _table(self) -> Table:
        st = self.state
        assert st is not None
        # Narrow terminals keep the columns that matter most: arm, error, edges to targets.
        wide, medium = self.console.width >= 100, self.console.width >= 64
        table = Table(box=box.SIMPLE_HEAD, expand=False, padding=(0, 1), pad_edge=False,
                      show_edge=False)
        table.add_column("arm", no_wrap=True, overflow="ellipsis", max_width=32)
        if wide:
            table.add_column("reps", justify="right", no_wrap=True)
            table.add_column("labels", justify="right", no_wrap=True)
        table.add_column(f"{st.metric.short} ± 95% CI", justify="right", no_wrap=True)
        if wide:
            table.add_column("at edges", justify="right", no_wrap=True)
        if medium:
            for t in TARGETS:
                table.add_column(f"edges→{st.metric.target_short(t)}", justify="right",
                                 no_wrap=True)
        for i, view in enumerate(st.arms):
            colour = COLOURS[i % len(COLOURS)]
            name = Text(MARKERS[i % len(MARKERS)] + " ", style=colour)
            name.append(view.name)
            reach = [DASH] * len(TARGETS)
            error: Text | str = DASH
            at = DASH
            s = view.summary
            if s and s.get("error_rate"):
                mean, half = s["error_rate"][-1], s["error_rate_ci95"][-1]
                ci = f" ± {half:.4f}" if s["replicates"] > 1 and math.isfinite(half) else " ± —"
                error = _fmt_error(mean) + (ci if _fmt_error(mean) != DASH else "")
                at = _fmt_edges(s["edges"][-1])
                reach = [_fmt_edges(s["edges_to_reach"].get(f"{t:g}")) for t in TARGETS]
            elif view.live:
                last = max(view.live.values(), key=lambda p: p[-1].edges if p else -1)
                if last:
                    error = Text(_fmt_error(last[-1].error_rate) + " live", style="dim")
                    at = _fmt_edges(last[-1].edges)
            cells: list[RenderableType] = [name]
            if wide:
                cells += [f"{len(view.finished)}/{st.replicates}", _fmt_axis(st.arm_labels(i))]
            cells.append(error)
            if wide:
                cells.append(at)
            if medium:
                cells += reach
            table.add_row(*cells)
        return table

    def _series(self) -> list[Series]:
        st = self.state
        assert st is not None
        out = []
        for i, view in enumerate(st.arms):
            marker, colour = MARKERS[i % len(MARKERS)], COLOURS[i % len(COLOURS)]
            s = view.summary
            if s and s.get("edges"):
                out.append(Series(view.name, np.asarray(s["edges"]), np.asarray(s["error_rate"]),
                                  marker, colour))
            elif view.live:
                pts = max(view.live.values(), key=len)
                out.append(Series(view.name, np.array([p.edges for p in pts]),
                                  np.array([p.error_rate for p in pts]), marker, colour,
                                  live=True))
            else:
                out.append(Series(view.name, np.empty(0), np.empty(0), marker, colour))
        # Points of running units of arms that already have a mean curve, drawn under it.
        for i, view in enumerate(st.arms):
            if view.summary and view.live:
                pts = max(view.live.values(), key=len)
                out.append(Series(view.name, np.array([p.edges for p in pts]),
                                  np.array([p.error_rate for p in pts]),
                                  MARKERS[i % len(MARKERS)], COLOURS[i % len(COLOURS)],
                                  live=True))
        return out

    def _chart(self, rows_left: int) -> RenderableType:
        st = self.state
        assert st is not None
        width = self.console.width
        if width < 28:
            return Text("(terminal too narrow for the chart)", style="dim")
        series = self._series()
        if not any(len(s.edges) for s in series):
            return Text("chart: waiting for the first refresh…", style="dim")
        legend_series = series[: len(st.arms)]
        legend_len = sum(len(s.name) + 11 for s in legend_series)
        chart_w = max(16, min(60, width - 10))
        legend_lines = 1 + legend_len // max(1, width - 10)
        height = max(4, min(12, rows_left - 5 - legend_lines))
        x_lo = float(min((s.edges.min() for s in series if len(s.edges)), default=0.0))
        chart = render_chart(series, chart_w, height, x_range=(min(x_lo, st.budget), st.budget),
                             legend=legend_series, line_width=width,
                             title=f"{st.metric.short} (log scale) vs labels spent")
        return chart

    def render(self) -> RenderableType:
        """The current frame (also used by the tests and to save a snapshot)."""
        with self._lock:
            if self.state is None or self._progress is None:
                return Text("marketsim: starting…")
            n = len(self.state.arms)
            used = 1 + (n + 1) + (n + 3) + 1
            rows_left = max(8, self.console.height - used)
            return Group(
                self._header(),
                self._progress.make_tasks_table(self._progress.tasks),
                Text(""),
                self._table(),
                self._chart(rows_left),
            )


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def make_observer(quiet: bool, console: Console | None = None) -> RunObserver:
    """``QuietProgress`` when ``quiet``; a ``LiveDashboard`` when the console (stderr by
    default) is a terminal; otherwise ``PlainProgress`` lines on stderr."""
    if quiet:
        return QuietProgress()
    console = console if console is not None else Console(stderr=True)
    if console.is_terminal and not console.is_dumb_terminal:
        return LiveDashboard(console)
    return PlainProgress(console.file if console.file is not None else sys.stderr)
