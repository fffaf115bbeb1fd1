"""The crowd-shrunk world (``aggregation/crowd_confusion``, ``crowd_worlds.crowd_worlds``):
the crowd matrix and concentration are recovered from a crowd drawn around them, each worker
is shrunk toward the crowd as far as their labels leave room, and on a crowd that confuses
classes in pairs the crowd-shrunk world is the candidate BIC chooses."""

from __future__ import annotations

import numpy as np

from marketsim.aggregation.confusion_fit import counted_confusion, fit_confusion_world
from marketsim.aggregation.crowd_confusion import fit_crowd_prior
from marketsim.aggregation.crowd_worlds import crowd_worlds
from marketsim.aggregation.type_selection import refit_world
from marketsim.workers.confusion import draw_crowd_matrices

#: Four classes confused in two pairs ({1, 2} and {3, 4}), the second class the hardest.
PAIRED = np.array([[0.80, 0.17, 0.02, 0.01],
                   [0.30, 0.66, 0.02, 0.02],
                   [0.01, 0.02, 0.85, 0.12],
                   [0.02, 0.01, 0.15, 0.82]])


def answer_counts(concentration: float, n_workers: int, per_row: int, seed: int
                  ) -> np.ndarray:
    """Counts (workers, K, K) of ``per_row`` answers per class of workers drawn around
    PAIRED."""
    rng = np.random.default_rng(seed)
    matrices = draw_crowd_matrices(PAIRED, concentration, n_workers, rng)
    return rng.multinomial(per_row, matrices).astype(np.float64)


def test_crowd_matrix_and_concentration_are_recovered() -> None:
    prior = fit_crowd_prior(answer_counts(20.0, 400, 25, seed=1))
    assert np.abs(prior.matrix - PAIRED).max() < 0.03
    assert 14.0 < prior.concentration < 28.0


def test_concentration_tells_alike_workers_from_different_ones() -> None:
    alike = fit_crowd_prior(answer_counts(200.0, 300, 25, seed=2)).concentration
    differ = fit_crowd_prior(answer_counts(3.0, 300, 25, seed=2)).concentration
    assert alike > 80.0 and differ < 5.0


def test_workers_are_shrunk_as_far_as_their_labels_leave_room() -> None:
    counts = answer_counts(10.0, 200, 20, seed=3)
    counts[0] = 0.0  # a worker without labels
    counts[1] *= 100  # a worker with very many
    prior = fit_crowd_prior(counts)
    shrunk = prior.shrunk(counts)
    assert np.allclose(shrunk.sum(axis=2), 1.0)
    assert np.allclose(shrunk[0], prior.matrix)
    own = counts[1] / counts[1].sum(axis=1, keepdims=True)
    assert np.abs(shrunk[1] - own).max() < 0.01


def test_the_spread_restored_is_the_crowds_not_the_posterior_means() -> None:
    """Workers with 8 answers a class drawn around PAIRED (concentration 10): the posterior
    means are about half as spread as the workers really are; with the spread restored the
    matrices are as spread as the drawn ones (each cell's sd across workers), still rows of
    probabilities, and a worker without labels stays the crowd."""
    rng = np.random.default_rng(5)
    truth = draw_crowd_matrices(PAIRED, 10.0, 2000, rng)
    counts = rng.multinomial(8, truth).astype(np.float64)
    counts[0] = 0.0
    prior = fit_crowd_prior(counts)
    shrunk = prior.shrunk(counts)
    restored = prior.spread(shrunk, counts)
    real_sd, shrunk_sd, restored_sd = (m[1:].std(axis=0) for m in (truth, shrunk, restored))
    big = real_sd > 0.05  # the cells whose spread is measurable
    assert np.all(shrunk_sd[big] < 0.8 * real_sd[big])
    assert np.all(np.abs(restored_sd[big] / real_sd[big] - 1.0) < 0.15)
    assert np.allclose(restored.sum(axis=2), 1.0) and restored.min() > 0.0
    assert np.allclose(restored[0], prior.matrix)


def paired_crowd(seed: int = 4) -> tuple[np.ndarray, ...]:
    """300 tasks, 5 labels each from 40 workers drawn around PAIRED, the truth known."""
    rng = np.random.default_rng(seed)
    n_tasks, n_workers, per_task = 300, 40, 5
    truth = rng.integers(0, 4, n_tasks)
    matrices = draw_crowd_matrices(PAIRED, 30.0, n_workers, rng)
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.concatenate([rng.choice(n_workers, per_task, replace=False)
                              for _ in range(n_tasks)])
    rows = matrices[workers, truth[tasks]]
    labels = (np.cumsum(rows, axis=1) <= rng.random((tasks.size, 1))).sum(axis=1)
    return tasks, workers, np.minimum(labels, 3), np.eye(4)[truth], n_workers


def test_a_crowd_confusing_classes_in_pairs_chooses_the_crowd_shrunk_world() -> None:
    tasks, workers, labels, weights, n_workers = paired_crowd()
    crowd = crowd_worlds(tasks, workers, labels, weights, n_workers, effects=())[0]
    assert crowd.crowd is not None and crowd.name == "crowd-shrunk confusion"
    assert np.abs(crowd.crowd.matrix - PAIRED).max() < 0.08
    # the pairs survive in every worker's matrix: little mass across them
    across = (crowd.confusion[:, :2, 2:].sum(axis=2).mean()
              + crowd.confusion[:, 2:, :2].sum(axis=2).mean()) / 2
    assert across < 0.06
    start = counted_confusion(tasks, workers, labels, weights, n_workers)
    for coins in (True, False):  # one ability, or a free matrix per worker
        free = fit_confusion_world(tasks, workers, labels, weights, n_workers, start,
                                   coins=coins, lookalike=False, difficulty=False)
        assert crowd.bic < free.bic


def test_a_crowd_shrunk_world_refits_as_the_same_kind_of_world() -> None:
    tasks, workers, labels, weights, n_workers = paired_crowd()
    plain, look, restored = crowd_worlds(tasks, workers, labels, weights, n_workers,
                                         effects=((True, False),))
    assert look.name == "crowd-shrunk confusion, look-alike tasks"
    assert restored.spread_restored and restored.name.startswith(look.name)
    cut = tasks < 200
    for fit in (plain, restored):  # the restored world refits the look-alike one first
        again = refit_world(fit, tasks[cut], workers[cut], labels[cut], weights[:200], n_workers)
        assert again.crowd is not None and again.name == fit.name
        assert again.spread_restored == fit.spread_restored
