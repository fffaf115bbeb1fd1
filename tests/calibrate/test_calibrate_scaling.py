"""How many draws and replicates ``calibrate`` spends on a file (issue #40, point 6): as
many as the design curve's judge can use. A point's noise has a floor
(``curve_choice.NOISE_FLOOR``), so once the standard error of a mean error rate over the
file's tasks is below it more runs change no ``z``: a large file spends fewer, and a file
smaller than RTE's 800 tasks more, so that its points are as precise as RTE's. And
``--jobs`` changes how fast the fits come, never what they are."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from marketsim.aggregation.curve_choice import (
    MAX_RUNS_SCALE,
    MIN_RUNS,
    NOISE_FLOOR,
    REFERENCE_TASKS,
    curve_draws,
    replay_runs,
    runs_for,
)
from marketsim.aggregation.curve_difficulty import DRAWS as DIFFICULTY_DRAWS
from marketsim.aggregation.curve_difficulty import REPLICATES as DIFFICULTY_REPLICATES
from marketsim.aggregation.design_curve import DRAWS
from marketsim.aggregation.task_types import type_candidates
from marketsim.study.backends import process_map
from marketsim.study.twin_curve import CURVE_REPLICATES, FINAL_REPLICATES, curve_replicates


def test_a_file_of_rtes_size_or_larger_keeps_its_draws_and_replicates() -> None:
    for tasks in (800, 807, 2_665, 6_250):  # RTE, Dog, Web, the largest that keeps them
        assert curve_draws(np.ones(tasks, dtype=bool)) == DRAWS == 10
        assert curve_replicates(tasks) == (CURVE_REPLICATES, FINAL_REPLICATES) == (3, 10)
        assert runs_for(tasks, DIFFICULTY_REPLICATES) == DIFFICULTY_REPLICATES


def test_a_small_files_points_are_as_precise_as_rtes() -> None:
    # Bluebird's 108 tasks: 10 draws and 3 / 10 replicates left 2.8 points of noise a point
    for tasks in (108, 300, 584):
        draws = curve_draws(np.ones(tasks, dtype=bool))
        first, final = curve_replicates(tasks)
        for runs, default in ((draws, DRAWS), (first, CURVE_REPLICATES),
                              (final, FINAL_REPLICATES)):
            assert tasks * runs >= REFERENCE_TASKS * default  # as many task-runs as RTE's
            assert tasks * (runs - 1) < REFERENCE_TASKS * default  # and no more
    assert curve_replicates(108) == (23, 75)
    # a tiny file is judged on at most ten times the default, not on thousands of runs
    assert curve_replicates(5) == (MAX_RUNS_SCALE * CURVE_REPLICATES,
                                   MAX_RUNS_SCALE * FINAL_REPLICATES)


def test_a_large_files_runs_are_the_fewest_whose_standard_error_is_within_the_floor() -> None:
    for tasks in (7_000, 10_000, 20_000):
        runs = runs_for(tasks, DRAWS)
        assert MIN_RUNS < runs < DRAWS
        assert np.sqrt(0.25 / (tasks * runs)) <= NOISE_FLOOR  # enough
        assert np.sqrt(0.25 / (tasks * (runs - 1))) > NOISE_FLOOR  # and no more
    assert curve_draws(np.zeros(100_000, dtype=bool)) == MIN_RUNS == 2  # no truth: every task
    assert curve_replicates(1_000_000) == (MIN_RUNS, MIN_RUNS)


def test_the_judged_tasks_set_the_draws_not_the_file_size() -> None:
    known = np.zeros(100_000, dtype=bool)
    known[:900] = True  # a truth for 900 tasks: the real curve's errors are over those
    assert curve_draws(known) == DRAWS
    known[:] = True
    assert curve_draws(known) < DRAWS


def test_a_replay_draws_k_labels_once_a_replicate_where_replicates_reach_the_floor() -> None:
    # Web's 2,665 judged tasks keep 3 replicates of 2 draws; 51,000 tasks (a 1,000,000-label
    # file of 20 labels a task) are within the floor on 2 replicates of one draw each
    assert replay_runs(2_665, DIFFICULTY_REPLICATES, DIFFICULTY_DRAWS) == (3, 2)
    assert replay_runs(20_000, DIFFICULTY_REPLICATES, DIFFICULTY_DRAWS) == (3, 2)
    for tasks in (31_250, 51_000, 100_000):
        reps, draws = replay_runs(tasks, DIFFICULTY_REPLICATES, DIFFICULTY_DRAWS)
        assert (reps, draws) == (MIN_RUNS, 1)
        assert np.sqrt(0.25 / (tasks * reps * draws)) <= NOISE_FLOOR + 1e-12


def test_a_default_of_fewer_runs_than_the_minimum_is_kept() -> None:
    assert runs_for(100_000, 1) == 1


def crowd(seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    tasks = np.repeat(np.arange(60), 5)
    workers = np.concatenate([rng.choice(12, 5, replace=False) for _ in range(60)])
    truth = rng.integers(0, 2, 60)
    labels = np.where(rng.random(300) < 0.75, truth[tasks], 1 - truth[tasks])
    return tasks, workers, labels, np.eye(2)[truth]


def backwards(function: Callable[..., Any], arguments: list[tuple[Any, ...]]
              ) -> Iterator[Any]:
    """A mapper that runs the calls last first (as processes may finish them), in order."""
    return iter([function(*args) for args in arguments[::-1]][::-1])


def test_mixtures_fitted_in_another_order_are_the_same_bits() -> None:
    tasks, workers, labels, weights = crowd()
    here = type_candidates(tasks, workers, labels, weights, 12, seed=3, counts=(2, 3))
    other = type_candidates(tasks, workers, labels, weights, 12, seed=3, counts=(2, 3),
                            mapper=backwards)
    assert [f.name for f in other] == [f.name for f in here]
    for a, b in zip(here, other, strict=True):
        assert a.matrices.tobytes() == b.matrices.tobytes() and a.bic == b.bic


@pytest.mark.slow
def test_mixtures_fitted_in_two_processes_are_the_same_bits_as_here() -> None:
    tasks, workers, labels, weights = crowd()
    here = type_candidates(tasks, workers, labels, weights, 12, seed=3, counts=(2,))
    there = type_candidates(tasks, workers, labels, weights, 12, seed=3, counts=(2,),
                            mapper=process_map(2))
    assert [f.name for f in there] == [f.name for f in here]
    for a, b in zip(here, there, strict=True):
        assert a.matrices.tobytes() == b.matrices.tobytes()
        assert a.shares.tobytes() == b.shares.tobytes() and a.bic == b.bic
