"""Continuous-score runs on disk: the new curve columns round-trip through curves.csv, unit
checkpoints and ``marketsim report``; summaries, report.md, the plot and the dashboard show the
task-mean RMSE as the headline; class runs keep their layout."""

from __future__ import annotations

import io
import json
import math
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from marketsim.cli import main
from marketsim.record.curves import (
    CURVE_COLUMNS,
    EXTRA_COLUMNS,
    CurveRow,
    read_curves,
    write_curves,
)
from marketsim.record.metric import ERROR_RATE, RMSE, metric_of, metric_of_rows
from marketsim.record.summary import build_summary, summarise
from marketsim.record.units import UnitResult
from marketsim.report.dashboard import LiveDashboard
from marketsim.report.progress import PlainProgress
from marketsim.scenario.parser import parse_scenario
from marketsim.study.run_folder import load_units, save_unit
from marketsim.study.runner import run_study

TINY = """
[scenario]
name = "tiny scores"
seed = 3
replicates = 2

[tasks]
count = 60

[workers]
count = 10
model = "gaussian-scores"

[workers.gaussian_scores]
good_fraction = 0.7
sigma = 0.1

[budget]
edges = 300
batch = 60

[[arms]]
name = "uniform + EM"
policy = "uniform"
inference = "gaussian-em"

[[arms]]
name = "uncertainty + hard EM"
policy = "uncertainty"
inference = "gaussian-hard-em"
"""


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``marketsim ARGS`` by :func:`marketsim.cli.main` in this process: exit code and output
    as a finished process's."""
    def command(*args: str) -> subprocess.CompletedProcess[str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["marketsim", *args], code, out, err)

    return command


def score_row(edges: int, rmse: float, plain: float, acc: float, rep: int = 0) -> CurveRow:
    return CurveRow(edges, rmse, 0.2, float(edges), float("nan"), rmse, plain, acc,
                    arm="em", replicate=rep)


def test_new_columns_round_trip_through_curves_csv(tmp_path: Path) -> None:
    rows = [score_row(100, 0.2, 0.25, 0.8), score_row(200, 0.1 / 3, 0.15, 1.0),
            CurveRow(100, 0.1, 0.05, 1.0, 0.02, arm="class", replicate=0)]
    path = tmp_path / "curves.csv"
    write_curves(path, rows)
    header = path.read_text().splitlines()[0].split(",")
    assert header == [*CURVE_COLUMNS, *EXTRA_COLUMNS]
    assert header[:7] == ["arm", "replicate", "edges", "error_rate", "ability_error", "sim_time",
                          "confusion_error"]  # the existing columns keep their place
    back = read_curves(path)
    assert back == rows
    assert back[1].rmse == 0.1 / 3 and math.isnan(back[2].rmse)


def test_old_curves_without_the_new_columns_still_read(tmp_path: Path) -> None:
    path = tmp_path / "curves.csv"
    path.write_text("arm,replicate,edges,error_rate,ability_error,sim_time\nu,0,10,0.5,0.1,0\n")
    (row,) = read_curves(path)
    assert row.error_rate == 0.5 and math.isnan(row.rmse) and math.isnan(row.confusion_error)
    assert metric_of_rows([row]) == "error_rate"


def test_summary_of_score_rows_has_the_score_means() -> None:
    rows = [score_row(100, 0.2, 0.3, 0.8, 0), score_row(100, 0.1, 0.2, 1.0, 1)]
    arm = summarise(rows)["em"]
    assert arm.metric == "rmse" and arm.error == [pytest.approx(0.15)]
    assert arm.rmse == [pytest.approx(0.15)] and arm.plain_rmse == [pytest.approx(0.25)]
    assert arm.good_accuracy == [pytest.approx(0.9)]
    cls = summarise([CurveRow(10, 0.1, 0.1, 0.0, arm="c", replicate=0)])["c"]
    assert cls.metric == "error_rate" and "plain_rmse" not in cls.model_fields_set
    summary = build_summary(name="s", seed=1, replicates=2, arm_names=["em"],
                            results=[UnitResult(r.replicate, 0, (r,), 0.0) for r in rows],
                            seconds=None,
                            complete=False)
    assert metric_of(summary) is RMSE and metric_of(None) is ERROR_RATE


def test_checkpoints_keep_nan_free_json_and_round_trip(tmp_path: Path) -> None:
    sc = parse_scenario({"tasks": {"count": 30}, "workers": {"count": 5},
                         "budget": {"edges": 60, "batch": 30},
                         "arms": [{"name": "c", "policy": "uniform"}]}, "x.toml")
    rows = (CurveRow(30, 0.2, 0.1, 0.0, 0.05, arm="c", replicate=0),
            CurveRow(60, 0.1, 0.1, 1.0, 0.04, arm="c", replicate=0))
    save_unit(tmp_path, sc, UnitResult(0, 0, rows, 1.5))
    text = (tmp_path / "units" / "r000000_a000.json").read_text()
    assert "NaN" not in text and "null" in text
    (unit,) = load_units(tmp_path, sc)
    assert unit.rows == rows


def test_run_and_report_show_rmse_for_a_continuous_market(tmp_path: Path,
        cli: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(TINY)
    run_dir = tmp_path / "run"
    proc = cli(scenario.as_posix(), "--out", run_dir.as_posix(), "--json", "--no-figures")
    assert proc.returncode == 0, proc.stderr
    first = json.loads((run_dir / "summary.json").read_text())
    assert first["metric"] == "rmse"
    for arm in first["arms"].values():
        assert arm["metric"] == "rmse" and arm["error"] == arm["rmse"]
        assert "error_rate" not in arm  # an RMSE is not called an error rate
        assert all(x is not None and x > 0 for x in arm["plain_rmse"])
        assert arm["edges"][-1] == 300
    rows = read_curves(run_dir / "curves.csv")
    assert all(0 < r.rmse == r.error_rate and 0 < r.plain_rmse for r in rows)
    assert all(0 <= r.good_accuracy <= 1 for r in rows)
    # Re-render from curves.csv alone: the same summary (up to the wall-clock time), and the
    # figure the run left out.
    for name in ("summary.json", "report.md"):
        (run_dir / name).unlink()
    proc = cli("report", run_dir.as_posix(), "--quiet")
    assert proc.returncode == 0, proc.stderr
    again = json.loads((run_dir / "summary.json").read_text())
    assert again["arms"] == first["arms"] and again["metric"] == "rmse"
    text = (run_dir / "report.md").read_text()
    for needle in ("## RMSE against labels spent", "## Estimator against the plain mean",
                   "plain-mean RMSE", "Labels needed to reach RMSE 0.05 / 0.01", "gaussian-scores",
                   "70 % of them are good"):
        assert needle in text, needle
    assert "nan" not in text.lower()  # no metric is missing
    assert (run_dir / "error_vs_budget.png").stat().st_size > 1000


def test_dashboard_and_progress_lines_name_the_rmse() -> None:
    sc = parse_scenario(tomllib.loads(TINY), "tiny.toml")
    results = run_study(sc.with_overrides(replicates=1))
    out = io.StringIO()
    plain = PlainProgress(out)
    plain.start(sc.outline, None)
    plain.unit_done(results[0], 1, 2)
    assert "final RMSE 0." in out.getvalue()
    console = Console(record=True, width=120, height=40, force_terminal=True, file=io.StringIO())
    dash = LiveDashboard(console, refresh_per_second=20)
    dash.start(sc.outline, None)
    for i, unit in enumerate(results, start=1):
        dash.unit_done(unit, i, len(results))
    dash.stop(interrupted=False)
    console.print(dash.render())
    text = console.export_text()
    for needle in ("RMSE [95% CI]", "edges→0.05", "RMSE (log scale)"):
        assert needle in text, needle
    assert "edges→5%" not in text


def test_sweep_table_names_the_rmse() -> None:
    from marketsim.report.sweep import sweep_markdown

    rows = [{"point": "points/p000", "workers.count": 10, "arm": "em",
             "final_error": 0.0412, "edges_to_0.05": 1200, "edges_to_0.01": None}]
    text = sweep_markdown(["workers.count"], rows, RMSE)
    assert "| workers.count | arm | final RMSE | labels to 0.05 | labels to 0.01 |" in text
    assert "| 10 | em | 0.0412 | 1,200 | — |" in text
    assert "labels to 5%" in sweep_markdown(["workers.count"], rows)


def test_json_output_names_the_metric(tmp_path: Path,
        cli: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(TINY.replace("replicates = 2", "replicates = 1"))
    proc = cli(scenario.as_posix(), "--out", (tmp_path / "run").as_posix(), "--json",
               "--no-figures")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["metric"] == "rmse"
    assert out["arms"]["uniform + EM"]["error"][-1] < 0.2
