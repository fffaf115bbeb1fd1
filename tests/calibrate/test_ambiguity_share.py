"""The share of ambiguous tasks fitted to the majority's profile (``aggregation/
ambiguity_share``): a look-alike world whose look-alike mass is too small (as a likelihood fit
with over-spread worker matrices leaves it) gets back the share of tasks the real majority gets
wrong, and a world that already has it is left as it is."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from marketsim.aggregation.ambiguity_share import (
    SCALES,
    SUFFIX,
    ambiguity_share,
    ambiguity_worlds,
    largest_scale,
    majority_wrong,
    pairs_share,
    scaled_lookalike,
    tried_scales,
)
from marketsim.aggregation.confusion_fit import ConfusionFit
from marketsim.aggregation.world_replay import world_labels
from marketsim.data.labels import LabelSet

#: Three classes: 24 % of class-0 tasks look like class 1 to every worker, 12 % of class 2 like 1.
LOOKALIKE = np.array([[0.76, 0.24, 0.00],
                      [0.00, 1.00, 0.00],
                      [0.00, 0.12, 0.88]])


def ambiguous_crowd(seed: int = 0, n_tasks: int = 600, per_task: int = 9, n_workers: int = 40
                    ) -> tuple[ConfusionFit, LabelSet, np.ndarray]:
    """The true world (workers right on 80 % of a class's tasks, the rest spread evenly, and
    :data:`LOOKALIKE`), its labels on random pairs and the truth."""
    rng = np.random.default_rng(seed)
    confusion = np.broadcast_to(0.8 * np.eye(3) + 0.1 * (1 - np.eye(3)), (n_workers, 3, 3))
    world = ConfusionFit(confusion.copy(), LOOKALIKE, 0.0, 0.0, 0, 0.0,
                         "crowd-shrunk confusion, look-alike tasks", with_lookalike=True)
    truth = rng.integers(0, 3, n_tasks)
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.argsort(rng.random((n_tasks, n_workers)), axis=1)[:, :per_task].ravel()
    labels = world_labels(world, tasks, workers, truth, rng)
    return world, LabelSet(tasks, workers, labels, n_tasks, n_workers, 3), truth


def test_majority_wrong_counts_ties_as_a_half() -> None:
    data = LabelSet(np.array([0, 0, 1, 1, 2, 2, 2]), np.array([0, 1, 0, 1, 0, 1, 2]),
                    np.array([1, 1, 0, 1, 0, 2, 2]), 3, 3, 3)
    # task 0: both wrong; task 1: a tie with the truth; task 2: two of three wrong
    assert majority_wrong(data, data.labels, np.zeros(3, dtype=np.int64),
                          np.ones(3, dtype=bool)) == (1 + 0.5 + 1) / 3


def test_a_too_small_lookalike_share_is_scaled_back_to_the_real_one() -> None:
    world, data, truth = ambiguous_crowd()
    judged = np.ones(data.n_tasks, dtype=bool)
    half = scaled_lookalike(LOOKALIKE, 0.5)
    assert half is not None
    fitted = replace(world, lookalike=half)
    real = majority_wrong(data, data.labels, truth, judged)
    share_of = pairs_share(data, truth, judged)
    estimate = ambiguity_share(fitted, real, share_of)
    assert 1.6 < estimate.scale < 2.75  # the true mass is twice the fitted one
    assert estimate.shares[-2] < real <= estimate.shares[-1]  # bracketed, then interpolated
    assert estimate.shares[0] < real - 0.03  # the fitted world has too few
    assert estimate.scales[-1] <= 2.5  # the search stops past the real share
    weights = np.eye(3)[truth]
    (scaled,) = ambiguity_worlds((fitted,), real, share_of, data, weights)
    assert scaled.name.endswith(SUFFIX) and scaled.on_curve
    assert np.allclose(scaled.lookalike.sum(axis=1), 1.0)
    assert np.abs(scaled.lookalike - LOOKALIKE).max() < 0.07


def test_a_world_with_the_real_share_is_not_added_again() -> None:
    world, data, truth = ambiguous_crowd(seed=1)
    judged = np.ones(data.n_tasks, dtype=bool)
    real = majority_wrong(data, data.labels, truth, judged)
    estimate = ambiguity_share(world, real, pairs_share(data, truth, judged))
    assert estimate.scale <= 1.25  # the drawn file's own share has sd 0.014 (600 tasks)
    if estimate.scale == 1.0:
        assert ambiguity_worlds((world,), real, pairs_share(data, truth, judged), data,
                                np.eye(3)[truth]) == ()


def test_the_scale_stops_where_a_row_would_leave_the_probabilities() -> None:
    assert scaled_lookalike(LOOKALIKE, 4.0) is not None
    assert scaled_lookalike(LOOKALIKE, 4.5) is None


def test_a_share_many_times_the_fitted_one_is_reached_up_to_the_largest_scale() -> None:
    """Fitted with Dawid-Skene's answers where no truth is, a world sees few look-alikes (a
    look-alike is what the labels say); judged where the truth is, the real share can be many
    times its own (HITspam: every task unanimous, 34 of the 100 with a truth wrong)."""
    world, data, truth = ambiguous_crowd(seed=2)
    faint = scaled_lookalike(LOOKALIKE, 0.05)  # 1.2 % and 0.6 %: a twentieth of the truth
    assert faint is not None
    assert largest_scale(faint) == pytest.approx(1.0 / (0.24 * 0.05))
    assert tried_scales(faint) == SCALES  # a truth on every task (or none): up to 3
    scales = tried_scales(faint, dilution=50.0)  # a truth on one task in 50
    assert scales[:9] == SCALES and scales[9:12] == (6.0, 12.0, 24.0)
    assert scales[-1] < largest_scale(faint) < scales[-1] * (1 + 1e-6)
    assert all(scaled_lookalike(faint, s) is not None for s in scales)
    assert tried_scales(faint, dilution=4.0)[-1] == 12.0
    judged = np.ones(data.n_tasks, dtype=bool)
    real = majority_wrong(data, data.labels, truth, judged)
    estimate = ambiguity_share(replace(world, lookalike=faint), real,
                               pairs_share(data, truth, judged), dilution=50.0)
    assert 12.0 < estimate.scale < 40.0  # the true mass is 20 times the fitted one
    assert estimate.shares[-2] < real <= estimate.shares[-1]
    assert tried_scales(np.eye(3), dilution=50.0)[-1] == 150.0
    assert tried_scales(np.array([[0.3, 0.7], [0.0, 1.0]]))[-1] == pytest.approx(1 / 0.7)


def test_a_share_weighted_by_class_reads_the_gold_mix() -> None:
    """A twin judged as a partial truth's tasks are mixed: each class's share of wrong
    majorities weighs as much as the class does among the gold tasks."""
    data = LabelSet(np.array([0, 0, 1, 1, 2, 2, 3, 3]), np.arange(8) % 2,
                    np.array([1, 1, 0, 0, 0, 0, 0, 0]), 4, 2, 2)
    classes = np.array([0, 0, 0, 1])  # task 0 wrong (class 0); task 3 wrong (class 1)
    judged = np.ones(4, dtype=bool)
    assert majority_wrong(data, data.labels, classes, judged) == 0.5
    assert majority_wrong(data, data.labels, classes, judged, (0.5, 0.5)) == (1 / 3 + 1) / 2


def test_the_twins_share_grows_with_the_lookalike_mass_and_leaves_the_calibration_alone() -> None:
    """The twin as collected (the design sampler's labels of the scenario calibrate would
    write with the world): more look-alike mass, more tasks its majority gets wrong."""
    from marketsim.scenario.calibration import Calibration
    from marketsim.study.twin_ambiguity import twin_share

    world, _, _ = ambiguous_crowd(n_workers=12)
    cal = Calibration("x", 300, 3, 2700, np.full(3, 1 / 3), np.full(12, 2700 // 12), (world,),
                      "truth", ((9, 300),))
    share_of = twin_share(cal, seed=0)
    none, real, double = (share_of(replace(world, lookalike=scaled_lookalike(LOOKALIKE, s)))
                          for s in (0.0, 1.0, 2.0))
    assert none < 0.03 < real - 0.05 and real < double - 0.05
    assert share_of(replace(world, lookalike=LOOKALIKE)) == real  # the same replicates' draws
    assert cal.crowd_fits == () and cal.pick is None
