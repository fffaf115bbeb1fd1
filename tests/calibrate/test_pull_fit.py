"""Ambiguous tasks that pull the crowd toward one wrong class (``aggregation/pull_fit``): the EM
finds the share of pulled tasks and how strongly they pull in a crowd drawn with them, finds
none in a crowd without, and the world it writes is a scenario that runs."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.aggregation import _threads
from marketsim.aggregation.confusion_fit import ConfusionFit, answer_matrix
from marketsim.aggregation.curve_choice import COLLECTED_Z, collected_z, curve_distance
from marketsim.aggregation.design_curve import real_curve
from marketsim.aggregation.pull_fit import (
    DRAWS,
    SHORTLIST,
    STRENGTHS,
    as_world,
    crowd_shrunk_pulls,
    fit_pulls,
    pull_worlds,
    scaled_pull,
    sharpened,
    with_own_likelihood,
    world_name,
)
from marketsim.aggregation.world_replay import pairs_curve, world_labels
from marketsim.data.labels import LabelSet
from marketsim.scenario.calibration import world_table
from marketsim.scenario.parser import parse_scenario

#: Three classes: 20 % of class-0 tasks pull toward class 1, 10 % of class 2 toward class 0.
PULL = np.array([[0.8, 0.2, 0.0],
                 [0.0, 1.0, 0.0],
                 [0.1, 0.0, 0.9]])


def crowd(pull: np.ndarray | None, seed: int = 0, n_tasks: int = 500, per_task: int = 8,
          n_workers: int = 30) -> tuple[LabelSet, np.ndarray]:
    """Labels of a crowd of workers right on 85 % of their answers (errors spread evenly),
    with ``pull`` (strength 0.6) or without, on random pairs; and the truth."""
    rng = np.random.default_rng(seed)
    confusion = np.broadcast_to(0.85 * np.eye(3) + 0.075 * (1 - np.eye(3)), (n_workers, 3, 3))
    world = ConfusionFit(confusion.copy(), np.eye(3), 0.0, 0.0, 0, 0.0, "planted",
                         pull=pull, pull_strengths=(0.6,), pull_weights=(1.0,))
    truth = rng.integers(0, 3, n_tasks)
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.argsort(rng.random((n_tasks, n_workers)), axis=1)[:, :per_task].ravel()
    labels = world_labels(world, tasks, workers, truth, rng)
    return LabelSet(tasks, workers, labels, n_tasks, n_workers, 3), truth


def test_the_fit_finds_the_pulled_share_and_its_strength() -> None:
    data, truth = crowd(PULL)
    fit = fit_pulls(data.tasks, data.workers, data.labels, np.eye(3)[truth], data.n_workers)
    share = 1 - np.diag(fit.pull)
    assert abs(share[0] - 0.2) < 0.06 and abs(share[2] - 0.1) < 0.05 and share[1] < 0.03
    assert fit.pull[0, 1] > 0.8 * share[0]  # toward the planted class
    mean_strength = float(np.dot(STRENGTHS, fit.weights))
    assert abs(mean_strength - 0.6) < 0.1
    accuracy = np.einsum("jcc->j", fit.rows) / 3  # the rows without the pulls' errors
    assert abs(float(np.median(accuracy)) - 0.85) < 0.05


def test_a_crowd_without_pulls_gets_next_to_none() -> None:
    """The pulls explain under 2 % of the answers (the planted crowd's: 3 % at 0.6 strength
    on a 10 % share of a class, 6 % on 20 %)."""
    data, truth = crowd(None, seed=1)
    fit = fit_pulls(data.tasks, data.workers, data.labels, np.eye(3)[truth], data.n_workers)
    assert (1 - np.diag(fit.pull)).max() * float(np.dot(STRENGTHS, fit.weights)) < 0.02


def test_scaling_the_share_keeps_probability_rows_and_the_direction() -> None:
    scaled = scaled_pull(PULL, 1.5)
    np.testing.assert_allclose(scaled.sum(axis=1), 1.0)
    np.testing.assert_allclose(1 - np.diag(scaled), [0.3, 0.0, 0.15])
    assert scaled[0, 1] == 0.3 and scaled[2, 0] == 0.15
    assert (1 - np.diag(scaled_pull(PULL, 10.0))).max() <= 0.9 + 1e-12


def test_the_fitted_world_is_a_scenario_that_runs() -> None:
    data, truth = crowd(PULL, n_tasks=150)
    fit = fit_pulls(data.tasks, data.workers, data.labels, np.eye(3)[truth], data.n_workers)
    world = as_world(fit, fit.pull, data.n_labels, "pulled")
    table = world_table(world)
    assert {"pull", "pull_strengths", "pull_weights", "matrices"} <= set(table)
    doc = {"scenario": {"seed": 1}, "tasks": {"count": 150, "classes": 3},
           "workers": {"count": data.n_workers, "model": "confusion", "confusion": table},
           "budget": {"edges": 600}, "arms": [{"name": "u", "policy": "uniform"}]}
    scenario = parse_scenario(doc, "x")
    assert scenario.workers.confusion.pull is not None
    assert abs(sum(scenario.workers.confusion.pull_weights or ()) - 1.0) < 1e-9


def test_sharpening_divides_each_strengths_chance_to_escape_the_pull() -> None:
    np.testing.assert_allclose(sharpened(np.array([0.4, 0.9]), 2.0), [0.7, 0.95])
    np.testing.assert_allclose(sharpened(np.array([0.4, 0.9]), 1.0), [0.4, 0.9])
    fit = fit_pulls(*_fit_input(crowd(PULL, n_tasks=150)))
    world = as_world(fit, fit.pull, 1200, "sharp", sharpen=3.0)
    assert all(0.0 < a < 1.0 for a in world.pull_strengths or ())
    assert min(world.pull_strengths or (0.0,)) > min(STRENGTHS)


def test_rows_shrunk_toward_the_crowds_population_are_not_spread_wider_than_the_crowd(
) -> None:
    """Every worker right on 85 % of their answers, 20 labels each: one label's worth of
    shrinkage leaves each worker's accuracy spread by its few labels' noise; the crowd's fitted
    population (empirical Bayes) takes most of that noise out, and the pulls are still found."""
    data, truth = crowd(PULL, n_tasks=500, per_task=8, n_workers=200)
    args = _fit_input((data, truth))
    loose = fit_pulls(*args)
    shrunk = crowd_shrunk_pulls(*args, loose)
    spread = [float(np.std(np.einsum("jcc->j", f.rows) / 3)) for f in (loose, shrunk)]
    assert spread[1] < 0.5 * spread[0]
    assert shrunk.crowd is not None and world_name(shrunk).startswith("crowd-shrunk")
    assert abs((1 - np.diag(shrunk.pull))[0] - 0.2) < 0.06


def test_the_pull_candidates_reproduce_the_data_as_collected_nearest_first() -> None:
    """``calibrate``'s pull candidates: at most :data:`SHORTLIST`, each within the
    as-collected constraint on the file's pairs (three replicates of the Dawid–Skene error on
    all the labels), nearest the real curve first."""
    data, truth = crowd(PULL, n_tasks=120, per_task=6)
    known = truth >= 0
    real = real_curve(data, truth)
    worlds = pull_worlds(data, np.eye(3)[truth], truth, known, real)
    assert 1 <= len(worlds) <= SHORTLIST
    as_collected = [pairs_curve(w, data, truth, known, (), 3, 1, 0) for w in worlds]
    assert all(abs(collected_z(real, c, data.n_tasks)) <= COLLECTED_Z for c in as_collected)
    distances = [curve_distance(real, pairs_curve(w, data, truth, known, real.ks, 3, DRAWS, 0))
                 for w in worlds]
    assert distances == sorted(distances)


def _fit_input(crowd_and_truth: tuple[LabelSet, np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """``fit_pulls``' arguments for a planted crowd, each task's class its truth."""
    data, truth = crowd_and_truth
    return data.tasks, data.workers, data.labels, np.eye(3)[truth], data.n_workers


def test_each_scaled_world_carries_its_own_likelihood() -> None:
    """The scenario header lists every candidate's log-likelihood and BIC: a world whose share
    is scaled or whose strengths are sharpened is another world, with its own (lower than the
    fit's maximum), not a copy of the unscaled fit's."""
    data, truth = crowd(PULL)
    classes = np.eye(3)[truth]
    fit = fit_pulls(data.tasks, data.workers, data.labels, classes, data.n_workers)
    answers = answer_matrix(data.tasks, data.workers, data.labels, data.n_tasks,
                            data.n_workers, 3)
    fitted = with_own_likelihood(as_world(fit, fit.pull, data.n_labels, "fit"), answers,
                                 classes, data.n_labels)
    assert fitted.log_likelihood == pytest.approx(fit.log_likelihood, rel=1e-4)
    for scale, sharpen in ((1.5, 1.0), (1.0, 2.0), (0.8, 1.5)):
        world = with_own_likelihood(
            as_world(fit, scaled_pull(fit.pull, scale), data.n_labels, "scaled", sharpen),
            answers, classes, data.n_labels)
        assert world.log_likelihood < fitted.log_likelihood - 1.0
        assert world.bic == pytest.approx(-2.0 * world.log_likelihood
                                          + world.n_params * np.log(data.n_labels))


def test_a_fit_split_over_threads_is_the_one_thread_fit_bit_for_bit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a large file's E-step and (worker, answer) sums run on threads (here forced on 4,000
    # labels in blocks of 64 tasks): same seed, same numbers, whatever the cores
    data, truth = crowd(PULL, n_tasks=500)
    args = (data.tasks, data.workers, data.labels, np.eye(3)[truth], data.n_workers)
    monkeypatch.setattr(_threads, "MIN_LABELS", 0)
    monkeypatch.setattr(_threads, "MIN_BLOCK_ROWS", 64)
    with _threads.max_threads(1):
        one = fit_pulls(*args)
    with _threads.max_threads(2):
        two = fit_pulls(*args)
    assert two.iterations == one.iterations
    for a, b in ((one.rows, two.rows), (one.pull, two.pull), (one.weights, two.weights),
                 (one.counts, two.counts)):
        assert np.array_equal(a, b)
    assert one.log_likelihood == two.log_likelihood
