"""The objective the one-matrix and crowd-shrunk worlds are fitted by
(``aggregation/confusion_fit._objective``, its large arrays computed in place and the
posterior mass scattered from the CSR arrays): its log-likelihood, and
``world_log_likelihood``'s, is the world's likelihood computed label by label from its
definition, and its gradient the objective's own slope,
on small random crowds of K = 2..5 with idle workers, with and without each task effect and
the crowd's pseudo-counts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.special import softmax

from marketsim.aggregation.confusion_fit import (
    Z_GRID,
    ConfusionFit,
    _objective,
    _Problem,
    _unpack,
    answer_matrix,
    world_log_likelihood,
)


def problem(k: int, lookalike: bool, difficulty: bool, pseudo: bool, seed: int
            ) -> tuple[_Problem, np.ndarray]:
    """A crowd of 40 tasks and 9 workers (the last two idle), some tasks with a known class
    (one-hot weights), the rest a posterior; and a random point of the parameters."""
    rng = np.random.default_rng(seed)
    n, m = 40, 9
    tasks = np.repeat(np.arange(n), 4)
    workers = rng.integers(0, m - 2, tasks.size)
    labels = rng.integers(0, k, tasks.size)
    weights = rng.dirichlet(np.ones(k), n)
    weights[:15] = np.eye(k)[rng.integers(0, k, 15)]  # gold
    answers = answer_matrix(tasks, workers, labels, n, m, k)
    p = _Problem(tasks, workers, labels, weights, answers, Z_GRID if difficulty else
                 np.zeros(1), m, k, lookalike, difficulty, False,
                 rng.random((k, k)) * 3 if pseudo else None)
    x = [rng.normal(size=m * k * k)]
    x += [rng.normal(size=k * k)] if lookalike else []
    x += [np.array([np.log(0.7)])] if difficulty else []
    return p, np.concatenate(x)


def per_label_likelihood(world: ConfusionFit, p: _Problem) -> float:
    """The module's ``L`` from its definition, task by task and label by label (loops: the
    reference the vectorised kernels are checked against)."""
    n, k = p.weights.shape
    beta = np.exp(world.sigma * Z_GRID) if world.sigma > 0 else np.ones(1)
    total = 0.0
    for i in range(n):
        mine = p.tasks == i
        likelihood = 0.0
        for c in range(k):
            for s in range(k):
                for b in beta:
                    rows = softmax(b * np.log(world.confusion[p.workers[mine], s]), axis=1)
                    labels = np.prod(rows[np.arange(int(mine.sum())), p.labels[mine]])
                    likelihood += p.weights[i, c] * world.lookalike[c, s] * labels / beta.size
        total += float(np.log(likelihood))
    return total


@pytest.mark.parametrize("k", [2, 3, 4, 5])
@pytest.mark.parametrize("lookalike,difficulty,pseudo",
                         [(False, False, False), (True, False, True), (False, True, False),
                          (True, True, True)])
def test_objective_is_the_worlds_likelihood_and_its_gradient_its_slope(
        k: int, lookalike: bool, difficulty: bool, pseudo: bool) -> None:
    p, x = problem(k, lookalike, difficulty, pseudo, seed=k)
    value, grad, loglik = _objective(x, p)
    theta, lam, sigma = _unpack(x, p)
    world = ConfusionFit(softmax(theta, axis=2), softmax(lam, axis=1) if lookalike
                         else np.eye(k), sigma, 0.0, 0, 0.0, "")
    reference = per_label_likelihood(world, p)
    assert loglik == pytest.approx(reference, rel=1e-10)
    assert world_log_likelihood(world, p.tasks, p.workers, p.labels, p.weights) == \
        pytest.approx(reference, rel=1e-10)
    slope = approx_fprime(x, lambda y: _objective(y, p)[0], 1e-6)
    assert np.allclose(grad, slope, rtol=1e-4, atol=1e-4)
    again = _objective(x.copy(), p)  # in place: nothing of the problem is written
    assert again[0] == value and np.array_equal(again[1], grad)
