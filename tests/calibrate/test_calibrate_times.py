"""``marketsim calibrate`` on a label file with a time column: the Poisson rate of the labels'
times becomes ``[workers.arrivals] rate`` in the file's unit (hours for ISO-8601 date-times),
the twin's simulated times are in that unit, bursty crowds are called a poor fit, bad times
are one line with exit code 2, and ``infer`` ignores the column."""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from marketsim.cli import main
from marketsim.scenario.parser import load_scenario
from marketsim.study.runner import run_unit

N_TASKS, PER_TASK, N_WORKERS = 200, 5, 20
START = datetime(2024, 5, 1, 8, 0, tzinfo=UTC)


def crowd(tmp_path: Path, gaps: np.ndarray, stamp: str = "iso", column: str = "timestamp",
          seed: int = 0) -> tuple[Path, Path]:
    """A CSV crowd of one-coin workers (1,000 labels, rows in random order of task) whose
    label k came at ``gaps[:k + 1].sum()`` hours (``stamp="iso"``: as UTC date-times; else
    as a number of seconds), and its truth file."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, N_TASKS)
    accuracy = rng.uniform(0.6, 0.95, N_WORKERS)
    tasks = np.repeat(np.arange(N_TASKS), PER_TASK)
    workers = np.argsort(rng.random((N_TASKS, N_WORKERS)), axis=1)[:, :PER_TASK].ravel()
    right = rng.random(tasks.size) < accuracy[workers]
    labels = np.where(right, truth[tasks], 1 - truth[tasks])
    order = rng.permutation(tasks.size)
    hours = np.cumsum(gaps)
    if stamp == "iso":
        when = [(START + timedelta(hours=float(h))).isoformat() for h in hours]
    else:
        when = [f"{3600 * h:.3f}" for h in hours]
    path, gold = tmp_path / "crowd.csv", tmp_path / "truth.csv"
    path.write_text(f"task,worker,label,{column}\n" + "".join(
        f"t{tasks[i]},w{workers[i]},{labels[i]},{w}\n" for i, w in zip(order, when,
                                                                          strict=True)))
    gold.write_text("task,label\n" + "".join(f"t{t},{x}\n" for t, x in enumerate(truth)))
    return path, gold


def test_a_poisson_crowd_s_rate_is_recovered_and_the_twin_runs_in_hours(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # 30 labels an hour; with 999 gaps the fitted rate's standard error is 30/sqrt(999) ~ 0.95
    # (3.2 %): the stated tolerance is 10 %.
    gaps = np.random.default_rng(1).exponential(1 / 30.0, N_TASKS * PER_TASK)
    path, gold = crowd(tmp_path, gaps)
    out = tmp_path / "twin.toml"
    assert main(["calibrate", str(path), "--truth", str(gold), "--out", str(out),
                 "--task-types", "1"]) == 0  # the clock is not the types' (test_calibrate_types)
    printed = capsys.readouterr().out
    doc = tomllib.loads(out.read_text())
    rate = doc["workers"]["arrivals"]["rate"]
    assert abs(rate / 30.0 - 1) < 0.10
    assert rate == pytest.approx(999 / gaps[1:].sum(), rel=1e-6)
    text = out.read_text()
    assert "# time: 1 unit of simulated time = 1 hour of the file (column 'timestamp'" in text
    assert "arrivals: " in printed and "labels per hour" in printed
    assert "gap between labels, coefficient of variation (Poisson: 1)" in printed
    assert "warning" not in printed
    fit = json.loads(out.with_suffix(".fit.json").read_text())["arrivals"]
    assert fit["unit"] == "hour" and fit["kind"] == "date-times" and not fit["poor_fit"]
    assert abs(fit["gap_cv"] - 1) < 0.15 and abs(fit["simulated"]["gap_cv"] - 1) < 0.15
    assert fit["simulated"]["labels_at_time_0"] == N_TASKS  # the one-per-task initial graph
    # the twin's clock is the file's: the 800 labels after the initial round take about
    # 800 / rate hours in the simulation as in the file (arrivals a refused worker wastes make
    # it a little longer)
    sim, real = fit["simulated"]["span"], fit["simulated"]["real_time_after_those"]
    assert 0.85 < sim / real < 1.25
    scenario = load_scenario(out)
    row = run_unit(scenario.with_overrides(replicates=1), 0, 0).rows[-1]
    assert row.edges == N_TASKS * PER_TASK
    assert 0.85 < row.sim_time / (800 / rate) < 1.25


def test_a_bursty_crowd_is_reported_as_a_poor_poisson_fit(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rng = np.random.default_rng(2)
    k = N_TASKS * PER_TASK
    # sessions of 25 labels a minute apart, 8 hours on average between sessions
    gaps = np.where(np.arange(k) % 25 == 0, rng.exponential(8.0, k), rng.exponential(1 / 60, k))
    path, gold = crowd(tmp_path, gaps, stamp="seconds", column="secs")
    out = tmp_path / "bursty.toml"
    assert main(["calibrate", str(path), "--truth", str(gold), "--columns", "time=secs",
                 "--task-types", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    fit = json.loads(out.with_suffix(".fit.json").read_text())["arrivals"]
    assert fit["gap_cv"] > 2 and fit["poor_fit"] and fit["unit"] == "unit"
    assert fit["simulated"]["gap_cv"] < 1.3  # the twin arrives steadily
    assert "warning: the real gaps between labels have coefficient of variation" in printed
    assert "poor" in printed
    text = out.read_text()
    assert "the real crowd is bursty and the Poisson fit is poor" in text
    assert "--columns time=secs" in text.splitlines()[1]
    rate = tomllib.loads(text)["workers"]["arrivals"]["rate"]
    assert rate == pytest.approx((k - 1) / (3600 * gaps[1:].sum()), rel=1e-5)  # per second


@pytest.mark.parametrize(("header", "rows", "extra", "message"), [
    ("task,worker,label,time", "a,w1,1,noon\nb,w1,0,3\n", [],
     "crowd.csv:2: column 'time': time 'noon' is neither a number nor an ISO-8601 date-time"),
    ("task,worker,label,time", "a,w1,1,3\nb,w1,0,\n", [], "crowd.csv:3: column 'time': empty"),
    ("task,worker,label,time", "a,w1,1,3\nb,w1,0,2024-05-01T10:00\n", [],
     "crowd.csv:3: column 'time': time '2024-05-01T10:00' is an ISO-8601 date-time, but"),
    ("task,worker,label,when", "a,w1,1,3\nb,w1,0,NaN\n", ["--columns", "time=when"],
     "crowd.csv:3: column 'when': time 'NaN' is not a finite number"),
    ("task,worker,label,time", "a,w1,1,3\nb,w1,0,-inf\n", [], "is not a finite number"),
    ("task,worker,label,time,created", "a,w1,1,3,4\n", [],
     "columns 'time' and 'created' both give the time; keep one"),
    ("task,worker,label,time", "a,w1,1,3\nb,w1,0,3\n", [],
     "column 'time': every label has the same time"),
    ("task,worker,label,time", "a,w1,1,3\nb,w1,0,4\n", ["--columns", "time=stamp"],
     "--columns time=stamp: no column 'stamp'"),
    ("task,worker,label,time", "a,w1,1,0\nb,w1,0,1e12\n", [],
     "column 'time': 1e-12 labels per unit is outside"),
])
def test_bad_times_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture,
                                           header: str, rows: str, extra: list[str],
                                           message: str) -> None:
    path = tmp_path / "crowd.csv"
    path.write_text(f"{header}\n{rows}")
    out = tmp_path / "o.toml"
    assert main(["calibrate", str(path), *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def test_infer_ignores_a_time_column(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    gaps = np.random.default_rng(5).exponential(0.1, N_TASKS * PER_TASK)
    path, gold = crowd(tmp_path, gaps)
    plain = tmp_path / "plain.csv"
    plain.write_text("".join(",".join(line.split(",")[:3]) + "\n"
                             for line in path.read_text().splitlines()))
    outputs = []
    for f, name in ((path, "timed"), (plain, "plain")):
        pred, workers = tmp_path / f"{name}.pred.csv", tmp_path / f"{name}.workers.csv"
        assert main(["infer", str(f), "--truth", str(gold), "--output", str(pred),
                     "--workers", str(workers), "--json"]) == 0
        record = json.loads(capsys.readouterr().out)
        for key in ("labels_file", "seconds", "load_seconds", "output", "workers_file"):
            record.pop(key, None)
        outputs.append((record, pred.read_bytes(), workers.read_bytes()))
    assert outputs[0] == outputs[1]
    # a bad time is still no concern of infer's
    path.write_text(path.read_text().replace("2024-05-01T", "soon ", 1))
    assert main(["infer", str(path), "--columns", "time=timestamp", "--json"]) == 0
