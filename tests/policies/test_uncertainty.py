"""The ``uncertainty`` policy for continuous tasks: posterior variance sigma^2 / W_i of the task
means, largest first."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.data.labels import LabelSet
from marketsim.errors import InputError
from marketsim.policies.base import AssignmentPolicy, MarketInfo, MarketState
from marketsim.policies.registry import POLICIES, make_policy, market_problem
from marketsim.policies.uncertainty import UncertaintyPolicy, posterior_variance


def state(tasks: list[int], workers: list[int], good: list[float], sigma: float,
          n_tasks: int) -> MarketState:
    """A continuous market state with one score per (task, worker) pair."""
    lab = LabelSet(np.array(tasks), np.array(workers), np.zeros(len(tasks), dtype=np.int64),
                   n_tasks, len(good), 1, scores=np.full(len(tasks), 0.5))
    g = np.asarray(good, dtype=np.float64)
    return MarketState(lab, np.ones((n_tasks, 1)), g, lab.n_labels, 100,
                       means=np.full(n_tasks, 0.5), good_proba=g, sigma=sigma)


def bound(n_tasks: int) -> UncertaintyPolicy:
    pol = UncertaintyPolicy()
    pol.bind(MarketInfo(n_tasks, 3, 1, np.ones(1), 1.0, 1.0, 0.0, None))
    return pol


def test_variance_by_hand() -> None:
    # Task 0: two scorers with P(good) 0.9 + 0.5 = 1.4; task 1: one good scorer (0.9);
    # task 2: only a bad scorer (P(good) 0); task 3: unscored.
    var = posterior_variance(np.array([0, 0, 1, 2]), np.array([0, 1, 0, 2]),
                             np.array([0.9, 0.5, 0.0]), 0.2, 4)
    assert var[0] == pytest.approx(0.04 / 1.4)
    assert var[1] == pytest.approx(0.04 / 0.9)
    assert np.isinf(var[2]) and np.isinf(var[3])


def test_rank_is_a_permutation_with_least_certain_first() -> None:
    st = state([0, 0, 0, 1, 1, 2, 4], [0, 1, 2, 0, 1, 0, 2], [1.0, 1.0, 0.2], 0.1, 6)
    # W: task0 2.2, task1 2.0, task2 1.0, task3 0 (unscored), task4 0.2, task5 0 (unscored)
    pol = bound(6)
    assert isinstance(pol, AssignmentPolicy)
    for seed in range(5):
        order = pol.rank(st, np.random.default_rng(seed))
        assert sorted(order.tolist()) == list(range(6))
        assert set(order[:2].tolist()) == {3, 5}  # infinite variance first, random tie-break
        assert order[2:].tolist() == [4, 2, 1, 0]
    firsts = {int(pol.rank(st, np.random.default_rng(s))[0]) for s in range(20)}
    assert firsts == {3, 5}


def test_trusted_scores_make_a_task_more_certain_than_untrusted_ones() -> None:
    # Same number of scores per task; task 0's come from a trusted annotator, task 1's not.
    st = state([0, 1], [0, 1], [0.95, 0.05], 0.1, 2)
    assert bound(2).rank(st, np.random.default_rng(0)).tolist() == [1, 0]
    # More trusted scores: more certain.
    st = state([0, 0, 0, 1], [0, 1, 2, 0], [0.9, 0.9, 0.9], 0.1, 2)
    assert bound(2).rank(st, np.random.default_rng(0)).tolist() == [1, 0]


def test_needs_a_continuous_state() -> None:
    lab = LabelSet.from_arrays([0, 1], [0, 1], [0, 1], n_tasks=2, n_workers=2, n_classes=2)
    st = MarketState(lab, np.full((2, 2), 0.5), np.full(2, 0.7), 2, 10)
    with pytest.raises(InputError, match="continuous-score market"):
        bound(2).rank(st, np.random.default_rng(0))


def test_registered_and_market_rules() -> None:
    assert "uncertainty" in POLICIES
    assert isinstance(make_policy("uncertainty", {}), UncertaintyPolicy)
    assert market_problem(POLICIES["uncertainty"], True, 1) is None
    assert market_problem(POLICIES["uniform"], True, 1) is None
    assert market_problem(POLICIES["uniform"], False, 5) is None
    assert "gaussian-scores" in (market_problem(POLICIES["uncertainty"], False, 2) or "")
    for name in ("entropy-greedy", "oracle", "random-forest", "knowledge-gradient"):
        assert market_problem(POLICIES[name], True, 1) is not None
        assert market_problem(POLICIES[name], False, 2) is None
    assert "binary" in (market_problem(POLICIES["knowledge-gradient"], False, 3) or "")
