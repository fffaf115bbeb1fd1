"""The live terminal dashboard of ``marketsim run``: overall and per-arm progress bars with
ETAs, a table of mean errors with confidence intervals, and the error-versus-budget chart
(with error against money and simulated time beside it when they differ from labels:
:mod:`marketsim.report.dashboard_charts`).

It is one of the run observers of :mod:`marketsim.report.progress` (chosen on a terminal)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskProgressColumn, TextColumn
from rich.table import Table
from rich.text import Text

from marketsim.record.curves import CurvePoint
from marketsim.record.summary import TARGETS
from marketsim.record.units import UnitResult
from marketsim.report.dashboard_charts import ROTATE_SECONDS, render_charts, terminal_style
from marketsim.report.formatting import (
    DASH,
    clean_name,
    fmt_axis,
    fmt_error,
    fmt_seconds,
    num,
    short,
)
from marketsim.report.study_state import StudyState
from marketsim.scenario.specs import Scenario


class _EtaColumn(ProgressColumn):
    """ETA computed by the dashboard (average speed of this session) and kept in a field."""

    def render(self, task: Task) -> Text:
        eta = task.fields.get("eta")
        if task.finished or eta == 0.0:
            return Text("done", style="green")
        return Text("ETA " + fmt_seconds(eta), style="cyan")


class LiveDashboard:
    """A rich ``Live`` dashboard: overall and per-arm progress bars with ETAs, a table of
    mean errors with 95 % confidence intervals and edges to reach 5 % / 1 % error, and a
    log-scale error-versus-budget chart of the mean curves (plus live points), and charts
    of error against money and simulated time when the study has cost axes."""

    def __init__(self, console: Console | None = None, refresh_per_second: float = 4,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console if console is not None else Console(stderr=True)
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
    def start(self, scenario: Scenario, run_dir: Path | str | None) -> None:
        """Set up the bars and start the live display."""
        with self._lock:
            self.state = StudyState(scenario)
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
                    "[{1}]{0}[/] ".format(*terminal_style(i)) + escape(short(view.name, 28)),
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
                count=f"{fmt_axis(labels)}/{fmt_axis(total)} labels",
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
            f"{st.budget:,} labels · elapsed {fmt_seconds(st.elapsed())}"
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
        table.add_column(f"{st.metric.short} [95% CI]", justify="right", no_wrap=True)
        if wide:
            table.add_column("at edges", justify="right", no_wrap=True)
        if medium:
            for t in TARGETS:
                table.add_column(f"edges→{st.metric.target_short(t)}", justify="right",
                                 no_wrap=True)
        costs = st.cost_axes if wide else []  # money, time beside labels when they differ
        for axis in costs:
            for t in TARGETS:
                table.add_column(f"{axis}→{st.metric.target_short(t)}", justify="right",
                                 no_wrap=True)
        for i, view in enumerate(st.arms):
            marker, colour = terminal_style(i)
            name = Text(marker + " ", style=colour)
            name.append(view.name)
            reach = [DASH] * len(TARGETS)
            cost = [DASH] * (len(TARGETS) * len(costs))
            error: Text | str = DASH
            at = DASH
            s = view.summary
            if s and s.get("error_rate"):
                mean = s["error_rate"][-1]
                low, high = s["error_rate_low"][-1], s["error_rate_high"][-1]
                ci = (f" [{fmt_error(low)}, {fmt_error(high)}]" if low is not None
                      and high is not None else f" [{DASH}]")  # clipped Student-t interval
                error = fmt_error(mean) + (ci if fmt_error(mean) != DASH else "")
                at = num(s["edges"][-1])
                reach = [num(s["edges_to_reach"].get(f"{t:g}")) for t in TARGETS]
                cost = [_mean_to_reach(s, axis, t) for axis in costs for t in TARGETS]
            elif view.live:
                last = max(view.live.values(), key=lambda p: p[-1].edges if p else -1)
                if last:
                    error = Text(fmt_error(last[-1].error_rate) + " live", style="dim")
                    at = num(last[-1].edges)
            cells: list[RenderableType] = [name]
            if wide:
                cells += [f"{len(view.finished)}/{st.replicates}", fmt_axis(st.arm_labels(i))]
            cells.append(error)
            if wide:
                cells.append(at)
            if medium:
                cells += reach
            cells += cost
            table.add_row(*cells)
        return table

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


def _mean_to_reach(summary: dict[str, Any], axis: str, target: float) -> str:
    """An arm's mean money (time) to ``target`` over its finished replicates, compact
    (``12k``); :data:`DASH` unless every one reached it."""
    mean = (summary.get(f"{axis}_to_reach_ci95") or {}).get(f"{target:g}", {}).get("mean")
    return DASH if mean is None else fmt_axis(mean)

