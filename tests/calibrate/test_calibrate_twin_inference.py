"""The calibrated scenario's "as collected" arm measures what Dawid–Skene on the real labels
measures: the same estimator, class prior re-estimated (not the scenario's true prior, which a
requester does not know and which made ZenCrowd_in's twin 3.6 points too good)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from marketsim.aggregation.estimator import ConvergenceWarning
from marketsim.aggregation.registry import make_estimator
from marketsim.cli import main
from marketsim.scenario.parser import load_scenario
from marketsim.study.twin import simulated_labels
from tests.calibrate._crowd_files import write_crowd


def test_the_as_collected_error_is_dawid_skene_on_the_twins_labels(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    n_tasks, per_task = 300, 3
    truth = (rng.random(n_tasks) < 0.2).astype(int)  # unbalanced, as ZenCrowd's 78/22
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.concatenate([rng.choice(8, per_task, replace=False) for _ in range(n_tasks)])
    right = rng.random(tasks.size) < np.linspace(0.55, 0.9, 8)[workers]
    labels = np.where(right, truth[tasks], 1 - truth[tasks])
    crowd, gold = write_crowd(tmp_path, tasks, workers, labels, truth)
    out = tmp_path / "twin.toml"
    assert main(["calibrate", str(crowd), "--truth", str(gold), "--out", str(out),
                 "--task-types", "1"]) == 0  # the types' choice: test_calibrate_moments
    scenario = load_scenario(out)
    assert all(arm.inference.options.class_prior == "estimate" for arm in scenario.arms)
    sim, sim_truth, error, _ = simulated_labels(scenario)
    with warnings.catch_warnings():  # the market counts them instead (fit_counted)
        warnings.simplefilter("ignore", ConvergenceWarning)
        fresh = make_estimator("ds").fit(sim)
    assert error == np.mean(np.asarray(fresh.labels_) != sim_truth)
