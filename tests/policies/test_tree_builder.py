"""The compiled tree builder grows scikit-learn's trees: node for node, bit for bit.

``marketsim.policies._native.tree_builder`` is built by ``pip install``; these tests fail (they
do not skip) when it is missing, since the random-forest policy's forests would then fit about
5 times slower.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marketsim.policies import bagging
from marketsim.policies._native.tree_builder import grow as grow_nodes
from marketsim.policies._native.tree_builder import splitter_state
from marketsim.policies.bagging import (
    BootstrapForest,
    _compiled_grower,
    _public_grower,
    _same_trees,
    tree_grower,
)


def problem(kind: str, n: int, n_features: int, n_classes: int,
            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Rows of one kind and a target that depends on the first column, with noise."""
    if kind == "counts":  # the histogram path only
        x = rng.poisson(rng.uniform(0.1, 5.0), size=(n, n_features)).astype(np.float32)
    elif kind == "continuous":  # the sort path only
        x = rng.random((n, n_features)).astype(np.float32)
    elif kind == "policy":  # the random-forest policy's rows: entropy, degree, histogram
        x = rng.poisson(1.0, size=(n, n_features)).astype(np.float32)
        x[:, 0] = np.where(rng.random(n) < 0.3, 0.0, rng.random(n))
        x[:, 1 % n_features] = rng.integers(3, 24, size=n)
    elif kind == "near_ties":  # values 6e-8 apart (scikit-learn's 1e-7 ties), negatives, big
        base = rng.choice(np.array([0.5, 1.0, -3.0, 300.0, 0.0], dtype=np.float32),
                          size=(n, n_features))
        x = (base + rng.integers(0, 4, size=(n, n_features)) * np.float32(6e-8)).astype(
            np.float32)
    elif kind == "wide_ints":  # integers past 255 (sort path) beside constant columns
        x = rng.integers(0, 300, size=(n, n_features)).astype(np.float32)
        x[:, : n_features // 2] = 7.0
    else:
        raise ValueError(kind)
    score = x[:, 0].astype(np.float64) * 0.3 + rng.random(n) * n_classes
    return x, score.astype(np.intp) % n_classes


KINDS = ("counts", "continuous", "policy", "near_ties", "wide_ints")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("max_depth", [None, 1, 3, 10])
def test_grows_the_trees_of_fit(kind: str, max_depth: int | None) -> None:
    rng = np.random.default_rng(abs(hash((kind, max_depth))) % 2**32)
    for _ in range(12):
        n = int(rng.integers(2, 2500))
        n_features = int(rng.integers(1, 25))
        max_features = int(rng.integers(1, n_features + 1))
        x, y = problem(kind, n, n_features, int(rng.integers(1, 5)), rng)
        seed = int(rng.integers(2**31 - 1))
        compiled = _compiled_grower("entropy", max_depth, max_features)(x, y, seed)
        public = _public_grower("entropy", max_depth, max_features)(x, y, seed)
        assert _same_trees(compiled, public), (kind, n, n_features, max_features)
        np.testing.assert_array_equal(compiled.predict_proba(x), public.predict_proba(x))


def test_large_nodes_evaluate_every_cut() -> None:
    """Past 32,768 samples a node scans every cut (no pure-run skip): still fit's tree."""
    rng = np.random.default_rng(3)
    x, y = problem("policy", 40_000, 4, 2, rng)
    for seed in (1, 2):
        assert _same_trees(_compiled_grower("entropy", 4, 3)(x, y, seed),
                           _public_grower("entropy", 4, 3)(x, y, seed))


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.sampled_from([0.0, 1.0, 2.0, 2.00000006, 0.5, -1.0, 256.0]),
                    min_size=6, max_size=120),
    n_features=st.integers(1, 4),
    n_classes=st.integers(1, 3),
    seed=st.integers(0, 2**31 - 2),
)
def test_hostile_small_problems(values: list[float], n_features: int, n_classes: int,
                                seed: int) -> None:
    """Few rows, many ties, values closer than 1e-7, one class: fit's tree all the same."""
    n = len(values) // n_features
    if n < 1:
        return
    x = np.asarray(values[: n * n_features], dtype=np.float32).reshape(n, n_features)
    y = (np.arange(n) * 7 + seed) % n_classes
    max_features = 1 + seed % n_features
    assert _same_trees(_compiled_grower("entropy", None, max_features)(x, y, seed),
                       _public_grower("entropy", None, max_features)(x, y, seed))


def test_more_classes_than_the_builder_takes_go_to_scikit_learn() -> None:
    """Past 255 classes (the builder's uint8 codes) the grower hands over to scikit-learn."""
    rng = np.random.default_rng(9)
    x = rng.random((900, 3)).astype(np.float32)
    y = np.arange(900) % 300
    assert _same_trees(_compiled_grower("entropy", 4, 2)(x, y, 3),
                       _public_grower("entropy", 4, 2)(x, y, 3))


def test_the_policy_uses_it_for_entropy_and_falls_back_for_gini() -> None:
    tree_grower.cache_clear()
    assert tree_grower("entropy", 10, 10).__qualname__.startswith("_compiled_grower")
    assert tree_grower("gini", 10, 10).__qualname__.startswith("_public_grower")
    with pytest.raises(ValueError, match="entropy"):
        _compiled_grower("gini", 10, 3)


def test_forest_predictions_are_those_of_scikit_learns_trees(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole BootstrapForest, compiled trees against scikit-learn's builder."""
    rng = np.random.default_rng(11)
    x, y = problem("policy", 6000, 23, 2, rng)
    x_test, _ = problem("policy", 2000, 23, 2, rng)
    fast = BootstrapForest(random_state=4).fit(x, y.astype(bool)).predict_proba(x_test)
    monkeypatch.setattr(bagging, "tree_grower", _public_grower)
    slow = BootstrapForest(random_state=4).fit(x, y.astype(bool)).predict_proba(x_test)
    np.testing.assert_array_equal(fast, slow)


def _arrays(capacity: int, n_classes: int) -> list[np.ndarray]:
    types = (np.int64, np.int64, np.int64, np.float64, np.float64, np.int64, np.float64,
             np.uint8)
    return [np.empty(capacity, dtype=t) for t in types] + [np.empty((capacity, n_classes))]


def test_grow_refuses_what_it_cannot_build() -> None:
    x = np.random.default_rng(0).random((50, 3)).astype(np.float32)
    y = ((x[:, 0] * 10).astype(int) % 2).astype(np.uint8)  # five stripes: a deep tree
    with pytest.raises(ValueError, match="too small"):
        grow_nodes(x, y, 2, 10, 3, 5, *_arrays(3, 2))
    with pytest.raises(ValueError, match="n_classes"):
        grow_nodes(x, y + 1, 2, 10, 3, 5, *_arrays(99, 2))
    with pytest.raises(ValueError, match="float32"):
        grow_nodes(x.astype(np.float64), y, 2, 10, 3, 5, *_arrays(99, 2))
    with pytest.raises(ValueError, match="items"):
        grow_nodes(x, y[:10], 2, 10, 3, 5, *_arrays(99, 2))
    count, depth = grow_nodes(x, y, 2, 10, 3, 5, *_arrays(99, 2))
    assert 1 <= count <= 99 and 0 <= depth <= 10


def test_splitter_state_is_numpys_legacy_draw() -> None:
    """The splitter's rand_r state: RandomState(seed).randint(0, 2**31 - 1), for any seed."""
    seeds = [0, 1, 2, 5489, 2**31 - 2, 2**31 - 1, 2**31, 2**32 - 1]
    seeds += np.random.default_rng(8).integers(0, 2**32, size=300).tolist()
    for seed in seeds:
        assert splitter_state(seed) == np.random.RandomState(seed).randint(0, 2**31 - 1), seed
    with pytest.raises(ValueError, match="2\\*\\*32"):
        splitter_state(2**32)
    with pytest.raises(OverflowError):
        splitter_state(-1)


def test_without_the_extension_the_same_forest_comes_from_scikit_learn(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No C compiler at install: the policy's trees come from scikit-learn, the same ones."""
    rng = np.random.default_rng(5)
    x, y = problem("policy", 3000, 23, 2, rng)
    built = BootstrapForest(random_state=2).fit(x, y).predict_proba(x)
    monkeypatch.setattr(bagging, "COMPILED", False)
    tree_grower.cache_clear()
    try:
        with pytest.raises(ImportError, match="not built"):
            _compiled_grower("entropy", 10, 10)
        assert tree_grower("entropy", 10, 10).__qualname__.startswith("_public_grower")
        np.testing.assert_array_equal(BootstrapForest(random_state=2).fit(x, y).predict_proba(x),
                                      built)
    finally:
        tree_grower.cache_clear()
