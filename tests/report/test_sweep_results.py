"""A sweep's results as one table: one row per (grid point, arm) with the swept values as
columns, the final error and labels-to-target with their interval; the plot's error bars."""

from __future__ import annotations

import csv
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from marketsim.cli import main
from marketsim.record.summary import TARGETS
from marketsim.report.sweep import columns, reach_cell, sweep_figure, sweep_frame, sweep_rows

SCENARIO = """
[scenario]
seed = 3
replicates = 3
[tasks]
count = 30
[workers]
count = 8
[workers.ability]
alpha = 9
beta = 1
[budget]
edges = 150
batch = 15
[sweep]
"arms[1].inference.max_iter" = [1, 30]
[[arms]]
name = "uniform"
policy = "uniform"
[[arms]]
name = "entropy-greedy"
policy = "entropy-greedy"
"""


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("sweep")
    (tmp / "s.toml").write_text(SCENARIO)
    assert main(["run", str(tmp / "s.toml"), "--out", str(tmp / "run"), "--quiet",
                 "--no-figures"]) == 0
    return tmp / "run"


def test_sweep_csv_has_a_row_per_point_and_arm_with_intervals(sweep_dir: Path) -> None:
    recs = list(csv.DictReader((sweep_dir / "sweep.csv").read_text().splitlines()))
    assert list(recs[0]) == columns(["arms[1].inference.max_iter"])
    assert [(r["arms[1].inference.max_iter"], r["arm"]) for r in recs] == [
        ("1", "uniform"), ("1", "entropy-greedy"), ("30", "uniform"), ("30", "entropy-greedy")]
    for r in recs:
        assert r["replicates"] == "3"
        for t in TARGETS:
            base = f"edges_to_{t:g}"
            if r[f"{base}_mean"]:  # every replicate reached it: mean inside its interval
                assert float(r[f"{base}_low"]) <= float(r[f"{base}_mean"]) \
                    <= float(r[f"{base}_high"])
                assert r[f"{base}_reached"] == "3"
    # The numbers are the points' own summaries.
    reached = [r for r in recs if r["edges_to_0.05_mean"]]
    assert reached, "the easy market reaches 5 % error"


def test_sweep_rows_reads_a_run_folder_like_the_run_wrote_it(sweep_dir: Path) -> None:
    rows = sweep_rows(sweep_dir)
    recs = list(csv.DictReader((sweep_dir / "sweep.csv").read_text().splitlines()))
    assert len(rows) == len(recs) == 4
    for row, rec in zip(rows, recs, strict=True):
        assert row["arms[1].inference.max_iter"] == int(rec["arms[1].inference.max_iter"])
        for key, value in rec.items():
            assert ("" if row[key] is None else str(row[key])) == value, key
    pd = pytest.importorskip("pandas")
    frame = sweep_frame(sweep_dir)
    assert isinstance(frame, pd.DataFrame) and len(frame) == 4
    assert "edges_to_0.05_high" in frame.columns


def test_sweep_rows_of_a_folder_without_points_is_an_input_error(tmp_path: Path) -> None:
    from marketsim.errors import InputError

    with pytest.raises(InputError, match="no finished sweep point"):
        sweep_rows(tmp_path)


def row(mean: float | None, low: float | None, high: float | None, reached: int,
        arm: str = "a", x: int = 1) -> dict:
    out = {"point": "p", "k": x, "arm": arm, "replicates": 3, "final_error": 0.1}
    for t in TARGETS:
        base = f"edges_to_{t:g}"
        out |= {base: mean, f"{base}_mean": mean, f"{base}_low": low, f"{base}_high": high,
                f"{base}_reached": reached}
    return out


def test_reach_cell_shows_the_interval_or_how_many_reached() -> None:
    assert reach_cell(row(1234.6, 1100.2, 1380.0, 3), 0.05) == "1,235 [1,100, 1,380]"
    assert reach_cell(row(900.0, None, None, 1), 0.05) == "900"
    assert reach_cell(row(None, None, None, 2), 0.05) == "— (2/3 reached)"
    assert reach_cell(row(None, None, None, 0), 0.05) == "—"


def reach_panel(fig: Any, target: str = "5 %") -> Any:
    return [a for a in fig.get_axes() if a.get_title().startswith(f"labels to reach {target}")][0]


def test_sweep_figure_draws_each_interval_as_a_bar_in_the_arm_colour() -> None:
    rows = [row(1000.0, 800.0, 1200.0, 3, "a", 1), row(1500.0, 1400.0, 1600.0, 3, "a", 10),
            row(700.0, None, None, 1, "b", 1), row(None, None, None, 0, "b", 10)]
    fig = sweep_figure(["k"], rows)
    ax = reach_panel(fig)
    (bars,) = ax.collections  # one set of bars: arm a's (arm b has no interval)
    segments = bars.get_segments()
    assert sorted((float(s[0][1]), float(s[1][1])) for s in segments) == [
        (800.0, 1200.0), (1400.0, 1600.0)]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines["a"].get_ydata()) == [1000.0, 1500.0]
    y_b = list(lines["b"].get_ydata())  # no replicate reached at k = 10: a gap, no point
    assert y_b[0] == 700.0 and math.isnan(y_b[1])
    assert "95 % interval" in ax.get_ylabel()


def test_sweep_figure_shows_a_point_some_replicates_missed_hollow_with_the_count() -> None:
    """Lesson 3's batch-400 point: 3 of 4 replicates reached 5 %. The point is drawn (hollow,
    at the mean of the 3) with "3/4" beside it; a grid point none reached breaks the line."""
    rows = [row(600.0, 400.0, 800.0, 4, "a", 20), row(None, None, None, 3, "a", 100),
            row(None, None, None, 0, "a", 400), row(900.0, 800.0, 1000.0, 4, "a", 800)]
    for r in rows:
        r["replicates"] = 4
    rows[1]["edges_to_0.05_mean_of_reached"] = 1266.7
    fig = sweep_figure(["k"], rows)
    ax = reach_panel(fig)
    line = {ln.get_label(): ln for ln in ax.get_lines()}["a"]
    ys = list(line.get_ydata())
    assert ys[:2] == [600.0, 1266.7] and math.isnan(ys[2]) and ys[3] == 900.0
    hollow = [ln for ln in ax.get_lines() if ln.get_label() == "_some replicates"]
    assert len(hollow) == 1 and list(hollow[0].get_ydata()) == [1266.7]
    assert hollow[0].get_markerfacecolor() == "white"
    assert [t.get_text() for t in ax.texts] == ["3/4"]
    assert line.get_markevery() == [0, 3]  # filled markers only where every replicate did


def test_sweep_figure_keeps_a_fraction_on_a_linear_axis() -> None:
    rows = [row(600.0, 400.0, 800.0, 3, "a", x) for x in (0.05, 0.2, 0.5, 0.9)]
    fig = sweep_figure(["k"], rows)
    assert all(ax.get_xscale() == "linear" for ax in fig.get_axes())
    counts = [row(600.0, 400.0, 800.0, 3, "a", x) for x in (10, 100, 1000)]
    assert all(ax.get_xscale() == "log" for ax in sweep_figure(["k"], counts).get_axes())


def test_a_sweep_over_a_list_valued_key_reports_money_and_time(priced_sweep: Path) -> None:
    """Issue #31, defect 2: sweeping the tier prices used to end in "unhashable type: 'list'"
    with a sweep.md linking a plot never written, and sweep.csv had no money or time."""
    run = priced_sweep
    text = (run / "sweep.md").read_text()
    for link in re.findall(r"\]\(([^)]+\.png)\)", text):
        assert (run / link).is_file(), link
    assert "| [1, 1.5] | uniform |" in text and "| [1, 4] | qualified |" in text
    recs = list(csv.DictReader((run / "sweep.csv").read_text().splitlines()))
    assert [r["workers.tiers.prices"] for r in recs] == ["[1, 1.5]"] * 2 + ["[1, 4]"] * 2
    for r in recs:
        assert float(r["final_money"]) > 0 and float(r["final_time"]) > 0
        assert {"money_to_0.05_mean", "time_to_0.05_mean", "diff_money_to_0.05_mean"} <= set(r)
    # the same labels cost more money at the higher price (same worlds at both points)
    money = {(r["workers.tiers.prices"], r["arm"]): float(r["final_money"]) for r in recs}
    assert money[("[1, 4]", "qualified")] > money[("[1, 1.5]", "qualified")]
    fig = sweep_figure(["workers.tiers.prices"], sweep_rows(run), axes=("edges", "money"))
    assert any(ax.get_title().startswith("money to reach") for ax in fig.get_axes())


def test_sweep_md_links_no_plot_when_none_was_drawn(sweep_dir: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep report written with figures on but no matplotlib (the sweep figure cannot
    be drawn): sweep.md links no plot. Written again over a copy of the run folder, as the
    run and the report command write it."""
    from marketsim.report import sweep

    def no_matplotlib(*_args: Any, **_kwargs: Any) -> None:
        raise ImportError("no matplotlib")

    run = tmp_path / "run"
    shutil.copytree(sweep_dir, run)
    monkeypatch.setattr(sweep, "sweep_figure", no_matplotlib)
    sweep.write_sweep_report(run, ["arms[1].inference.max_iter"], sweep.load_points(run))
    text = (run / "sweep.md").read_text()
    assert "| uniform |" in text  # the table was written again
    assert ".png" not in text and not (run / f"{sweep.PLOT_NAME}.png").exists()
