"""A sweep's results as one table: one row per (grid point, arm) with the swept values as
columns, the final error and labels-to-target with their interval; the plot's error bars."""

from __future__ import annotations

import csv
from pathlib import Path

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
    assert main(["run", str(tmp / "s.toml"), "--out", str(tmp / "run"), "--quiet"]) == 0
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
    out = {"point": "p", "k": x, "arm": arm, "replicates": 3, "final_error_rate": 0.1}
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


def test_sweep_figure_draws_each_interval_as_a_bar_in_the_arm_colour() -> None:
    rows = [row(1000.0, 800.0, 1200.0, 3, "a", 1), row(1500.0, 1400.0, 1600.0, 3, "a", 10),
            row(700.0, None, None, 1, "b", 1), row(None, None, None, 2, "b", 10)]
    fig = sweep_figure(["k"], rows)
    ax = fig.get_axes()[0]
    (bars,) = ax.collections  # one set of bars: arm a's (arm b has no interval)
    segments = bars.get_segments()
    assert sorted((float(s[0][1]), float(s[1][1])) for s in segments) == [
        (800.0, 1200.0), (1400.0, 1600.0)]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines["a"].get_ydata()) == [1000.0, 1500.0]
    assert list(lines["b"].get_ydata()) == [700.0]  # not every replicate reached at k = 10
    assert "95 % interval" in ax.get_ylabel()
