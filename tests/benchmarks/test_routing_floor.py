"""benchmarks/routing_floor.py: the per-task stopping-and-routing values the floor of issue #30
point 5 rests on, checked against an independent value iteration and closed forms, and the
combination of the replicates' lines."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import benchmark_script

routing_floor = benchmark_script("routing_floor")

GRID = np.linspace(-16.0, 16.0, 801)


def value_iteration(problem: object, lam: float, mu: np.ndarray) -> np.ndarray:
    """The optimal value on the grid by plain value iteration from "stop now" (the labels
    bought are capped at the iteration count; run to convergence)."""
    stop = lam * problem.err  # type: ignore[attr-defined]
    value = stop.copy()
    for _ in range(200_000):
        ask = 1.0 + mu[:, None] + (problem.move @ value).reshape(  # type: ignore[attr-defined]
            mu.size, GRID.size)
        new = np.minimum(stop, ask.min(axis=0))
        if np.max(value - new) < 1e-11:
            return new
        value = new
    raise AssertionError("value iteration did not converge")


@pytest.mark.parametrize("seed", [0, 1])
def test_policy_iteration_agrees_with_value_iteration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ability = rng.uniform(0.6, 0.97, size=5)
    start = rng.normal(0.0, 2.0, size=40)
    problem = routing_floor.TaskProblem(GRID, ability, start)
    lam, mu = 300.0, rng.uniform(0.0, 2.0, size=5)
    total, _, _ = problem.solve(lam, mu)
    expected = value_iteration(problem, lam, mu)
    assert total == pytest.approx(float(problem.start_weight @ expected), rel=1e-7)


def test_one_sure_worker_buys_one_label_from_an_even_prior() -> None:
    """A worker right 99.9 % of the time, an error worth 500 labels: from even odds one label
    saves 500 × 0.499, a second at most 500 × 0.001 < 1, so the best policy buys exactly one
    label and ends with that worker's error; at 5,000 a second label pays."""
    problem = routing_floor.TaskProblem(GRID, np.array([0.999]), np.zeros(1))
    total, error, labels = problem.solve(500.0, np.zeros(1))
    assert labels[0] == pytest.approx(1.0, abs=1e-9)
    assert error == pytest.approx(0.001, rel=1e-3)
    assert total == pytest.approx(1.0 + 500.0 * 0.001, rel=1e-3)
    assert problem.solve(5000.0, np.zeros(1))[2][0] > 1.9


def test_cheap_errors_buy_nothing() -> None:
    """When a wrong decision costs less than a label, every task stops at once."""
    problem = routing_floor.TaskProblem(GRID, np.array([0.8, 0.9]), np.array([0.0, 1.0]))
    total, error, labels = problem.solve(1.0, np.zeros(2))
    assert labels.sum() == 0.0
    err0 = 0.5 + 1.0 / (1.0 + np.exp(1.0))
    assert error == pytest.approx(err0, rel=1e-3)
    assert total == pytest.approx(err0, rel=1e-3)


def test_a_capacity_price_moves_labels_to_the_next_best_worker() -> None:
    problem = routing_floor.TaskProblem(GRID, np.array([0.95, 0.9]), np.zeros(10))
    _, _, free = problem.solve(1e3, np.zeros(2))
    _, _, priced = problem.solve(1e3, np.array([5.0, 0.0]))
    assert free[1] == 0.0 and free[0] > 0.0
    assert priced[0] < free[0] and priced[1] > 0.0


def test_envelope_and_shared_time() -> None:
    """Lines A − B τ: the envelope's minimum with a time price, and two replicates sharing a
    mean-time bound."""
    lines = [(100.0, 0.0), (300.0, 0.02)]  # cross at τ = 10,000
    assert routing_floor.envelope_min(lines, 0.0) == pytest.approx(100.0)
    assert routing_floor.envelope_min(lines, 0.01) == pytest.approx(200.0)  # at the crossing
    assert routing_floor.envelope_min(lines, 0.05) == pytest.approx(300.0)  # at τ = 0
    # Two identical replicates at a bound of 5,000: the envelope's value there.
    value, nu = routing_floor.combined_floor([lines, lines], 5000.0)
    assert value == pytest.approx(200.0)
    assert nu == pytest.approx(0.02)
