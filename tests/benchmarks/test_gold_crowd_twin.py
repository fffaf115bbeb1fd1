"""benchmarks/gold_crowd_twin.py: a group of a written twin (its arrivals a deck of the file's
labels) is a valid scenario whose workers arrive as often as they labelled that group."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from marketsim.data.labels import LabelSet
from marketsim.scenario.parser import load_scenario
from tests.helpers import benchmark_script

ROOT = Path(__file__).resolve().parents[2]
gold_crowd_twin = benchmark_script("gold_crowd_twin")


def test_a_group_of_a_deck_twin_arrives_by_the_groups_own_labels() -> None:
    twin = load_scenario(ROOT / "scenarios" / "calibrated_rte.toml")
    assert twin.workers.arrivals.order == "deck"  # what calibrate writes since session 32
    rng = np.random.default_rng(0)
    n_tasks, m = 60, twin.workers.count
    tasks = np.repeat(np.arange(n_tasks), 5)
    workers = rng.integers(0, 20, tasks.size)  # only the first 20 workers label anything
    data = LabelSet.from_arrays(tasks, workers, rng.integers(0, 2, tasks.size),
                                n_tasks=n_tasks, n_workers=m, n_classes=2)
    mask = np.arange(n_tasks) < 20
    judged = gold_crowd_twin.group(twin, data, mask, [0.3, 0.7])
    weights = np.asarray(judged.workers.arrivals.weights, dtype=np.float64)
    on = mask[data.tasks]
    counts = np.bincount(data.workers[on], minlength=m)
    assert judged.workers.arrivals.order == "independent"
    assert np.allclose(weights[counts > 0], counts[counts > 0] / counts.sum())
    assert (weights[counts == 0] <= gold_crowd_twin.ABSENT).all()
    assert (judged.tasks.count, judged.budget.edges) == (20, int(on.sum()))
    assert list(judged.tasks.prior) == [0.3, 0.7]


def test_the_judged_groups_own_effects_look_like_its_most_common_class() -> None:
    twin = load_scenario(ROOT / "scenarios" / "calibrated_rte.toml")
    judged = gold_crowd_twin.judged_effects(twin.replace({"tasks.prior": [0.3, 0.7]}), 0.4, 0.8)
    look = np.asarray(judged.workers.confusion.lookalike)
    assert judged.workers.confusion.sigma == 0.4
    assert np.allclose(look, [[0.8, 0.2], [0.0, 1.0]])  # class 1 is the most common
    assert gold_crowd_twin.judged_effects(twin, None, None) is twin
