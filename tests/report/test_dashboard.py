"""The progress observers of ``marketsim run``: live dashboard, plain lines, quiet."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from marketsim.record.curves import CurvePoint, CurveRow
from marketsim.record.units import UnitResult
from marketsim.report.dashboard import LiveDashboard
from marketsim.report.formatting import fmt_axis
from marketsim.report.progress import PlainProgress, QuietProgress, make_observer
from marketsim.report.text_chart import Series, chart_grid, render_chart
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario

BUDGET = 600
EDGES = list(range(120, BUDGET + 1, 40))


def scenario(n_arms: int, replicates: int = 3) -> Scenario:
    """A small scenario with ``n_arms`` uniform arms named ``arm-0``, ``arm-1``…"""
    return parse_scenario(
        {
            "scenario": {"name": "dash test", "replicates": replicates},
            "tasks": {"count": 120},
            "workers": {"count": 8},
            "budget": {"edges": BUDGET, "batch": 40},
            "arms": [{"name": f"arm-{i}", "policy": "uniform"} for i in range(n_arms)],
        }
    )


def errors(arm: int, replicate: int = 0) -> list[float]:
    """A decreasing error curve, lower for higher arms."""
    return [0.3 * math.exp(-(e - 120) / (60.0 * (arm + 1))) + 0.001 * replicate for e in EDGES]


def unit(sc: Scenario, replicate: int, arm: int, errs: list[float] | None = None) -> UnitResult:
    errs = errors(arm, replicate) if errs is None else errs
    rows = tuple(
        CurveRow(e, x, 0.1, float(e), arm=sc.arms[arm].name, replicate=replicate)
        for e, x in zip(EDGES, errs, strict=True)
    )
    return UnitResult(replicate, arm, rows, 0.0)


def recording_console(width: int = 120) -> Console:
    return Console(record=True, width=width, height=40, force_terminal=True, file=io.StringIO())


def feed(dash: LiveDashboard, sc: Scenario, finished_replicates: int = 2) -> None:
    """Finished units for the first replicates, then a running unit of every arm."""
    total = sc.replicates * len(sc.arms)
    count = 0
    for r in range(finished_replicates):
        for a in range(len(sc.arms)):
            for e, x in zip(EDGES, errors(a, r), strict=True):
                dash.refresh(r, a, CurvePoint(e, x, 0.1, float(e)))
            count += 1
            dash.unit_done(unit(sc, r, a), count, total)
    for a in range(len(sc.arms)):
        for e, x in zip(EDGES[:5], errors(a, 9)[:5], strict=True):
            dash.refresh(finished_replicates, a, CurvePoint(e, x, 0.1, float(e)))


@pytest.mark.parametrize("n_arms", [1, 8])
def test_dashboard_renders_progress_table_and_chart(n_arms: int) -> None:
    sc = scenario(n_arms)
    console = recording_console()
    dash = LiveDashboard(console, refresh_per_second=20)
    dash.start(sc.outline, "reports/dash-test/run")
    feed(dash, sc)
    dash.stop(interrupted=False)
    console.print(dash.render())
    text = console.export_text()
    for i in range(n_arms):
        assert f"arm-{i}" in text
    for header in ("arm", "reps", "labels", "error [95% CI]", "edges→5%", "edges→1%"):
        assert header in text
    assert "all units" in text and f"{2 * n_arms}/{3 * n_arms} units" in text
    assert "error (log scale)" in text and "labels (edges)" in text
    assert "finished" in text
    assert "\x1b" not in text


def test_dashboard_copes_with_no_results_nan_and_zero_errors() -> None:
    sc = scenario(3)
    console = recording_console()
    dash = LiveDashboard(console)
    dash.start(sc.outline, None)
    console.print(dash.render())  # nothing has happened yet
    nan_errs = [float("nan")] * len(EDGES)
    zero_errs = [0.0] * len(EDGES)
    dash.unit_done(unit(sc, 0, 0, nan_errs), 1, 9)
    dash.unit_done(unit(sc, 0, 1, zero_errs), 2, 9)
    dash.refresh(0, 2, CurvePoint(120, 0.25, 0.1, 1.0))
    dash.refresh(7, 99, CurvePoint(120, 0.25, 0.1, 1.0))  # unknown arm: ignored
    console.print(dash.render())
    dash.stop(interrupted=True)
    text = console.export_text()
    assert "—" in text and "interrupted" in text
    assert "≤" in text  # the floor row of the log scale is marked
    assert "0.2500 live" in text


@pytest.mark.parametrize("width", [12, 30, 60])
def test_dashboard_survives_tiny_terminals(width: int) -> None:
    sc = scenario(4)
    console = recording_console(width)
    dash = LiveDashboard(console)
    dash.start(sc.outline, "x")
    feed(dash, sc, finished_replicates=1)
    console.print(dash.render())
    dash.stop(interrupted=False)
    assert "arm" in console.export_text()


def test_observer_methods_are_safe_before_start() -> None:
    sc = scenario(1)
    dash = LiveDashboard(recording_console())
    dash.refresh(0, 0, CurvePoint(120, 0.1, 0.1, 0.0))
    dash.unit_done(unit(sc, 0, 0), 1, 1)
    dash.stop(interrupted=False)


def test_progress_counts_running_units_fractionally() -> None:
    sc = scenario(2, replicates=1)
    dash = LiveDashboard(recording_console())
    dash.start(sc.outline, None)
    dash.refresh(0, 0, CurvePoint(300, 0.1, 0.1, 0.0))
    assert dash.state is not None
    assert dash.state.units_progress() == pytest.approx(300 / BUDGET)
    assert dash.state.arm_labels(0) == 300
    dash.unit_done(unit(sc, 0, 0), 1, 2)
    assert dash.state.units_progress() == pytest.approx(1.0)
    assert dash.state.arm_labels(0) == BUDGET
    dash.stop(interrupted=False)


def test_plain_progress_is_plain_lines() -> None:
    sc = parse_scenario(
        {
            "tasks": {"count": 120},
            "workers": {"count": 8},
            "budget": {"edges": BUDGET},
            "arms": [{"name": "uniform", "policy": "uniform"},
                     {"name": "evil\x1b[31m", "policy": "uniform"}],
        }
    )
    out = io.StringIO()
    obs = PlainProgress(out)
    obs.start(sc.outline, "reports/x")
    obs.refresh(0, 0, CurvePoint(120, 0.1, 0.1, 0.0))
    u = unit(sc, 1, 0, [0.0123] * len(EDGES))
    obs.unit_done(UnitResult(1, 0, u.rows, 4.2), 3, 8)
    obs.unit_done(UnitResult(0, 1, (), 1.0), 4, 8)
    obs.stop(interrupted=True)
    text = out.getvalue()
    assert "\x1b" not in text and "\r" not in text
    lines = text.splitlines()
    assert "[3/8] replicate 1 arm 'uniform': final error 0.0123 (4.2s)" in lines
    assert lines[-1] == "marketsim: interrupted after 4/8 units"
    assert len(lines) == 4


def test_quiet_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    sc = scenario(1)
    obs = QuietProgress()
    obs.start(sc.outline, None)
    obs.refresh(0, 0, CurvePoint(120, 0.1, 0.1, 0.0))
    obs.unit_done(unit(sc, 0, 0), 1, 1)
    obs.stop(interrupted=False)
    assert capsys.readouterr() == ("", "")


def test_make_observer_picks_by_terminal() -> None:
    assert isinstance(make_observer(quiet=True), QuietProgress)
    tty = Console(force_terminal=True, file=io.StringIO())
    assert isinstance(make_observer(quiet=False, console=tty), LiveDashboard)
    pipe = io.StringIO()
    plain = make_observer(quiet=False, console=Console(file=pipe))
    assert isinstance(plain, PlainProgress) and plain.stream is pipe


def test_chart_puts_lower_error_lower() -> None:
    edges = np.array([100, 200, 300, 400])
    high = Series("high", edges, np.array([0.3, 0.2, 0.1, 0.05]))
    low = Series("low", edges, np.array([0.03, 0.02, 0.01, 0.005]))
    grid = chart_grid([high, low], width=40, height=12)
    rows_high, rows_low = grid.rows_of(0), grid.rows_of(1)
    assert rows_high and rows_low
    assert np.mean(rows_low) > np.mean(rows_high)  # row 0 is the top
    # A falling error falls on screen, column after column.
    assert all(b >= a for a, b in zip(rows_low, rows_low[1:], strict=False))


def test_chart_floors_zero_and_skips_nan() -> None:
    edges = np.array([100, 200, 300])
    grid = chart_grid([Series("z", edges, np.array([0.1, 0.0, float("nan")]))], 30, 8)
    rows = grid.rows_of(0)
    assert grid.clamped and max(rows) == 7  # the zero sits on the bottom row...
    assert rows[0] < 7  # ...below the positive error
    text = render_chart([Series("z", edges, np.array([0.0, 0.0, 0.0]))], 30, 8).plain
    assert "labels (edges)" in text and "z" in text
    assert render_chart([], 30, 8).plain  # no series at all


def test_dashboard_shows_money_and_time_only_when_they_differ_from_labels() -> None:
    """Arm 0 pays 1 per label, arm 1 pays 2 and waits 3 time units per label: money and time
    to target appear beside labels once arm 1 has finished, not before."""
    sc = scenario(2, replicates=1)
    console = recording_console(160)
    dash = LiveDashboard(console)
    dash.start(sc.outline, None)

    def priced(arm: int, price: float, step: float) -> UnitResult:
        return UnitResult(0, arm, tuple(
            CurveRow(e, x, 0.1, step * e, money=price * e, arm=f"arm-{arm}", replicate=0)
            for e, x in zip(EDGES, errors(arm), strict=True)), 0.0)

    dash.unit_done(priced(0, 1.0, 1.0), 1, 2)
    console.print(dash.render())
    assert "money→" not in console.export_text() and "time→" not in console.export_text()
    dash.unit_done(priced(1, 2.0, 3.0), 2, 2)
    dash.stop(interrupted=False)
    console.print(dash.render())
    text = console.export_text().split("labels done")[-1]
    for header in ("money→5%", "money→1%", "time→5%", "time→1%"):
        assert header in text
    reach = next(e for e, x in zip(EDGES, errors(1), strict=True) if x <= 0.05)
    row = next(line for line in text.splitlines() if "arm-1" in line)
    cells = row.split()
    assert fmt_axis(2 * reach) in cells and fmt_axis(3 * reach) in cells, row


def still_frame(dash: LiveDashboard, console: Console, last: bool = False) -> str:
    """The dashboard's frame as text (the ``last`` one, left on screen, or one while it
    runs), with the elapsed time and ETAs of a study that took no time (so the frame is the
    same on every machine)."""
    assert dash.state is not None
    dash.stop(interrupted=False)
    dash.stopped = last
    dash.state.started = dash.state.ended = 0.0
    dash._update_bars()
    console.export_text(clear=True)
    console.print(dash.render())
    return console.export_text(clear=True)


def test_frame_without_cost_axes_is_the_one_before_money_and_time_charts() -> None:
    """The frame of a market whose money is its labels and whose arms take the same time, as
    the dashboard drew it before it had money and time charts (the snapshot was rendered by
    that code), whatever the rotation step and however wide the terminal."""
    snapshot = (Path(__file__).parents[1] / "snapshots" / "dashboard_no_cost_axes.txt").read_text(
        encoding="utf-8")
    clock = [0.0]
    for width in (120, 200):
        sc = scenario(2)
        console = Console(record=True, width=width, height=40, force_terminal=True,
                          file=io.StringIO())
        dash = LiveDashboard(console, clock=lambda: clock[0])
        dash.start(sc.outline, "reports/dash-test/run")
        feed(dash, sc)
        frames = set()
        for clock[0] in (0.0, 6.0, 11.0):
            frames.add(still_frame(dash, console))
        assert len(frames) == 1
        frame = frames.pop()
        assert "vs money" not in frame and "vs simulated time" not in frame
        if width == 120:
            assert frame == snapshot


def priced_study(width: int, clock: list[float]) -> tuple[LiveDashboard, Console]:
    """Two arms: arm 0 pays 1 per label and takes 1 time unit per label, arm 1 pays 2 and
    waits 3 (it declines workers); one replicate of each has finished, and a unit of arm 0 is
    running at 1.5 time units per label."""
    sc = scenario(2, replicates=2)
    console = Console(record=True, width=width, height=40, force_terminal=True,
                      file=io.StringIO())
    # No refresh thread: a frame it drew at the previous clock could land between the test's
    # own print and its read of the console (seen under load).
    dash = LiveDashboard(console, clock=lambda: clock[0], auto_refresh=False)
    dash.start(sc.outline, None)
    for arm, price, step in ((0, 1.0, 1.0), (1, 2.0, 3.0)):
        dash.unit_done(UnitResult(0, arm, tuple(
            CurveRow(e, x, 0.1, step * e, money=price * e, arm=f"arm-{arm}", replicate=0)
            for e, x in zip(EDGES, errors(arm), strict=True)), 0.0), arm + 1, 4)
    for e, x in zip(EDGES[:5], errors(0, 9)[:5], strict=True):
        dash.refresh(1, 0, CurvePoint(e, x, 0.1, 1.5 * e, money=float(e)))
    return dash, console


def x_ticks(frame: str, title: str) -> list[str]:
    """The x tick labels under the chart titled ``… vs <title>`` (charts may stand side by
    side): the axis corner ``└`` sits under the title's first character."""
    lines = frame.splitlines()
    top = next(i for i, line in enumerate(lines) if title in line)
    col = lines[top].index("error (log scale) " + title)
    axis = next(i for i in range(top, len(lines)) if lines[i][col:col + 1] == "└")
    end = lines[axis].find("└", col + 1)
    return lines[axis + 1][col - 1:end - 1 if end > 0 else None].split()


def test_wide_dashboard_draws_error_against_money_and_time_beside_labels() -> None:
    """At 160 columns the three charts stand side by side; the time axis runs from 0 to the
    slowest arm's simulated time (3 per label × 600 labels) and the money axis to its money."""
    dash, console = priced_study(160, [0.0])
    frame = still_frame(dash, console)
    for title in ("vs labels spent", "vs money spent", "vs simulated time"):
        assert frame.count(title) == 1, title
    assert x_ticks(frame, "vs simulated time") == ["0", "900", fmt_axis(3.0 * BUDGET)]
    assert x_ticks(frame, "vs money spent") == ["0", "600", fmt_axis(2.0 * BUDGET)]
    assert x_ticks(frame, "vs labels spent") == ["120", "360", "600"]
    assert "simulated time" in frame.split("vs simulated time")[1]  # the x axis title
    assert frame.count("● arm-0  ■ arm-1") == 1  # one legend for all charts


def test_time_chart_draws_running_units_simulated_times() -> None:
    """Arm 1 waits 2 time units per label (time is a cost axis, money is not); its running
    second replicate waits 5 per label, so the time axis reaches that unit's latest time."""
    sc = scenario(2, replicates=2)
    console = recording_console(160)
    dash = LiveDashboard(console)
    dash.start(sc.outline, None)
    for arm, step in ((0, 1.0), (1, 2.0)):
        dash.unit_done(UnitResult(0, arm, tuple(
            CurveRow(e, x, 0.1, step * e, money=float(e), arm=f"arm-{arm}", replicate=0)
            for e, x in zip(EDGES, errors(arm), strict=True)), 0.0), arm + 1, 4)
    frame = still_frame(dash, console)
    assert "vs money spent" not in frame  # money = labels here
    assert x_ticks(frame, "vs simulated time") == ["0", "600", fmt_axis(2.0 * BUDGET)]
    running = EDGES[:5]
    for e, x in zip(running, errors(1, 1)[:5], strict=True):
        dash.refresh(1, 1, CurvePoint(e, x, 0.1, 5.0 * e, money=float(e)))
    frame = still_frame(dash, console)
    assert "■ arm-1 (live)" not in frame  # live points are drawn, the legend is per arm
    assert x_ticks(frame, "vs simulated time")[-1] == fmt_axis(5.0 * running[-1])


def test_charts_rotate_where_they_do_not_fit_side_by_side() -> None:
    """120 columns: labels on the left, money then time on the right, 5 s each. 80 columns:
    one chart rotating through labels, money and time. 60 columns: labels alone. The last
    frame shows the first step of the rotation."""
    clock = [0.0]
    dash, console = priced_study(120, clock)
    seen = []
    for clock[0] in (1.0, 6.0, 11.0):
        dash.stopped = False
        console.export_text(clear=True)
        console.print(dash.render())
        frame = console.export_text(clear=True)
        seen.append(("vs labels spent" in frame, "vs money spent" in frame,
                     "vs simulated time" in frame))
    assert seen == [(True, True, False), (True, False, True), (True, True, False)]
    for width, expected in ((80, [(True, False, False), (False, True, False),
                                  (False, False, True)]), (60, [(True, False, False)] * 3)):
        clock[0] = 0.0
        dash, console = priced_study(width, clock)
        seen = []
        for clock[0] in (1.0, 6.0, 11.0):
            console.print(dash.render())
            frame = console.export_text(clear=True)
            seen.append(("vs labels spent" in frame, "vs money spent" in frame,
                         "vs simulated time" in frame))
        assert seen == expected, width
        clock[0] = 6.0
        assert "vs labels spent" in still_frame(dash, console, last=True)


@pytest.mark.parametrize("path", ["scenarios/prices.toml", "scenarios/gold_and_blocking.toml"])
@pytest.mark.parametrize("width", [80, 100, 120])
def test_money_and_time_columns_are_dropped_whole_never_cut(path: str, width: int) -> None:
    """A priced study at 80, 100 and 120 columns (120 is the README's frame): no header, name
    or value ends in an ellipsis; the table fits the terminal; every arm's full name, error
    interval and edges to 5 % are there, and the columns shown carry their whole numbers
    (money and time to 5 % from 100 columns on)."""
    from marketsim.scenario.parser import load_scenario

    sc = load_scenario(Path(__file__).parents[2] / path)
    console = Console(record=True, width=width, height=40, force_terminal=True,
                      file=io.StringIO())
    dash = LiveDashboard(console, clock=lambda: 0.0)
    dash.start(sc.outline, None)
    edges = list(range(100, 30001, 200))
    for arm in range(len(sc.arms)):
        for r in range(2):
            dash.unit_done(UnitResult(r, arm, tuple(
                CurveRow(e, 0.3 * math.exp(-e / 3000 / (arm + 1)), 0.1, 13.1 * (arm + 1) * e,
                         money=0.37 * (arm + 1) * e, arm=sc.arms[arm].name, replicate=r)
                for e in edges), 0.0), 1, 4)
    frame = still_frame(dash, console, last=True)
    assert "…" not in frame, frame
    table = frame.split("\narm ")[1].split("error (log scale)")[0]
    head = "arm " + table.splitlines()[0]
    assert max(len(line) for line in table.splitlines()) <= width
    assert "error [95% CI]" in head and "edges→5%" in head
    if width >= 100:
        assert "money→5%" in head and "time→5%" in head
    for arm, view in enumerate(sc.arms):
        row = next(line for line in table.splitlines() if view.name in line)
        reach = next(e for e in edges if 0.3 * math.exp(-e / 3000 / (arm + 1)) <= 0.05)
        assert f"{reach:,}" in row.split(), row
        if width >= 100:
            assert fmt_axis(0.37 * (arm + 1) * reach) in row.split(), row
            assert fmt_axis(13.1 * (arm + 1) * reach) in row.split(), row


def test_dashboard_table_uses_the_scenarios_report_targets() -> None:
    """``[report] targets = [0.2, 0.1]``: the table's columns are labels to 20 % and 10 %, the
    figures report.md will give, not the standard 5 % and 1 %."""
    base = scenario(1)
    sc = parse_scenario({
        "scenario": {"name": "dash test", "replicates": 3}, "tasks": {"count": 120},
        "workers": {"count": 8}, "budget": {"edges": BUDGET, "batch": 40},
        "report": {"targets": [0.1, 0.2]},
        "arms": [{"name": a.name, "policy": "uniform"} for a in base.arms]})
    console = recording_console()
    dash = LiveDashboard(console, refresh_per_second=20)
    dash.start(sc.outline, "reports/dash-test/run")
    feed(dash, sc)
    dash.stop(interrupted=False)
    console.print(dash.render())
    text = console.export_text()
    assert "edges→20%" in text and "edges→10%" in text
    assert "edges→5%" not in text and "edges→1%" not in text
    row = next(line for line in text.splitlines() if "arm-0" in line and "/3" in line)
    # arm 0's error 0.3·exp(-(e - 120)/60) is at most 20 % from 160 labels, 10 % from 200
    assert row.split()[-2:] == ["160", "200"]
