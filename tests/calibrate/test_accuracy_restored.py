"""The per-label accuracy restored in a look-alike world (``aggregation/accuracy_restored``):
a world whose worker matrices keep the errors its look-alikes also explain gives labels less
accurate than the file's (Face's and CF_amt's twins: 5 points, issue #40); restored, its labels
against the classes are the file's, its look-alikes unchanged."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from marketsim.aggregation.accuracy_restored import (
    SUFFIX,
    accuracy_worlds,
    label_table,
    restored_share_worlds,
    with_accuracy_restored,
    world_table,
)
from marketsim.aggregation.ambiguity_share import majority_wrong, pairs_share, scaled_lookalike
from marketsim.aggregation.confusion_fit import ConfusionFit, world_log_likelihood
from marketsim.aggregation.lookalike_follow import and_partly_shared
from marketsim.data.labels import LabelSet
from tests.calibrate._lookalike_crowds import N_WORKERS, lookalike_crowd, lookalike_world

#: Three classes: 30 % of class-0 tasks look like class 1 to every worker, 20 % of class 2 like 1.
LOOKALIKE = np.array([[0.70, 0.30, 0.00],
                      [0.00, 1.00, 0.00],
                      [0.00, 0.20, 0.80]])


def world(right: float) -> ConfusionFit:
    """Workers right on ``right`` of the tasks that look like their class, with
    :data:`LOOKALIKE`; half of them a little better, half a little worse."""
    return lookalike_world(right, LOOKALIKE)


def crowd(true_world: ConfusionFit, seed: int = 0, n_tasks: int = 900, per_task: int = 7
          ) -> tuple[LabelSet, np.ndarray]:
    """Labels of ``true_world`` on random pairs, and the truth as one-hot weights."""
    return lookalike_crowd(true_world, seed, n_tasks, per_task)


def accuracy(table: np.ndarray, weights: np.ndarray) -> float:
    """The share of labels that are right, the classes as often as in ``weights``."""
    return float(weights.mean(axis=0) @ np.diag(table))


def test_the_label_table_is_the_labels_against_the_classes() -> None:
    data = LabelSet(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), np.array([0, 1, 1, 1]),
                    2, 2, 2)
    weights = np.array([[1.0, 0.0], [0.5, 0.5]])  # task 1 half class 0, half class 1
    # class 0: task 0 (a 0 and a 1, weight 1) and task 1 (two 1s, weight 1/2): 1 : 2
    assert np.allclose(label_table(data, weights), [[1 / 3, 2 / 3], [0.0, 1.0]])


def test_a_world_too_inaccurate_gets_the_files_accuracy_back_its_lookalikes_kept() -> None:
    data, weights = crowd(world(0.8))
    real = label_table(data, weights)
    share = np.bincount(data.workers, minlength=N_WORKERS) / data.n_labels
    fitted = world(0.7)  # the matrices keep errors the look-alikes explain: 5+ points off
    fitted = replace(fitted, log_likelihood=world_log_likelihood(
        fitted, data.tasks, data.workers, data.labels, weights))
    assert accuracy(real, weights) - accuracy(world_table(fitted, share), weights) > 0.05
    restored = with_accuracy_restored(fitted, data, weights)
    assert restored is not None and restored.name == fitted.name + SUFFIX
    assert np.allclose(world_table(restored, share), real, atol=1e-6)
    assert np.array_equal(restored.lookalike, LOOKALIKE) and restored.on_curve
    assert np.allclose(restored.confusion.sum(axis=2), 1.0) and restored.confusion.min() > 0
    # each worker keeps their distance from the crowd
    gaps = restored.confusion[0::2] - restored.confusion[1::2]
    assert np.allclose(gaps, fitted.confusion[0::2] - fitted.confusion[1::2])
    # the restored world explains the labels better than the one too inaccurate
    assert restored.log_likelihood > fitted.log_likelihood
    assert restored.n_params == fitted.n_params + 6


def test_only_look_alike_worlds_fitted_by_likelihood_are_restored_alone() -> None:
    data, weights = crowd(world(0.8), n_tasks=90)
    look = world(0.7)
    plain = replace(look, lookalike=np.eye(3), with_lookalike=False, name="crowd-shrunk")
    curve = replace(look, sigma=0.5, with_difficulty=True, on_curve=True)  # sigma on the curve
    shared = replace(look, on_curve=True)  # an ambiguous share: fitted with the restoration
    hard = replace(look, sigma=0.5, with_difficulty=True)  # difficulty by likelihood
    pulled = replace(look, pull=np.eye(3))
    restored = accuracy_worlds((plain, look, curve, shared, hard, pulled), data, weights)
    assert [w.name for w in restored] == [look.name + SUFFIX]
    fits = and_partly_shared((plain, look), data, weights, ((), 0.0, lambda fit: 0.0))
    assert fits[:2] == (plain, look) and len(fits) == 3


def test_the_ambiguous_share_is_fitted_on_the_restored_world() -> None:
    """A crowd whose tasks are more ambiguous than the fitted look-alikes say, and whose
    fitted matrices are too inaccurate: restored alone, the world's errors are too rarely
    shared; its share fitted with the restoration, it has the real share and accuracy."""
    true_world = replace(world(0.85), lookalike=scaled_lookalike(LOOKALIKE, 1.5))
    data, weights = crowd(true_world, n_tasks=1500)
    truth = weights.argmax(axis=1)
    judged = np.ones(data.n_tasks, dtype=bool)
    real = majority_wrong(data, data.labels, truth, judged)
    share_of = pairs_share(data, truth, judged)
    fitted = world(0.7)  # the look-alike mass of the fit, matrices too inaccurate
    alone = with_accuracy_restored(fitted, data, weights)
    assert alone is not None and share_of(alone) < real - 0.02
    (joint,) = restored_share_worlds((fitted,), real, share_of, data, weights)
    share = np.bincount(data.workers, minlength=N_WORKERS) / data.n_labels
    assert share_of(joint) == pytest.approx(real, abs=0.02)
    assert np.allclose(world_table(joint, share), label_table(data, weights), atol=0.01)
    assert joint.on_curve and joint.name.endswith(SUFFIX)


def test_a_world_as_accurate_as_the_file_is_moved_by_its_noise_only() -> None:
    true_world = world(0.8)
    data, weights = crowd(true_world, n_tasks=3000)
    restored = with_accuracy_restored(true_world, data, weights)
    assert restored is not None
    assert np.abs(restored.confusion - true_world.confusion).max() == pytest.approx(0, abs=0.03)
