"""Issue #28's acceptance for ``marketsim calibrate`` on the reference data: the twin's "as
collected" arm, 10 replicates (the scenario's own seed and streams, as ``marketsim run``
draws them), has a mean final Dawid–Skene error within ±1.5 points of Dawid–Skene on RTE's
real labels (7.25 %) and within ±3 points on Bluebird's (10.19 %). Slow; skipped, with the
reason, where the data sets are absent."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from marketsim.aggregation.registry import make_estimator
from marketsim.cli import main
from marketsim.data.datasets import data_root, dataset_paths
from marketsim.data.load import load_labels
from marketsim.scenario.parser import load_scenario
from marketsim.study.twin import simulated_labels

DATA = data_root()


@pytest.mark.slow
@pytest.mark.skipif(DATA is None, reason="reference data (../shared/data or $MARKETSIM_DATA) "
                    "absent")
@pytest.mark.parametrize(("dataset", "tolerance"), [("rte", 0.015), ("bluebird", 0.03)])
def test_the_twin_as_collected_reproduces_the_real_error(dataset: str, tolerance: float,
                                                         tmp_path: Path) -> None:
    crowd, truth_file = dataset_paths(dataset, str(DATA))
    data, truth = load_labels(crowd, truth_file, "zhang")
    assert truth is not None
    real = float(np.mean(np.asarray(make_estimator("ds").fit(data).labels_) != truth))
    out = tmp_path / f"{dataset}.toml"
    assert main(["calibrate", "--dataset", dataset, "--data-dir", str(DATA),
                 "--out", str(out)]) == 0
    scenario = load_scenario(out)
    assert scenario.replicates == 10 and scenario.arms[0].name == "as collected"
    errors = [simulated_labels(scenario, replicate=r, arm=0)[2] for r in range(10)]
    assert abs(np.mean(errors) - real) <= tolerance, (np.mean(errors), real, errors)


@pytest.mark.slow
@pytest.mark.skipif(DATA is None, reason="reference data (../shared/data or $MARKETSIM_DATA) "
                    "absent")
@pytest.mark.parametrize("dataset", ["rte", "dog"])
def test_the_twin_follows_the_real_design_curve(dataset: str, tmp_path: Path) -> None:
    """Issue #40's acceptance on ``calibrate``'s own comparison (its real draws, the chosen
    twin on its final replicates): majority vote and Dawid–Skene within ±1.5 points of the
    real curve at 3 and 5 labels per task and as collected. RTE's Dawid–Skene at 3 labels was
    2.6 points too pessimistic until the per-worker look-alike worlds had their ambiguous
    share fitted (issue #40's seventh session)."""
    out = tmp_path / f"{dataset}.toml"
    assert main(["calibrate", "--dataset", dataset, "--data-dir", str(DATA),
                 "--out", str(out)]) == 0
    curve = json.loads(out.with_suffix(".fit.json").read_text())["design_curve"]
    points = [curve["labels_per_task"].index(k) for k in ("3", "5", "full")]
    for method in ("majority_vote_error", "dawid_skene_error"):
        real = np.asarray(curve["real"][method])[points]
        twin = np.asarray(curve["twin"][method])[points]
        assert np.abs(twin - real).max() <= 0.015, (dataset, method, real, twin)
