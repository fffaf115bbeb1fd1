"""The live terminal dashboard of ``marketsim run``: overall and per-arm progress bars with
ETAs, a table of mean errors with confidence intervals, and the error-versus-budget chart
(with error against money and simulated time beside it when they differ from labels:
:mod:`marketsim.report.dashboard_charts`).

It is one of the run observers of :mod:`marketsim.report.progress` (chosen on a terminal)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, Group, JustifyMethod, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskProgressColumn, TextColumn
from rich.table import Table
from rich.text import Text

from marketsim.record.curves import CurvePoint
from marketsim.record.summary_model import ArmSummary
from marketsim.record.units import UnitResult
from marketsim.report.dashboard_charts import ROTATE_SECONDS, render_charts, terminal_style
from marketsim.report.formatting import (
    DASH,
    clean_name,
    count_of,
    fmt_axis,
    fmt_error,
    fmt_seconds,
    num,
    short,
)
from marketsim.report.study_state import StudyState
from marketsim.scenario.outline import StudyOutline


class _EtaColumn(ProgressColumn):
    """ETA computed by the dashboard (average speed of this session) and kept in a field."""

    def render(self, task: Task) -> Text:
        eta = task.fields.get("eta")
        if task.finished or eta == 0.0:
            return Text("done", style="green")
        return Text("ETA " + fmt_seconds(eta), style="cyan")


class LiveDashboard:
    """A rich ``Live`` dashboard: overall and per-arm progress bars with ETAs, a table of
    mean errors with 95 % confidence intervals and edges to reach each target error
    (the scenario's ``[report] targets``, else 5 % and 1 %), and a
    log-scale error-versus-budget chart of the mean curves (plus live points), and charts
    of error against money and simulated time when the study has cost axes."""

    def __init__(self, console: Console | None = None, refresh_per_second: float = 4,
                 clock: Callable[[], float] = time.monotonic, auto_refresh: bool = True) -> None:
        self.console = console if console is not None else Console(stderr=True)
        #: Redraw from rich's own thread ``refresh_per_second`` times a second; ``False``
        #: draws only on :meth:`render` calls (a test that reads frames, free of that thread).
        self.auto_refresh = auto_refresh
        #: Wall clock of the charts' axis rotation (a test passes its own).
        self.clock = clock
        self._shown_at = clock()
        self.refresh_per_second = refresh_per_second
        self.state: StudyState | None = None
        self.run_dir: str | None = None
        self.interrupted = False
        self.stopped = False
        self._lock = threading.RLock()
        self._live: Live | None = None
        self._progress: Progress | None = None
        self._overall: Any = None
        self._arm_tasks: list[Any] = []

    # -- observer API --
    def start(self, study: StudyOutline, run_dir: Path | str | None) -> None:
        """Set up the bars and start the live display."""
        with self._lock:
            self.state = StudyState(study)
            self._shown_at = self.clock()
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
                    "[{1}]{0}[/] ".format(*terminal_style(i))
                    + escape(short(view.name, _bar_name_length(self.console.width))),
                    total=st.replicates * st.budget, count="", eta=None,
                )
                for i, view in enumerate(st.arms)
            ]
            self._update_bars()
            self._live = Live(
                get_renderable=self.render,
                console=self.console,
                refresh_per_second=self.refresh_per_second,
                auto_refresh=self.auto_refresh,
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
                count=f"{fmt_axis(labels)}/{fmt_axis(total)} labels",
                eta=st.eta(labels, total, st.arms[i].resumed_labels),
            )

    def _header(self) -> Text:
        st = self.state
        assert st is not None
        end = ("interrupted" if self.interrupted else "finished") if self.stopped else ""
        long = (f"  {count_of(st.replicates, 'replicate')} × {count_of(len(st.arms), 'arm')}"
                f" · budget {st.budget:,} labels · elapsed {fmt_seconds(st.elapsed())}")
        name = "marketsim " + clean_name(st.study.name)
        if len(name) + len(long) + len(end) + 2 > self.console.width:  # the words that fit
            long = (f"  {st.replicates} reps × {len(st.arms)} arms · {fmt_axis(st.budget)}"
                    f" labels · {fmt_seconds(st.elapsed())}")
        head = Text(no_wrap=True, overflow="ellipsis")
        head.append("marketsim ", style="bold")
        head.append(clean_name(st.study.name), style="bold cyan")
        head.append(long)
        if end:
            head.append("  " + end, style="bold red" if self.interrupted else "bold green")
        return head

    def _table(self) -> Table:
        """The table of arms, with as many columns as the terminal shows in full: the arm,
        its error and the edges to each target always; then money and time to each target,
        the replicates finished, the labels spent and the edges of the last point, each while
        it fits (a column is dropped, never cut to an ellipsis)."""
        st = self.state
        assert st is not None
        columns = [_Column("arm", "left", [self._arm_name(i) for i in range(len(st.arms))])]
        columns += [_Column(h, "right", c) for h, c in self._value_columns()]
        room = self.console.width
        keep = {0, 3} if room >= 24 else {0}
        error = columns[3].width() + _COLUMN_GAP if 3 in keep else 0
        used = columns[0].width() + error
        if used > room:  # only a terminal too narrow for the arm and its error cuts names
            columns[0].max_width = max(8, room - error)
            used = columns[0].max_width + error
        for index in _priority(len(st.targets), 1 + len(st.cost_axes)):
            if index < len(columns) and used + _COLUMN_GAP + columns[index].width() <= room:
                keep.add(index)
                used += _COLUMN_GAP + columns[index].width()
        table = Table(box=box.SIMPLE_HEAD, expand=False, padding=(0, 1), pad_edge=False,
                      show_edge=False)
        shown = [c for i, c in enumerate(columns) if i in keep]
        for column in shown:
            table.add_column(column.header, justify=column.justify, no_wrap=True,
                             overflow="ellipsis", max_width=column.max_width)
        for row in range(len(st.arms)):
            table.add_row(*(column.cells[row] for column in shown))
        return table

    def _arm_name(self, index: int) -> Text:
        """The arm's marker and name, in its colour."""
        assert self.state is not None
        marker, colour = terminal_style(index)
        name = Text(marker + " ", style=colour)
        name.append(self.state.arms[index].name)
        return name

    def _value_columns(self) -> list[tuple[str, list[RenderableType]]]:
        """Every column after the arm's, in display order, as (header, one cell per arm):
        reps, labels, error with its interval, edges at the last point, edges to each
        target, then money and time to each target when they differ from labels."""
        st = self.state
        assert st is not None
        costs = st.cost_axes  # money, time beside labels when they differ
        heads = ["reps", "labels", f"{st.metric.short} [95% CI]", "at edges"]
        heads += [f"{axis}→{st.metric.target_short(t)}" for axis in ("edges", *costs)
                  for t in st.targets]
        cells: list[list[RenderableType]] = [[] for _ in heads]
        for i, view in enumerate(st.arms):
            reach = [DASH] * len(st.targets)
            cost = [DASH] * (len(st.targets) * len(costs))
            error: Text | str = DASH
            at = DASH
            s = view.summary
            if s and s.error:
                mean = s.error[-1]
                low, high = s.error_low[-1], s.error_high[-1]
                ci = (f" [{fmt_error(low)}, {fmt_error(high)}]" if low is not None
                      and high is not None else f" [{DASH}]")  # clipped Student-t interval
                error = fmt_error(mean) + (ci if fmt_error(mean) != DASH else "")
                at = num(s.edges[-1])
                reach = [num(s.edges_to_reach.get(f"{t:g}")) for t in st.targets]
                cost = [_mean_to_reach(s, axis, t) for axis in costs for t in st.targets]
            elif view.live:
                last = max(view.live.values(), key=lambda p: p[-1].edges if p else -1)
                if last:
                    error = Text(fmt_error(last[-1].error_rate) + " live", style="dim")
                    at = num(last[-1].edges)
            row = [f"{len(view.finished)}/{st.replicates}", fmt_axis(st.arm_labels(i)),
                   error, at, *reach, *cost]
            for column, cell in zip(cells, row, strict=True):
                column.append(cell)
        return list(zip(heads, cells, strict=True))

    def _phase(self) -> int:
        """Step of the charts' axis rotation: one per :data:`ROTATE_SECONDS` shown, and the
        first axes on the last frame (the one left on screen)."""
        if self.stopped:
            return 0
        return int((self.clock() - self._shown_at) // ROTATE_SECONDS)

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
                render_charts(self.state, self.console.width, rows_left, self._phase()),
            )


#: Columns between two of the table's: one space of padding each side and the divider.
_COLUMN_GAP = 3
def _priority(targets: int, axes: int) -> list[int]:
    """The order in which the table's optional columns (indices into the arm, reps, labels,
    error, at edges, edges→targets, money→targets, time→targets list) get the room left
    after the arm and its error: edges, money and time to the first target, then to the
    second..., then reps, labels and the edges of the last point (the bars above show those)."""
    return [5 + axis * targets + t for t in range(targets) for axis in range(axes)] + [1, 2, 4]


@dataclass
class _Column:
    """A column of the table: its header, alignment and one cell per arm."""

    header: str
    justify: JustifyMethod
    cells: list[RenderableType]
    max_width: int | None = None

    def width(self) -> int:
        """Terminal cells the widest of the header and the cells needs."""
        return max([cell_len(self.header)] + [
            c.cell_len if isinstance(c, Text) else cell_len(str(c)) for c in self.cells])


def _bar_name_length(width: int) -> int:
    """Characters of an arm's name beside its progress bar: at least 28, at most 40, and as
    many as leave the bar, its percentage, count and ETA about 47 columns."""
    return min(40, max(28, width - 47))


def _mean_to_reach(summary: ArmSummary, axis: str, target: float) -> str:
    """An arm's mean money (time) to ``target`` over its finished replicates, compact
    (``12k``); :data:`DASH` unless every one reached it."""
    ci = summary.to_reach_ci95(axis).get(f"{target:g}")
    return DASH if ci is None or ci.mean is None else fmt_axis(ci.mean)

