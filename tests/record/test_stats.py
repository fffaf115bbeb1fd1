"""The study statistics: Student-t intervals that cover, rates kept in [0, 1], paired
comparisons that name a winner only when the interval allows."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as scipy_stats
from hypothesis import given, settings
from hypothesis import strategies as st

from marketsim.record.stats import (
    mean_interval,
    paired_comparison,
    t_multiplier,
    t_quantile,
    t_test_pvalue,
)


@pytest.mark.parametrize("n", [2, 5, 20])
def test_intervals_cover_the_true_mean_of_error_rates(n: int) -> None:
    """1,000 synthetic studies of ``n`` replicates whose error rate varies between worlds
    (a world's difficulty ~ Beta, then 2,000 tasks): the 95 % interval covers the true mean
    error in 93-97 % of them, and never leaves [0, 1]."""
    rng = np.random.default_rng(20261123 + n)
    true_p = 0.04  # Beta(4, 96) mean
    studies = 1000
    p_world = rng.beta(4, 96, size=(studies, n))
    errors = rng.binomial(2000, p_world) / 2000
    covered = 0
    for row in errors:
        iv = mean_interval(row, bounds=(0.0, 1.0))
        assert 0.0 <= iv.low <= iv.mean <= iv.high <= 1.0
        covered += iv.low <= true_p <= iv.high
    assert 0.93 <= covered / studies <= 0.97, covered / studies


def test_t_multiplier_is_studentised() -> None:
    assert t_multiplier(2) == pytest.approx(12.706, abs=1e-3)
    assert t_multiplier(5) == pytest.approx(2.776, abs=1e-3)
    assert math.isinf(t_multiplier(1))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30))
def test_rate_intervals_stay_in_bounds(values: list[float]) -> None:
    iv = mean_interval(values, bounds=(0.0, 1.0))
    if len(values) < 2:
        assert math.isnan(iv.low) and math.isnan(iv.high)
    else:
        assert 0.0 <= iv.low <= iv.high <= 1.0


def test_identical_arms_name_no_winner() -> None:
    values = [0.05, 0.03, 0.04, 0.06]
    cmp = paired_comparison("b", "a", values, values)
    assert not cmp.detected
    assert "no difference detectable with 4 replicates" in cmp.verdict()


def test_pairing_detects_what_separate_intervals_cannot() -> None:
    """Worlds differ a lot, arm b is always 0.005 better on the same world: the separate
    intervals overlap, the paired one excludes zero."""
    worlds = np.array([0.02, 0.08, 0.05, 0.11, 0.03])
    a, b = worlds, worlds - 0.005 + np.array([0.0, 0.001, -0.001, 0.0005, 0.0])
    ia, ib = mean_interval(a), mean_interval(b)
    assert ia.low < ib.high  # overlap: "by eye" no difference
    cmp = paired_comparison("b", "a", b, a)
    assert cmp.detected and cmp.difference.high < 0
    assert cmp.verdict().startswith("b is better than a by 0.0049")
    assert cmp.p_value < 0.001


def test_undetected_difference_estimates_replicates_needed() -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(0.05, 0.01, 3)
    b = a + rng.normal(0.002, 0.004, 3)
    cmp = paired_comparison("b", "a", b, a)
    if not cmp.detected:
        assert cmp.replicates_needed is not None and cmp.replicates_needed > 3
        assert f"about {cmp.replicates_needed} would be needed" in cmp.verdict()


def test_unfinished_replicates_are_left_out_of_the_pairs() -> None:
    cmp = paired_comparison("b", "a", [0.1, math.nan, 0.2], [0.2, 0.3, 0.3])
    assert cmp.difference.n == 2


def test_light_kernels_give_scipy_stats_bits() -> None:
    """The CLI avoids importing scipy.stats (0.7 s per command); its t quantiles and paired
    t-test p-values must stay exactly scipy.stats' numbers."""
    rng = np.random.default_rng(0)
    for _ in range(500):
        n = int(rng.integers(2, 60))
        x = rng.normal(rng.normal(), rng.uniform(0.01, 5), n) * 10 ** rng.uniform(-3, 4)
        assert t_test_pvalue(x) == float(scipy_stats.ttest_1samp(x, 0.0).pvalue)
    for df in (1, 2, 4, 19, 99, 1999):
        for q in (0.5, 0.8, 0.975, 0.995):
            assert t_quantile(q, df) == float(scipy_stats.t.ppf(q, df))


def test_pairs_without_spread_need_the_sign_test_not_a_zero_width_interval() -> None:
    # Labels-to-target sits on the refresh grid: two replicates often differ by exactly the
    # same amount, and the degenerate t-interval [+20, +20] is no evidence of a difference.
    two = paired_comparison("a", "b", np.array([120.0, 140.0]), np.array([100.0, 120.0]))
    assert two.no_spread and not two.detected
    assert "no spread" in two.verdict() and "[" not in two.verdict()
    six = paired_comparison("a", "b", np.full(6, 120.0), np.full(6, 100.0))
    assert six.detected and "every one of 6 replicates" in six.verdict()
    assert "sign test p = 0.031" in six.verdict()
    spread = paired_comparison("a", "b", np.array([120.0, 125.0, 130.0]),
                               np.array([100.0, 100, 100]))
    assert not spread.no_spread and spread.detected
