"""Task difficulty sized on the design curve for a world whose per-label accuracy is restored
(``aggregation/curve_difficulty`` with ``keep_accuracy``, ``aggregation/accuracy_restored.
restored_with_difficulty``): a crowd whose errors gather on some tasks (CF, issue #40: the
restored world right at one label, majority vote 2.7 points too good at 3) gets the difficulty
that gathers them, and keeps the file's accuracy at every ``sigma`` — tempering a skewed
worker's rows toward a guess costs more accuracy than tempering them the other way gains, so
the plain grid sized the difficulty against that loss and wrote too small a one."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from marketsim.aggregation.accuracy_restored import (
    label_table,
    restored_matrices,
    restored_with_difficulty,
    tempered_table,
)
from marketsim.aggregation.confusion_fit import ConfusionFit
from marketsim.aggregation.curve_choice import curve_distance
from marketsim.aggregation.curve_difficulty import SUFFIX, curve_worlds
from marketsim.aggregation.design_curve import real_curve
from marketsim.aggregation.world_replay import pairs_curve
from marketsim.data.labels import LabelSet
from tests.calibrate._difficulty_crowds import difficulty_crowd

#: Five classes; the crowd's rows right 80 % of the time, the rest spread evenly.
K = 5
CROWD = np.full((K, K), 0.2 / (K - 1)) + np.eye(K) * (0.8 - 0.2 / (K - 1))
#: How near the crowd each worker's rows are drawn (Dirichlet concentration): a low one gives
#: skewed rows, near-certain of one wrong class or of the right one, as sparse real workers'.
CONCENTRATION = 5.0
N_WORKERS = 30


def gathered_crowd(seed: int, sigma: float = 1.0, n_tasks: int = 1500, per_task: int = 5
                   ) -> tuple[LabelSet, np.ndarray, np.ndarray]:
    """Labels of workers drawn around :data:`CROWD` on tasks whose inverse difficulty has
    ``log beta ~ N(0, sigma^2)`` (the errors gather on the hard tasks); the labels, the truth
    and the workers' matrices."""
    return difficulty_crowd(CROWD, CONCENTRATION, N_WORKERS, sigma, seed, n_tasks, per_task)


def restored_base(data: LabelSet, weights: np.ndarray, matrices: np.ndarray
                  ) -> tuple[ConfusionFit, np.ndarray, np.ndarray]:
    """The workers' matrices as drawn, without difficulty, restored to the file's table (a
    world right as often as the file's labels, its errors independent given the class); the
    table and the workers' shares of the labels."""
    share = np.bincount(data.workers, minlength=N_WORKERS) / data.n_labels
    target = label_table(data, weights)
    flat = ConfusionFit(matrices, np.eye(K), 0.0, 0.0, 0, 0.0, "per-worker confusion",
                        with_lookalike=True)
    return replace(flat, confusion=restored_matrices(flat, target, share)), target, share


def accuracy(table: np.ndarray, weights: np.ndarray) -> float:
    return float(weights.mean(axis=0) @ np.diag(table))


def test_a_restored_world_given_a_difficulty_keeps_the_files_accuracy() -> None:
    data, truth, matrices = gathered_crowd(seed=3)
    weights = np.eye(K)[truth]
    base, target, share = restored_base(data, weights, matrices)
    real = accuracy(target, weights)
    assert abs(accuracy(tempered_table(base, share), weights) - real) < 1e-6
    # tempered as drawn, the skewed rows lose accuracy ...
    assert accuracy(tempered_table(replace(base, sigma=1.0), share), weights) < real - 0.02
    # ... restored with the difficulty, they keep the file's, class by class
    world = restored_with_difficulty(base, 1.0, target, share)
    assert world.sigma == 1.0
    assert np.allclose(np.diag(tempered_table(world, share)), np.diag(target), atol=0.005)
    assert np.allclose(world.confusion.sum(axis=2), 1.0)


def test_errors_gathered_on_some_tasks_get_a_world_near_the_design_curve() -> None:
    for seed in (3, 4):
        data, truth, matrices = gathered_crowd(seed)
        weights = np.eye(K)[truth]
        known = np.ones(data.n_tasks, bool)
        real = real_curve(data, truth, draws=3, ks=(2,))
        base, target, share = restored_base(data, weights, matrices)
        (kept,) = curve_worlds((base,), data, truth, known, real, weights, keep_accuracy=True)
        (plain,) = curve_worlds((base,), data, truth, known, real, weights)
        assert kept.name.endswith(SUFFIX) and kept.with_difficulty and kept.sigma > plain.sigma
        assert abs(accuracy(tempered_table(kept, share), weights)
                   - accuracy(target, weights)) < 0.005

        near, far = (curve_distance(real, pairs_curve(w, data, truth, known, real.ks, 10, 2,
                                                      seed=11)) for w in (kept, plain))
        # the plain grid's world was 72 and 165 (sum of z^2) from the curve, this one 12, 27
        assert near < far / 2
