"""The number of task types by held-out likelihood (``calibrate --task-types auto``): on a
two-type crowd of many sparse workers, where BIC keeps one matrix per worker, the
cross-validation finds the second type; on a one-type crowd it keeps one; the same seed deals
the same folds and gives the same choice; too few tasks for the folds keep one type and say
why."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.aggregation.confusion_fit import (
    ConfusionFit,
    candidate_worlds,
    world_log_likelihood,
)
from marketsim.aggregation.task_types import mixture_log_likelihood, type_candidates
from marketsim.aggregation.type_selection import (
    FOLDS,
    HeldOut,
    fold_of_tasks,
    select_types,
)

N_TASKS, N_WORKERS, PER_TASK = 800, 100, 5


def crowd(two_types: bool, seed: int = 0
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Tasks, workers, labels and one-hot classes of a binary crowd of 100 workers with 40
    labels each: with two types, even workers are right 97 % on type-0 tasks and guess on
    type-1 tasks, odd workers the other way round (half the tasks of each type); with one,
    everyone is right 73.5 % (the same average) on every task."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, N_TASKS)
    kind = rng.integers(0, 2, N_TASKS)
    tasks = np.repeat(np.arange(N_TASKS), PER_TASK)
    workers = np.argsort(rng.random((N_TASKS, N_WORKERS)), axis=1)[:, :PER_TASK].ravel()
    good = (workers % 2 == 0) == (kind[tasks] == 0)
    right = rng.random(tasks.size) < (np.where(good, 0.97, 0.5) if two_types else 0.735)
    labels = np.where(right, truth[tasks], 1 - truth[tasks])
    return tasks, workers, labels, np.eye(2)[truth]


def bic_one(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
            weights: np.ndarray) -> ConfusionFit:
    return min(candidate_worlds(tasks, workers, labels, weights, N_WORKERS),
               key=lambda f: f.bic)


def selection(two_types: bool, seed: int = 0) -> tuple[HeldOut, float, float]:
    """The cross-validation's outcome, BIC's best one-matrix world and best mixture."""
    tasks, workers, labels, weights = crowd(two_types)
    one = bic_one(tasks, workers, labels, weights)
    mixtures = min(f.bic for f in type_candidates(tasks, workers, labels, weights, N_WORKERS))
    held = select_types(tasks, workers, labels, weights, np.ones(N_TASKS, dtype=bool),
                        weights.mean(axis=0), N_WORKERS, one, seed=seed)
    return held, one.bic, mixtures


@pytest.fixture(scope="module")
def two_types() -> tuple[HeldOut, float, float]:
    return selection(True)


@pytest.mark.slow
def test_two_sparse_types_are_found_where_bic_keeps_one(
        two_types: tuple[HeldOut, float, float]) -> None:
    held, bic_one_matrix, bic_mixture = two_types
    assert bic_one_matrix < bic_mixture  # the case that motivates held-out likelihood
    assert held.chosen == 2, held.note
    assert held.gain > held.standard_error > 0
    assert held.totals[1] == max(held.totals)
    assert len(held.totals) == 4 and np.array(held.per_fold).shape == (4, FOLDS)
    assert np.isclose(sum(held.per_fold[1]) - sum(held.per_fold[0]), held.gain)


@pytest.mark.slow
def test_one_type_crowd_keeps_one_matrix() -> None:
    held, _, _ = selection(False)
    assert held.chosen == 1, held.note
    assert "one type kept" in held.note


@pytest.mark.slow
def test_same_seed_same_choice(two_types: tuple[HeldOut, float, float]) -> None:
    again, _, _ = selection(True)
    assert again == two_types[0]


def test_same_seed_same_folds() -> None:
    assert np.array_equal(fold_of_tasks(50, 5, 3), fold_of_tasks(50, 5, 3))
    folds = fold_of_tasks(52, 5, 3)
    assert sorted(np.bincount(folds)) == [10, 10, 10, 11, 11]
    assert not np.array_equal(folds, fold_of_tasks(52, 5, 4))


def test_fewer_tasks_than_folds_keep_one_type_with_a_note() -> None:
    tasks, workers, labels = np.repeat(np.arange(3), 2), np.tile([0, 1], 3), np.zeros(6, int)
    weights = np.eye(2)[[0, 0, 1]]
    one = bic_one(tasks, workers, labels, weights)
    held = select_types(tasks, workers, labels, weights, np.ones(3, dtype=bool),
                        weights.mean(axis=0), 2, one)
    assert held.chosen == 1 and held.totals == ()
    assert held.note == "3 tasks, fewer than 5 folds: one type kept without cross-validation"


def test_held_out_scores_are_the_fitted_likelihoods_on_the_fitted_labels() -> None:
    """Scored on the labels it was fitted to, each world's held-out score is its own
    log-likelihood (the two scorers compute the model's likelihood, not another)."""
    tasks, workers, labels, weights = crowd(True)
    cut = tasks < 200
    t, w, y, wt = tasks[cut], workers[cut], labels[cut], weights[:200]
    for fit in candidate_worlds(t, w, y, wt, N_WORKERS)[::3]:
        assert np.isclose(world_log_likelihood(fit, t, w, y, wt), fit.log_likelihood)
    mix = type_candidates(t, w, y, wt, N_WORKERS, counts=(2,))[0]
    assert np.isclose(mixture_log_likelihood(mix.matrices, mix.shares, t, w, y, wt),
                      mix.log_likelihood)
