"""The data's own design curve (``aggregation/design_curve``), the twin chosen on it
(``aggregation/curve_choice``) and a twin's design arm (``study/twin_curve``): the curve of a
crowd whose error is known, the grid, the draws, and the choice and its warning."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from marketsim.aggregation.crowd_stats import crowd_stats
from marketsim.aggregation.curve_choice import (
    COLLECTED_Z,
    OFF_Z,
    choose_on_curve,
    collected_z,
    curve_lines,
    curve_record,
    header_lines,
    off_warnings,
    point_z,
)
from marketsim.aggregation.design_curve import (
    DesignCurve,
    k_grid,
    keep_k_per_task,
    real_curve,
)
from marketsim.data.labels import LabelSet
from marketsim.report.calibration_plot import plot_fit
from marketsim.scenario.parser import scenario_from_dict
from marketsim.study.twin import simulated_labels
from marketsim.study.twin_curve import design_scenario


def one_coin_crowd(p: float = 0.7, n_tasks: int = 300, per_task: int = 9, n_workers: int = 30,
                   seed: int = 0) -> tuple[LabelSet, np.ndarray]:
    """Binary tasks, each labelled by ``per_task`` distinct workers who are right with
    probability ``p``: majority vote's error at k labels is a binomial tail."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_tasks)
    workers = np.argsort(rng.random((n_tasks, n_workers)), axis=1)[:, :per_task].ravel()
    tasks = np.repeat(np.arange(n_tasks), per_task)
    right = rng.random(tasks.size) < p
    labels = np.where(right, truth[tasks], 1 - truth[tasks])
    return LabelSet(tasks, workers, labels, n_tasks, n_workers, 2), truth


def test_k_grid_steps_up_to_the_median_and_stops_below_the_full_data() -> None:
    assert k_grid(np.full(800, 10)) == (1, 2, 3, 5, 7)  # RTE: 10 a task is the full data
    assert k_grid(np.full(108, 39)) == (1, 2, 3, 5, 7, 10, 15, 20, 30)  # Bluebird
    assert k_grid(np.r_[np.full(50, 5), np.full(10, 9)]) == (1, 2, 3, 5)
    assert k_grid(np.array([1, 1, 2])) == (1,)
    assert k_grid(np.array([1, 1, 1])) == ()  # one label a task: only the full data
    assert k_grid(np.array([0, 0])) == ()


def test_keep_k_keeps_k_labels_of_each_task_uniformly_at_random() -> None:
    tasks = np.repeat(np.arange(200), np.tile([2, 6], 100))
    rng = np.random.default_rng(1)
    kept = np.array([keep_k_per_task(tasks, 4, rng) for _ in range(300)])
    per_task = np.array([np.bincount(tasks[m], minlength=200) for m in kept])
    assert (per_task == np.tile([2, 4], 100)).all()  # a task with fewer keeps all of its own
    share = kept.mean(axis=0)[np.repeat(np.tile([False, True], 100), np.tile([2, 6], 100))]
    assert abs(share.mean() - 4 / 6) < 0.01 and np.all(np.abs(share - 4 / 6) < 0.15)


class _Keys:
    """A generator whose ``random`` hands out given keys (ties among them included)."""

    def __init__(self, keys: np.ndarray) -> None:
        self.keys = keys

    def random(self, size: int) -> np.ndarray:
        assert size == self.keys.size
        return self.keys


@pytest.mark.parametrize("top", [50, 70_000, 2 ** 40])
def test_keep_k_keeps_the_labels_lexsort_ranks_first(top: int) -> None:
    """The radix-sorted draw keeps the same labels as ranking each task's labels by
    ``np.lexsort((key, tasks))`` (the draws every shipped curve was made with): task numbers
    past 16 and 32 bits, shuffled labels, ties among the keys broken by position."""
    for seed in range(5):
        rng = np.random.default_rng(seed)
        tasks = rng.integers(0, top, 4000)
        tasks[:2000] = rng.integers(0, min(top, 300), 2000)  # tasks with several labels
        keys = rng.integers(0, 4, tasks.size) / 4.0 if seed % 2 else rng.random(tasks.size)
        for k in (1, 2, 3, 7):
            order = np.lexsort((keys, tasks))
            ordered = tasks[order]
            rank = np.arange(tasks.size) - np.searchsorted(ordered, ordered, side="left")
            expected = np.zeros(tasks.size, dtype=bool)
            expected[order[rank < k]] = True
            kept = keep_k_per_task(tasks, k, _Keys(keys))  # type: ignore[arg-type]
            assert np.array_equal(kept, expected)


def test_majority_vote_curve_of_one_coin_workers_is_the_binomial_tail() -> None:
    data, truth = one_coin_crowd()
    curve = real_curve(data, truth, draws=4, seed=0)
    assert curve.designs == ("1", "2", "3", "5", "7", "full") and curve.against == "truth"
    for k, point in ((1, 0), (3, 2), (5, 3), (9, 5)):
        tail = binom.cdf((k - 1) // 2, k, 0.7)  # most of k labels wrong (k odd)
        # binomial tolerance: four standard errors of a mean over 300 tasks
        assert abs(curve.vote[point] - tail) < 4 * np.sqrt(tail * (1 - tail) / 300), k
    assert curve.vote_se[-1] == 0.0 and curve.vote_se[0] > 0.0  # the full data: one draw
    assert np.all(np.diff(curve.ds[2:]) < 0)  # from 3 labels on, more labels, fewer errors


def test_a_task_nobody_labelled_is_not_judged_even_with_a_truth() -> None:
    """AdultContent2's truth names 1,184 tasks nobody labelled: counted, each was an error of
    every method, and the real curve read 51 % by majority vote where the labelled read 24."""
    data, truth = one_coin_crowd(p=0.8, n_tasks=100, per_task=5)
    wider = LabelSet(data.tasks, data.workers, data.labels, 150, data.n_workers, 2)
    wider_truth = np.concatenate([truth, np.ones(50, dtype=truth.dtype)])
    alone = real_curve(data, truth, draws=3, seed=1)
    assert real_curve(wider, wider_truth, draws=3, seed=1).vote.tolist() == alone.vote.tolist()


def test_without_a_truth_the_curve_is_the_disagreement_with_the_full_data_answer() -> None:
    data, _ = one_coin_crowd(p=0.8, n_tasks=100, per_task=5)
    curve = real_curve(data, None, draws=2)
    assert curve.against == "full-data answer"
    assert curve.vote[-1] == 0.0 and curve.ds[-1] == 0.0
    assert curve.ds[0] > curve.ds[2] > 0.0


def test_same_labels_and_seed_give_the_same_curve() -> None:
    data, truth = one_coin_crowd(n_tasks=100, per_task=4)
    a, b = (real_curve(data, truth, draws=2, seed=5) for _ in range(2))
    assert a.vote.tobytes() == b.vote.tobytes() and a.ds_se.tobytes() == b.ds_se.tobytes()
    assert real_curve(data, truth, draws=2, seed=6).vote.tobytes() != a.vote.tobytes()


def curve(vote: list[float], ds: list[float], se: float, runs: int = 10) -> DesignCurve:
    n = len(vote)
    return DesignCurve((1, 3), np.array(vote), np.full(n, se), np.array(ds), np.full(n, se),
                       runs, "truth")


def test_the_twin_nearest_the_whole_curve_is_chosen_not_the_one_right_as_collected() -> None:
    real = curve([0.30, 0.20, 0.10], [0.30, 0.17, 0.07], 0.005)
    right_at_full = curve([0.34, 0.26, 0.10], [0.34, 0.23, 0.07], 0.005)  # slope too steep
    close_everywhere = curve([0.31, 0.21, 0.11], [0.31, 0.18, 0.08], 0.005)
    choice = choose_on_curve(real, ("steep", "close"), (4, 7),
                             (right_at_full, close_everywhere))
    assert choice.chosen == 7 and choice.twin is close_everywhere
    assert choice.distances[0] > choice.distances[1]
    steep = choose_on_curve(real, ("steep",), (0,), (right_at_full,))
    z = point_z(real, right_at_full)
    assert z.shape == (2, 3) and z[1, 2] == 0.0 and z[1, 0] > OFF_Z
    warnings = off_warnings(steep)
    assert len(warnings) == 4  # both methods at 1 and 3 labels per task, none at full
    assert "Dawid-Skene error at 3 labels per task is 23.00 % against the real 17.00 %" in \
        " ".join(warnings)
    assert off_warnings(choice) == []
    table = "\n".join(curve_lines(steep))
    assert table.count(" !") == 4 and "full" in table


def test_the_choice_is_recorded_for_the_fit_json_and_the_header() -> None:
    real = curve([0.30, 0.20, 0.10], [0.30, 0.17, 0.07], 0.005)
    twin = curve([0.30, 0.25, 0.10], [0.30, 0.17, 0.07], 0.004, runs=3)
    choice = choose_on_curve(real, ("a",), (2,), (twin,))
    record = json.loads(json.dumps(curve_record(choice)))
    assert record["labels_per_task"] == ["1", "3", "full"] and record["world"] == "a"
    assert record["real"]["runs"] == 10 and record["twin"]["runs"] == 3
    assert record["points_off"] == 1 and record["z_majority_vote"][1] > OFF_Z
    assert record["twin"]["dawid_skene_error"] == pytest.approx([0.30, 0.17, 0.07])
    assert "a " in header_lines(choice)[-1]


def test_a_design_arm_gives_exactly_k_labels_to_every_task() -> None:
    """Exactly k per task up to the as-collected arm's 5 (uniform, 200 labels on 40 tasks);
    beyond it each task keeps its own 5, as the real curve's draws keep a task's labels."""
    scenario = scenario_from_dict({
        "scenario": {"name": "tiny", "seed": 3, "replicates": 1},
        "tasks": {"count": 40, "classes": 2},
        "workers": {"count": 12, "model": "one-coin"},
        "budget": {"edges": 200, "batch": 40},
        "arms": [{"name": "as collected", "policy": "uniform"}]})
    for k, expected in ((1, 1), (4, 4), (7, 5)):
        labels, truth, _, _ = simulated_labels(design_scenario(scenario, k))
        assert (np.bincount(labels.tasks, minlength=40) == expected).all() and truth.size == 40


def test_the_fit_plot_gains_a_design_curve_panel(tmp_path: Path) -> None:
    stats = crowd_stats(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([1, 1, 0]),
                        np.array([1, 0]), 2, 2, 2)
    real = curve([0.30, 0.20, 0.10], [0.30, 0.17, 0.07], 0.005)
    choice = choose_on_curve(real, ("a",), (0,), (real,))
    widths = []
    for name, with_curve in (("plain.png", None), ("curve.png", choice)):
        plot_fit(tmp_path / name, stats, stats, "t", with_curve)
        widths.append(struct.unpack(">I", (tmp_path / name).read_bytes()[16:20])[0])
    assert widths[1] == widths[0] * 3 // 2  # a third panel as wide as each of the two


def test_a_twin_off_as_collected_is_not_eligible_however_near_its_slopes() -> None:
    """RTE's h40world2 twin won on the curve's slopes while its Dawid-Skene error as
    collected was 5.51 % against 7.25 %: the as-collected point is a constraint."""
    real = curve([0.30, 0.20, 0.10], [0.30, 0.17, 0.07], 0.005)
    slopes_right = curve([0.30, 0.20, 0.10], [0.30, 0.17, 0.02], 0.005)  # 5 points off
    a_bit_off = curve([0.33, 0.23, 0.11], [0.33, 0.20, 0.075], 0.005)
    choice = choose_on_curve(real, ("slopes", "collected"), (3, 5), (slopes_right, a_bit_off))
    assert choice.distances[0] < choice.distances[1]  # nearer on the sum of z^2 ...
    assert choice.eligible == (False, True) and choice.chosen == 5  # ... but not eligible
    assert abs(choice.collected[0]) > COLLECTED_Z >= abs(choice.collected[1])
    record = json.loads(json.dumps(curve_record(choice)))
    assert [c["eligible"] for c in record["candidates"]] == [False, True]
    assert "not eligible" in header_lines(choice)[-1]
    assert off_warnings(choice) == [line for line in off_warnings(choice)
                                    if "as collected" not in line]
    # none eligible: the one nearest as collected, said loudly
    alone = choose_on_curve(real, ("slopes", "worse"), (3, 5),
                            (slopes_right, curve([0.3, 0.2, 0.1], [0.3, 0.17, 0.15], 0.005)))
    assert alone.chosen == 3 and not any(alone.eligible)
    assert "no candidate world reproduces the Dawid-Skene error as collected" in \
        off_warnings(alone)[-1]


def test_one_draws_spread_is_at_least_the_binomial_spread_of_the_twins_tasks() -> None:
    real = curve([0.3, 0.2, 0.1], [0.3, 0.2, 0.10], 0.0, runs=1)
    lucky = curve([0.3, 0.2, 0.1], [0.3, 0.2, 0.13], 0.0001, runs=3)  # replicates agree
    # alone, three replicates that happen to agree make a 3-point gap look like 15 spreads
    assert collected_z(real, lucky) > 10
    # over 100 tasks an error rate of 13 % spreads sqrt(0.13 * 0.87 / 100) = 3.4 points
    assert collected_z(real, lucky, tasks=100) == pytest.approx(
        0.03 / np.sqrt(0.13 * 0.87 / 100 + 0.0001 ** 2 + 0.002 ** 2), rel=1e-3)
