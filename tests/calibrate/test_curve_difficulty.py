"""A fitted world replayed on a file's own (task, worker) pairs (``aggregation/world_replay``)
and task difficulty estimated on the design curve (``aggregation/curve_difficulty``): the
replay answers as the world's matrices say, the same seed gives the same bytes, and the spread
of difficulty a crowd was drawn with is recovered from its labels' design curve where the
likelihood's world has none."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from marketsim.aggregation.confusion_fit import ConfusionFit
from marketsim.aggregation.curve_difficulty import (
    SIGMA_GRID,
    SUFFIX,
    difficulty_on_curve,
    grid_search,
    with_curve_difficulty,
)
from marketsim.aggregation.design_curve import real_curve
from marketsim.aggregation.world_replay import pairs_runs, world_labels
from marketsim.data.labels import LabelSet
from tests.calibrate._difficulty_crowds import difficulty_crowd

#: Three classes; the crowd's matrix, around which every worker is drawn.
CROWD = np.array([[0.70, 0.20, 0.10],
                  [0.15, 0.65, 0.20],
                  [0.05, 0.15, 0.80]])


def crowd_file(sigma: float, seed: int = 0, n_tasks: int = 400, per_task: int = 6,
               n_workers: int = 30) -> tuple[LabelSet, np.ndarray, np.ndarray]:
    """Labels of workers drawn around CROWD on tasks whose inverse difficulty has
    ``log beta ~ N(0, sigma^2)`` (each label ``~ softmax(beta log pi_j[c])``); the labels,
    the truth and the workers' matrices."""
    return difficulty_crowd(CROWD, 40.0, n_workers, sigma, seed, n_tasks, per_task)


def world(matrices: np.ndarray, sigma: float = 0.0) -> ConfusionFit:
    """A one-matrix world of ``matrices`` without look-alikes."""
    return ConfusionFit(matrices, np.eye(3), sigma, 0.0, 0, 0.0, "per-worker confusion")


def test_the_replay_answers_each_pair_from_its_worker_and_class() -> None:
    data, truth, matrices = crowd_file(0.0, n_tasks=3000)
    answers = world_labels(world(matrices), data.tasks, data.workers, truth,
                           np.random.default_rng(1))
    counts = np.zeros((30, 3, 3))
    np.add.at(counts, (data.workers, truth[data.tasks], answers), 1.0)
    seen = counts.sum(axis=2, keepdims=True)
    expected = matrices * seen
    # each worker's answers per class within four binomial standard deviations
    sd = np.sqrt(np.maximum(expected * (1 - matrices), 1.0))
    assert np.all(np.abs(counts - expected) <= 4 * sd)


def test_difficulty_in_the_replay_is_shared_by_a_task_s_labels() -> None:
    data, truth, matrices = crowd_file(0.0, n_tasks=2000)

    def spread_of_right(sigma: float) -> float:
        answers = world_labels(world(matrices, sigma), data.tasks, data.workers, truth,
                               np.random.default_rng(2))
        right = np.bincount(data.tasks, weights=answers == truth[data.tasks]) / 6
        return float(right.std())
    assert spread_of_right(1.5) > spread_of_right(0.0) + 0.05


def test_the_same_seed_gives_the_same_errors() -> None:
    data, truth, matrices = crowd_file(0.5, n_tasks=100)
    runs = [pairs_runs(world(matrices, 0.5), data, truth, np.ones(100, bool), (2, 4), 2, 2,
                       seed=7) for _ in range(2)]
    assert runs[0].tobytes() == runs[1].tobytes()
    assert runs[0].shape == (3, 4, 2)


def test_the_spread_of_difficulty_is_recovered_from_the_design_curve() -> None:
    # 1,500 tasks: the file is one draw of the tasks' difficulty, and the curve's noise is
    # only its draws of k labels; on 400 tasks that draw alone moved the estimate a step
    data, truth, matrices = crowd_file(1.0, seed=3, n_tasks=1500, per_task=5)
    real = real_curve(data, truth, draws=3, ks=(2,))
    flat = world(matrices)  # the workers as drawn, without the tasks' difficulty
    estimate = difficulty_on_curve(flat, data, truth, np.ones(data.n_tasks, bool), real,
                                   grid=(0.0, 0.5, 1.0, 1.5, 2.0))
    assert estimate.sigma == 1.0
    weights = np.eye(3)[truth]
    fitted = with_curve_difficulty(flat, estimate, data, weights)
    assert fitted is not None and fitted.sigma == 1.0 and fitted.name.endswith(SUFFIX)
    assert fitted.with_difficulty and fitted.n_params == flat.n_params + 1


def test_a_crowd_without_difficulty_adds_no_candidate() -> None:
    data, truth, matrices = crowd_file(0.0, seed=4, n_tasks=1500, per_task=5)
    real = real_curve(data, truth, draws=3, ks=(2,))
    estimate = difficulty_on_curve(world(matrices), data, truth, np.ones(data.n_tasks, bool),
                                   real, grid=(0.0, 1.0, 2.0))
    assert estimate.sigma == 0.0
    assert with_curve_difficulty(world(matrices), estimate, data, np.eye(3)[truth]) is None


def test_a_world_with_difficulty_on_the_curve_is_judged_whatever_the_number_of_types() -> None:
    from marketsim.aggregation.task_types import TypesFit
    from marketsim.scenario.calibration import Calibration

    one = world(np.tile(CROWD, (2, 1, 1)))
    shrunk = replace(one, name="crowd-shrunk confusion")
    on_curve = replace(shrunk, sigma=0.5, on_curve=True, name="crowd-shrunk confusion" + SUFFIX)
    types = tuple(TypesFit(np.full((1, t), 1 / t), np.tile(CROWD, (t, 2, 1, 1)), 0.0, 0, 0.0,
                           f"{t} task types") for t in (2, 3))
    cal = Calibration("x", 10, 3, 20, np.full(3, 1 / 3), np.full(2, 10), (one,), "truth",
                      ((2, 10),), types=types, forced_types=2, crowd_fits=(shrunk, on_curve))
    assert [cal.candidates[i].name for i in cal.eligible] == [
        "2 task types", "crowd-shrunk confusion" + SUFFIX]
    assert cal.chosen.name == "2 task types"  # without the curve's choice: the lowest BIC
    assert replace(cal, forced_types=1).eligible == (0, 1, 2)


def test_the_design_curve_judges_the_types_the_twins_errors_left_to_noise() -> None:
    from marketsim.aggregation.task_types import TypesFit
    from marketsim.aggregation.type_selection import choose_by_moments
    from marketsim.scenario.calibration import Calibration

    one = world(np.tile(CROWD, (2, 1, 1)))
    types = tuple(TypesFit(np.full((1, t), 1 / t), np.tile(CROWD, (t, 2, 1, 1)), 0.0, 0, 0.0,
                           f"{t} task types") for t in (2, 3))
    rng = np.random.default_rng(0)
    # three types nearer both real errors by 1.9 points, within 5 noisy replicates' noise
    vote = np.array([0.247, 0.245, 0.258])[:, None] + rng.normal(0, 0.03, (3, 5))
    ds = np.array([0.232, 0.257, 0.240])[:, None] + rng.normal(0, 0.03, (3, 5))
    vote -= vote.mean(axis=1, keepdims=True) - np.array([0.247, 0.245, 0.258])[:, None]
    ds -= ds.mean(axis=1, keepdims=True) - np.array([0.232, 0.257, 0.240])[:, None]
    moments = choose_by_moments(0.2608, 0.2407, vote, ds)
    assert moments.chosen == 1
    cal = Calibration("x", 10, 3, 20, np.full(3, 1 / 3), np.full(2, 10), (one,), "truth",
                      ((2, 10),), types=types, moments=moments)
    assert cal.judged_types == (1, 3)
    assert [cal.candidates[i].name for i in cal.eligible] == [one.name, "3 task types"]
    assert replace(cal, forced_types=1).eligible == (0,)  # asked for: that number alone


def test_the_search_finds_each_bases_nearest_value_of_the_grid_with_fewer_replays() -> None:
    """Coarse to fine: every other value, then the nearest one's neighbours, each round one
    batch over every base; a distance with one valley anywhere on the grid is found."""
    bases = [replace(world(np.tile(CROWD, (2, 1, 1))), name=str(b)) for b in SIGMA_GRID]
    batches: list[list[float]] = []

    def evaluate(pairs: list[tuple[ConfusionFit, float]]) -> list[float]:
        batches.append([sigma for _, sigma in pairs])
        return [(sigma - float(base.name)) ** 2 + 1.0 for base, sigma in pairs]

    estimates = grid_search(bases, SIGMA_GRID, evaluate)
    assert [e.sigma for e in estimates] == list(SIGMA_GRID)  # each base's valley, found
    assert len(batches) == 2 and len(batches[0]) == 3 * len(bases)
    assert all(4 <= len(e.sigmas) <= 5 for e in estimates)  # of six
    assert all(e.sigmas == tuple(sorted(e.sigmas)) for e in estimates)
    # of equal distances, the first in the grid's order
    flat = grid_search(bases[:1], SIGMA_GRID, lambda pairs: [1.0] * len(pairs))
    assert flat[0].sigma == 0.0 and flat[0].sigmas == (0.0, 0.25, 0.5, 1.0)
