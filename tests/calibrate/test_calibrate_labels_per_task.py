"""The twin's "as collected" arm gives the tasks the real file's labels per task: a file with
uneven labels per task (half the tasks 3, half 7) gives a twin whose labels per task have the
same mean, spread and range, and calibrate's fit table and ``.fit.json`` show both."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit

from marketsim.aggregation.confusion_fit import counted_confusion, fit_confusion_world
from marketsim.aggregation.crowd_stats import crowd_stats
from marketsim.cli import main
from marketsim.cli.twin_fit import fit_rows, spread_record
from marketsim.scenario.calibration import Calibration, check_text, labels_per_task
from marketsim.scenario.calibration_text import calibrated_text
from marketsim.study.design_sampler import collected_labels, design_world
from marketsim.study.twin import simulated_labels
from tests.calibrate._crowd_files import write_crowd

N_TASKS, N_WORKERS = 200, 12


def uneven_crowd(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Tasks, workers, labels and truth of 12 one-coin workers: even tasks 3 labels, odd 7."""
    rng = np.random.default_rng(seed)
    alpha = np.linspace(0.2, 3.0, N_WORKERS)
    truth = rng.integers(0, 2, N_TASKS)
    per_task = np.where(np.arange(N_TASKS) % 2 == 0, 3, 7)
    order = np.argsort(rng.gumbel(size=(N_TASKS, N_WORKERS)), axis=1)
    tasks = np.repeat(np.arange(N_TASKS), per_task)
    workers = order[np.arange(N_WORKERS)[None, :] < per_task[:, None]]  # row by row
    right = rng.random(tasks.size) < expit(alpha[workers])
    return tasks, workers, np.where(right, truth[tasks], 1 - truth[tasks]), truth


def test_labels_per_task_counts_each_number_of_labels() -> None:
    tasks, *_ = uneven_crowd()
    assert labels_per_task(tasks, N_TASKS) == ((3, 100), (7, 100))
    assert labels_per_task(np.array([0, 0, 2, 1, 1, 1]), 3) == ((1, 1), (2, 1), (3, 1))


def test_the_twin_as_collected_gives_the_files_labels_per_task() -> None:
    tasks, workers, labels, truth = uneven_crowd()
    weights = np.eye(2)[truth]
    start = counted_confusion(tasks, workers, labels, weights, N_WORKERS)
    fit = fit_confusion_world(tasks, workers, labels, weights, N_WORKERS, start, coins=True,
                              lookalike=False, difficulty=False)
    cal = Calibration("uneven", N_TASKS, 2, int(tasks.size), np.array([0.5, 0.5]),
                      np.bincount(workers, minlength=N_WORKERS),
                      (fit,), "the truth file", labels_per_task(tasks, N_TASKS), deck=True)
    text = calibrated_text(cal, "python -m marketsim calibrate crowd.csv")
    assert "100 task(s) get 3, 100 task(s) get 7" in text
    arm = tomllib.loads(text)["arms"][0]
    assert arm["policy"] == {"name": "fixed-overlap", "overlaps": [[3, 100], [7, 100]]}
    scenario = check_text(text, "twin.toml")
    real = crowd_stats(tasks, workers, labels, truth, N_TASKS, N_WORKERS, 2)
    for replicate in range(2):
        sim, sim_truth, error, _ = simulated_labels(scenario, replicate, times=False)
        twin = crowd_stats(sim.tasks, sim.workers, sim.labels, sim_truth, N_TASKS,
                           N_WORKERS, 2)
        assert sorted(twin.labels_per_task.tolist()) == sorted(real.labels_per_task.tolist())
        # arrivals from a deck of the file's labels: in the design sampler (which draws the
        # twin's curve) every worker gives exactly theirs; in the market within the few cards
        # spent by arrivals who had labelled every task still open in the round
        sampled = collected_labels(scenario, design_world(scenario, replicate), replicate)
        assert sampled is not None
        assert np.bincount(sampled.workers, minlength=N_WORKERS).tolist() == \
            real.labels_per_worker.tolist()
        assert np.abs(twin.labels_per_worker - real.labels_per_worker).max() <= 2
        record = spread_record(real, twin)
        assert record["simulated"] == record["real"] == {"mean": 5.0, "sd": 2.0, "min": 3.0,
                                                        "max": 7.0}
        row = {r.statistic: r for r in fit_rows(real, twin, 0.05, error)}["labels per task"]
        assert row.real == row.simulated == "5.00 (sd 2.00, 3-7)"


@pytest.mark.slow
def test_calibrate_of_an_uneven_file_shows_the_labels_per_task_real_and_simulated(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """End to end (two minutes on a loaded machine; the test above covers it by default)."""
    tasks, workers, labels, truth = uneven_crowd()
    crowd, gold = write_crowd(tmp_path, tasks, workers, labels, truth)
    out = tmp_path / "twin.toml"
    assert main(["calibrate", str(crowd), "--truth", str(gold), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    row = next(line for line in printed.splitlines() if line.startswith("labels per task"))
    assert row.split()[-8:] == ["5.00", "(sd", "2.00,", "3-7)", "5.00", "(sd", "2.00,", "3-7)"]
    fit = json.loads(out.with_suffix(".fit.json").read_text())
    assert fit["labels_per_task"]["real"] == fit["labels_per_task"]["simulated"]
