"""The number of task types by the errors each one's twin reproduces
(:func:`~marketsim.aggregation.type_selection.choose_by_moments`): the world whose twin gets
both the majority-vote and the Dawid–Skene error right wins, matching the vote alone is not
enough (ZenCrowd_us's pattern: every world reproduces the vote, only task types reproduce
Dawid–Skene's being worse than it), and more types are chosen only beyond the replicates'
noise."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.aggregation.type_selection import MOMENT_MARGIN, choose_by_moments, noise_kept


def replicates(means: list[float], sd: float = 0.002, reps: int = 5, seed: int = 0
               ) -> np.ndarray:
    """(types, reps) errors around ``means``, each row centred exactly on its mean."""
    noise = np.random.default_rng(seed).normal(0.0, sd, (len(means), reps))
    noise -= noise.mean(axis=1, keepdims=True)
    return np.asarray(means)[:, None] + noise


def test_the_world_matching_both_errors_is_chosen() -> None:
    # RTE's pattern: one type reproduces both; more types make the twin too easy.
    choice = choose_by_moments(0.103, 0.0725, replicates([0.104, 0.081, 0.086, 0.079]),
                               replicates([0.0665, 0.034, 0.034, 0.030]))
    assert choice.chosen == 1
    assert choice.discrepancy[0] == pytest.approx(0.1 + 0.6, abs=1e-9)
    assert choice.real == (0.103, 0.0725) and choice.replicates == 5


def test_matching_the_vote_alone_is_not_enough() -> None:
    # ZenCrowd_us's pattern: the vote is right everywhere, Dawid-Skene only with types.
    choice = choose_by_moments(0.1385, 0.1775, replicates([0.1397, 0.1363, 0.1351, 0.1335]),
                               replicates([0.1197, 0.1808, 0.1723, 0.1759]))
    assert choice.chosen == 2
    assert "2 type(s)" in choice.note and "17.75 %" in choice.note


def test_more_types_only_beyond_the_noise() -> None:
    vote = replicates([0.10, 0.10, 0.10])
    # Three types are 0.4 points closer: within the margin, the fewest types are kept.
    quiet = choose_by_moments(0.10, 0.070, vote, replicates([0.066, 0.080, 0.070]))
    assert quiet.chosen == 1 and MOMENT_MARGIN > 0.4
    # Noisy replicates widen the allowance beyond the margin ...
    noisy = choose_by_moments(0.10, 0.070, replicates([0.10, 0.10, 0.10], sd=0.02),
                              replicates([0.058, 0.080, 0.070], sd=0.02))
    assert noisy.chosen == 1
    # ... quiet ones do not: 1.2 points closer with tiny noise chooses three types.
    assert choose_by_moments(0.10, 0.070, vote, replicates([0.058, 0.080, 0.070])).chosen == 3


def test_one_replicate_falls_back_to_the_margin() -> None:
    choice = choose_by_moments(0.1, 0.07, np.array([[0.1], [0.1]]), np.array([[0.06], [0.07]]))
    assert choice.chosen == 2 and choice.twin_sd == (0.0, 0.0)



def test_types_passed_over_on_the_replicates_noise_alone_are_left_to_the_curve() -> None:
    # ZenCrowd_in's pattern on 5 replicates: three types reproduce both errors (gap 0.36)
    # against one type's 2.27, one type kept only by the noise allowance (two standard errors)
    noisy = choose_by_moments(0.2608, 0.2407, replicates([0.2471, 0.2447, 0.2580, 0.2532],
                                                         sd=0.03),
                              replicates([0.2317, 0.2565, 0.2399, 0.2570], sd=0.03))
    assert noisy.chosen == 1 and noise_kept(noisy) == (3,)
    # little noise: the moments decide (three types); within the margin: the fewer, decided
    clear = choose_by_moments(0.2608, 0.2407, replicates([0.2471, 0.2447, 0.2580, 0.2532]),
                              replicates([0.2317, 0.2565, 0.2399, 0.2570]))
    assert clear.chosen == 3 and noise_kept(clear) == ()
    close = choose_by_moments(0.2608, 0.2407, replicates([0.2590, 0.2447, 0.2600, 0.2532]),
                              replicates([0.2400, 0.2565, 0.2407, 0.2570]))
    assert close.chosen == 1 and noise_kept(close) == ()
