"""The identifiability diagnostic: the cheap overall z equals the pairwise one, and switching
the diagnostic off silences it without changing any result."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from marketsim.aggregation.dawid_skene import DawidSkene
from marketsim.aggregation.identifiability import (
    NotIdentifiableWarning,
    excess_agreement_z,
    identifiability_checks,
    pair_agreement_test,
)
from marketsim.data.labels import LabelSet
from tests.helpers import example_counts


@st.composite
def label_sets(draw: st.DrawFn) -> LabelSet:
    """Small random label sets, repeated (task, worker) pairs allowed."""
    n = draw(st.integers(1, 25))
    m = draw(st.integers(2, 10))
    k = draw(st.integers(2, 4))
    size = draw(st.integers(1, 80))
    ints = st.lists(st.integers(0, 10**6), min_size=size, max_size=size)
    tasks = np.array(draw(ints)) % n
    workers = np.array(draw(ints)) % m
    labels = np.array(draw(ints)) % k
    return LabelSet(tasks, workers, labels, n, m, k)


@pytest.mark.parametrize("examples", example_counts(60, 300))
def test_fast_z_equals_pairwise_z(examples: int) -> None:
    @settings(max_examples=examples, deadline=None)
    @given(data=label_sets())
    @example(data=LabelSet([0, 0], [0, 1], [0, 0], 1, 2, 2))  # one class only: chance agreement 1
    def check(data: LabelSet) -> None:
        _fast_z_equals_pairwise_z(data)

    check()


def _fast_z_equals_pairwise_z(data: LabelSet) -> None:
    z_pairs, _, _, pairs = pair_agreement_test(data)
    z_fast, overlap = excess_agreement_z(data)
    if pairs:
        assert abs(z_fast - z_pairs) <= 1e-9 * max(1.0, abs(z_pairs))
        assert overlap >= pairs  # every overlapping worker pair shares at least one task
    else:  # no shared task, or every label the same class (chance agreement 1): no statistic
        assert z_fast == 0.0


def random_crowd(seed: int) -> LabelSet:
    """Workers answering uniformly at random: nothing to identify."""
    rng = np.random.default_rng(seed)
    tasks = np.repeat(np.arange(200), 5)
    workers = np.concatenate([rng.choice(20, 5, replace=False) for _ in range(200)])
    return LabelSet(tasks, workers, rng.integers(0, 2, tasks.size), 200, 20, 2)


def test_random_crowd_warns_and_the_switch_silences_it() -> None:
    data = random_crowd(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        on = DawidSkene(max_iter=20).fit(data)
    assert any(issubclass(w.category, NotIdentifiableWarning) for w in caught)
    with warnings.catch_warnings(record=True) as caught, identifiability_checks(False):
        warnings.simplefilter("always")
        off = DawidSkene(max_iter=20).fit(data)
    assert not any(issubclass(w.category, NotIdentifiableWarning) for w in caught)
    np.testing.assert_array_equal(on.proba_, off.proba_)
    # The switch is scoped: outside the block the diagnostic speaks again.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DawidSkene(max_iter=20).fit(data)
    assert any(issubclass(w.category, NotIdentifiableWarning) for w in caught)
