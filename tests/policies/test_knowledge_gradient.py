"""Knowledge-gradient policy (Chen, Lin & Zhou 2013): hand-worked values, ranking, contract.

Reference values are exact rationals: for integer a, b the Beta CDF is a binomial tail,
``I(a, b) = P(theta >= 1/2) = P(Binomial(a + b - 1, 1/2) <= a - 1)``.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb

import numpy as np
import pytest

from marketsim.data.labels import LabelSet
from marketsim.errors import InputError
from marketsim.policies.base import MarketInfo, MarketState
from marketsim.policies.knowledge_gradient import (
    KnowledgeGradientPolicy,
    expected_accuracy,
    gains,
    knowledge_gradient,
    prob_positive,
)
from marketsim.policies.registry import POLICIES, make_policy


def exact_i(a: int, b: int) -> Fraction:
    """``P(theta >= 1/2)`` for ``theta ~ Beta(a, b)``, integer a, b, as an exact fraction."""
    n = a + b - 1
    return Fraction(sum(comb(n, k) for k in range(a)), 2**n)


def exact_values(a: int, b: int) -> tuple[Fraction, Fraction, Fraction, Fraction]:
    """Exact ``(R1, R2, R+, KG)``."""

    def h(x: Fraction) -> Fraction:
        return max(x, 1 - x)

    now = h(exact_i(a, b))
    r1 = h(exact_i(a + 1, b)) - now
    r2 = h(exact_i(a, b + 1)) - now
    return r1, r2, max(r1, r2), Fraction(a, a + b) * r1 + Fraction(b, a + b) * r2


# --- hand-worked values ------------------------------------------------------------------------
def test_prob_positive_hand_worked() -> None:
    # I(1,1) = 1/2; I(2,1) = 3/4; I(1,2) = 1/4; I(3,1) = 7/8; I(2,2) = 1/2; I(3,2) = 11/16.
    a = np.array([1, 2, 1, 3, 2, 3])
    b = np.array([1, 1, 2, 1, 2, 2])
    want = [0.5, 0.75, 0.25, 0.875, 0.5, 11 / 16]
    np.testing.assert_allclose(prob_positive(a, b), want, rtol=0, atol=1e-15)
    np.testing.assert_allclose(expected_accuracy(a, b), np.maximum(want, 1 - np.array(want)))


def test_gains_hand_worked() -> None:
    # (1,1): R1 = h(3/4) - h(1/2) = 1/4, R2 = h(1/4) - h(1/2) = 1/4, R+ = 1/4, KG = 1/4.
    r1, r2 = gains(1, 1)
    assert r1 == pytest.approx(0.25, abs=1e-15) and r2 == pytest.approx(0.25, abs=1e-15)
    assert knowledge_gradient(1, 1) == pytest.approx(0.25, abs=1e-15)
    assert knowledge_gradient(1, 1, optimistic=False) == pytest.approx(0.25, abs=1e-15)
    # (2,1): R1 = h(7/8) - h(3/4) = 1/8, R2 = h(1/2) - h(3/4) = -1/4, R+ = 1/8,
    # KG = 2/3 * 1/8 - 1/3 * 1/4 = 0.
    r1, r2 = gains(2, 1)
    assert r1 == pytest.approx(0.125, abs=1e-15) and r2 == pytest.approx(-0.25, abs=1e-15)
    assert knowledge_gradient(2, 1) == pytest.approx(0.125, abs=1e-15)
    assert knowledge_gradient(2, 1, optimistic=False) == 0.0
    # (2,2): I(3,2) = 11/16, so R1 = R2 = 3/16 = R+ = KG.
    assert knowledge_gradient(2, 2) == pytest.approx(3 / 16, abs=1e-15)
    assert knowledge_gradient(2, 2, optimistic=False) == pytest.approx(3 / 16, abs=1e-15)
    # (5,3): I = 99/128, I(6,3) = 219/256, I(5,4) = 163/256 -> R1 = 21/256, R2 = -35/256.
    r1, r2 = gains(5, 3)
    assert r1 == pytest.approx(21 / 256, abs=1e-15) and r2 == pytest.approx(-35 / 256, abs=1e-15)


@pytest.mark.parametrize("ab", [(1, 1), (2, 1), (1, 2), (3, 1), (2, 2), (3, 2), (4, 2), (5, 3),
                                (2, 5), (6, 6), (10, 1), (7, 9), (12, 11), (30, 1)])
def test_values_match_exact_binomial_arithmetic(ab: tuple[int, int]) -> None:
    a, b = ab
    r1, r2, rplus, kg = exact_values(a, b)
    g1, g2 = gains(a, b)
    assert float(g1) == pytest.approx(float(r1), rel=1e-12, abs=1e-15)
    assert float(g2) == pytest.approx(float(r2), rel=1e-12, abs=1e-15)
    assert float(knowledge_gradient(a, b)) == pytest.approx(float(rplus), rel=1e-12)
    assert float(knowledge_gradient(a, b, optimistic=False)) == pytest.approx(
        float(kg), rel=1e-12, abs=1e-15
    )


def test_large_counts_give_tiny_but_positive_and_accurate_values() -> None:
    # (41, 1): I = 1 - 2^-41, R1 = 2^-42 exactly, R2 = h(I(41,2)) - h(I(41,1)) = -41 * 2^-42.
    # Computed through 1 - betainc these would cancel to noise; the error form keeps them exact.
    r1, r2 = gains(41, 1)
    assert float(r1) == pytest.approx(2.0**-42, rel=1e-12)
    assert float(r2) == pytest.approx(-41 * 2.0**-42, rel=1e-12)
    assert 0 < knowledge_gradient(41, 1) < 1e-12
    # Very lopsided (200 vs 1): still positive, and below the less lopsided task.
    assert 0 < knowledge_gradient(201, 1) < knowledge_gradient(41, 1)


def test_symmetry_r_plus_ab_equals_ba() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(1, 60, size=200).astype(float) + rng.random(200)
    b = rng.integers(1, 60, size=200).astype(float) + rng.random(200)
    for optimistic in (True, False):
        v_ab = knowledge_gradient(a, b, optimistic=optimistic)
        v_ba = knowledge_gradient(b, a, optimistic=optimistic)
        assert np.array_equal(v_ab, v_ba)
    assert (knowledge_gradient(a, b) > 0).all()


def test_plain_kg_is_zero_unless_the_votes_are_nearly_split() -> None:
    # The paper's motivation for Opt-KG: h(I) is linear away from I = 1/2 and I is a martingale.
    a = np.array([3.0, 1.0, 5.0, 2.5, 4.0, 4.5])
    b = np.array([1.0, 2.0, 4.0, 3.0, 4.0, 4.0])
    kg = knowledge_gradient(a, b, optimistic=False)
    assert np.array_equal(kg[:3], np.zeros(3))
    assert (kg[3:] > 0).all()
    # ... and the formula itself agrees with 0 there (the mask only removes rounding noise).
    r1, r2 = gains(a[:3], b[:3])
    p1 = a[:3] / (a[:3] + b[:3])
    np.testing.assert_allclose(p1 * r1 + (1 - p1) * r2, 0.0, atol=1e-15)


def test_values_are_vectorised_over_tasks() -> None:
    a = np.array([1.0, 2.0, 1.0, 41.0])
    b = np.array([1.0, 1.0, 2.0, 1.0])
    v = knowledge_gradient(a, b)
    assert v.shape == (4,)
    for i in range(4):
        assert v[i] == knowledge_gradient(a[i], b[i])


# --- the policy --------------------------------------------------------------------------------
def info_for(n_tasks: int, n_workers: int = 20, k: int = 2) -> MarketInfo:
    return MarketInfo(
        n_tasks, n_workers, k, np.full(k, 1.0 / k), 6.0, 2.0, 0.1, inference=None
    )


def state_for(labels: LabelSet) -> MarketState:
    proba = np.full((labels.n_tasks, labels.n_classes), 1.0 / labels.n_classes)
    return MarketState(labels, proba, np.full(labels.n_workers, 0.7), labels.n_labels, 1000)


def labels_from_counts(counts: list[tuple[int, int]], n_workers: int = 20) -> LabelSet:
    """Task i gets counts[i][0] labels of class 0 and counts[i][1] of class 1 (distinct workers)."""
    tasks, workers, labels = [], [], []
    for i, (pos, neg) in enumerate(counts):
        for w, c in enumerate([0] * pos + [1] * neg):
            tasks.append(i)
            workers.append(w)
            labels.append(c)
    return LabelSet.from_arrays(
        tasks, workers, labels, n_tasks=len(counts), n_workers=n_workers, n_classes=2
    )


def test_fresh_task_ranks_above_task_with_ten_agreeing_labels() -> None:
    for optimistic in (True, False):
        policy = KnowledgeGradientPolicy(optimistic=optimistic)
        policy.bind(info_for(2))
        state = state_for(labels_from_counts([(10, 0), (0, 0)]))
        for seed in range(20):
            order = policy.rank(state, np.random.default_rng(seed))
            assert order.tolist() == [1, 0]


def test_ranking_orders_by_r_plus_and_counts_class_zero_as_positive() -> None:
    counts = [(10, 0), (0, 0), (3, 1), (2, 2), (1, 3), (0, 10), (6, 5)]
    policy = KnowledgeGradientPolicy()
    policy.bind(info_for(len(counts)))
    data = labels_from_counts(counts)
    a, b = policy.posterior(data)
    np.testing.assert_array_equal(a, [11, 1, 4, 3, 2, 1, 7])
    np.testing.assert_array_equal(b, [1, 1, 2, 3, 4, 11, 6])
    score = policy.score(data)
    np.testing.assert_array_equal(score, knowledge_gradient(a, b))
    order = policy.rank(state_for(data), np.random.default_rng(0))
    assert np.all(np.diff(score[order]) <= 0)
    assert order[0] == 1  # the fresh task: R+(1,1) = 1/4 is the largest
    assert set(order[-2:].tolist()) == {0, 5}  # the two unanimous tasks, mirror images


def test_prior_is_used() -> None:
    data = labels_from_counts([(0, 0), (1, 0)])
    policy = KnowledgeGradientPolicy(a0=2.0, b0=0.5)
    policy.bind(info_for(2))
    a, b = policy.posterior(data)
    np.testing.assert_array_equal(a, [2.0, 3.0])
    np.testing.assert_array_equal(b, [0.5, 0.5])


def test_ties_are_broken_at_random_and_reproducibly() -> None:
    data = labels_from_counts([(0, 0)] * 30)
    policy = KnowledgeGradientPolicy()
    policy.bind(info_for(30))
    first = policy.rank(state_for(data), np.random.default_rng(11))
    again = policy.rank(state_for(data), np.random.default_rng(11))
    other = policy.rank(state_for(data), np.random.default_rng(12))
    assert np.array_equal(np.sort(first), np.arange(30))
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)


def test_contract_permutation_reproducible_via_registry() -> None:
    rng = np.random.default_rng(0)
    n, m = 200, 15
    tasks = rng.integers(0, n, size=700)
    data = LabelSet.from_arrays(
        tasks, rng.integers(0, m, size=700), rng.integers(0, 2, size=700),
        n_tasks=n, n_workers=m, n_classes=2,
    )
    ranks = []
    for _ in range(2):
        policy = make_policy("knowledge-gradient", {"a0": 1, "b0": 1, "optimistic": True})
        policy.bind(info_for(n, m))
        ranks.append(policy.rank(state_for(data), np.random.default_rng(5)))
    assert np.array_equal(np.sort(ranks[0]), np.arange(n))
    assert np.array_equal(ranks[0], ranks[1])
    assert policy.name == "knowledge-gradient" and policy.needs_truth is False
    assert "knowledge-gradient" in POLICIES
    assert "equally reliable" in POLICIES["knowledge-gradient"].describe()


def test_more_than_two_classes_is_refused_in_bind() -> None:
    policy = KnowledgeGradientPolicy()
    with pytest.raises(ValueError, match="binary tasks only"):
        policy.bind(info_for(5, k=3))
    data = LabelSet.from_arrays([0], [0], [2], n_tasks=1, n_workers=1, n_classes=3)
    with pytest.raises(ValueError, match="binary tasks only"):
        policy.score(data)


@pytest.mark.parametrize(
    "options",
    [{"a0": 0}, {"b0": -1.0}, {"a0": float("nan")}, {"a0": "1"}, {"optimistic": "yes"}],
)
def test_bad_options_are_input_errors(options: dict) -> None:
    with pytest.raises(InputError):
        KnowledgeGradientPolicy(**options)
    with pytest.raises(InputError, match="bad options"):
        make_policy("knowledge-gradient", {"colour": "red"})
