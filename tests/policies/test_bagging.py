"""BootstrapForest: the random-forest policy's bagged trees."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from marketsim.policies import bagging
from marketsim.policies.bagging import (
    TESTED_SKLEARN,
    BootstrapForest,
    _public_grower,
    _same_trees,
    private_api_tested,
    tree_grower,
)


def noisy_threshold(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """y = [x0 > 0.7] with 5 % of the targets flipped, plus four noise columns."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 5))
    y = (x[:, 0] > 0.7) ^ (rng.random(n) < 0.05)
    return x, y


def test_learns_a_threshold_and_predicts_probabilities() -> None:
    x, y = noisy_threshold(4000, 0)
    x_test, y_test = noisy_threshold(2000, 1)
    forest = BootstrapForest(n_trees=10, sample_fraction=0.2, max_depth=5, max_features=3,
                             random_state=0).fit(x, y)
    proba = forest.predict_proba(x_test)
    assert proba.shape == (2000, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert list(forest.classes_) == [False, True]
    assert roc_auc_score(y_test, proba[:, 1]) > 0.9
    assert len(forest.estimators_) == 10
    assert forest.max_features_ == 3


def test_same_seed_same_forest_other_seed_differs() -> None:
    x, y = noisy_threshold(1000, 2)
    a = BootstrapForest(random_state=5).fit(x, y).predict_proba(x)
    b = BootstrapForest(random_state=5).fit(x, y).predict_proba(x)
    c = BootstrapForest(random_state=6).fit(x, y).predict_proba(x)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_boolean_target_grows_the_trees_of_its_integer_codes() -> None:
    """A two-class boolean target (the policy's) skips np.unique: same trees as 0/1 targets."""
    x, y = noisy_threshold(1000, 4)
    a = BootstrapForest(random_state=3).fit(x, y)
    b = BootstrapForest(random_state=3).fit(x, y.astype(np.int64))
    assert list(a.classes_) == [False, True] and a.classes_.dtype == np.bool_
    for left, right in zip(a.estimators_, b.estimators_, strict=True):
        assert np.array_equal(left.tree_.threshold, right.tree_.threshold)
        assert np.array_equal(left.tree_.value, right.tree_.value)
    np.testing.assert_array_equal(a.predict_proba(x), b.predict_proba(x))


def test_tree_whose_sample_misses_a_class_gives_it_zero() -> None:
    # One positive row among 1,000: with 1 % samples most trees never see it.
    x = np.arange(1000, dtype=float)[:, None]
    y = np.zeros(1000, dtype=bool)
    y[999] = True
    forest = BootstrapForest(n_trees=20, sample_fraction=0.01, max_features=1,
                             random_state=0).fit(x, y)
    assert any(tree.classes_.size == 1 for tree in forest.estimators_)
    proba = forest.predict_proba(x)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert proba[0, 1] == 0.0  # far from the positive row: no tree says positive


def test_max_features_capped_at_columns() -> None:
    x, y = noisy_threshold(200, 3)
    forest = BootstrapForest(max_features=50).fit(x, y)
    assert forest.max_features_ == 5 and forest.max_features == 50


@pytest.mark.parametrize("criterion", ["entropy", "gini"])
@pytest.mark.parametrize("max_depth", [10, 3, None])
def test_the_chosen_grower_grows_the_trees_of_fit(criterion: str, max_depth: int | None) -> None:
    """Whichever grower the forest uses gives DecisionTreeClassifier.fit's trees, node for
    node, and the same predicted probabilities: two classes, one class (a bootstrap sample may
    miss the rare one), three classes and codes with a gap, duplicated rows."""
    rng = np.random.default_rng(11)
    x, y = noisy_threshold(600, 12)
    x = np.vstack([x, x[:100]]).astype(np.float32)  # duplicated rows
    y = np.concatenate([y, y[:100]]).astype(np.intp)
    tree_grower.cache_clear()
    chosen = tree_grower(criterion, max_depth, 3)
    public = _public_grower(criterion, max_depth, 3)
    targets = [y, np.zeros_like(y), np.ones_like(y), rng.integers(0, 3, y.size),
               2 * y.astype(np.intp)]
    for k, codes in enumerate(targets):
        for seed in (0, 1, 2**31 - 2):
            rows = rng.integers(0, y.size, 400)
            sample = np.take(x, rows, axis=0)
            a = chosen(sample, codes[rows], seed)
            b = public(sample, codes[rows], seed)
            assert _same_trees(a, b), (k, seed)
            np.testing.assert_array_equal(a.predict_proba(x, check_input=False),
                                          b.predict_proba(x, check_input=False))


def test_scikit_learn_private_state_is_used_only_for_tested_releases(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Another scikit-learn release than those tested: the forest's trees come from fit, the
    same forest; the tested range is the one pyproject.toml declares."""
    import sklearn
    assert private_api_tested("1.4.0") and private_api_tested("1.9.1")
    assert not private_api_tested("1.10.0") and not private_api_tested("1.3.2")
    assert not private_api_tested("2.0.dev0")
    x, y = noisy_threshold(800, 13)
    tree_grower.cache_clear()
    expected = BootstrapForest(random_state=4).fit(x, y).predict_proba(x)
    monkeypatch.setattr(sklearn, "__version__", "1.10.0")
    tree_grower.cache_clear()
    assert tree_grower("entropy", 10, 5).__qualname__.startswith("_public_grower")
    np.testing.assert_array_equal(BootstrapForest(random_state=4).fit(x, y).predict_proba(x),
                                  expected)
    tree_grower.cache_clear()
    (low_major, low_minor), (high_major, high_minor) = TESTED_SKLEARN
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert f'"scikit-learn>={low_major}.{low_minor},<{high_major}.{high_minor}"' in pyproject


def test_a_grower_that_does_not_match_fit_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """If scikit-learn's private API moves or the extension is missing (an error), or the
    trees differ, the forest falls back to fit: same forest either way."""
    x, y = noisy_threshold(800, 13)
    expected = BootstrapForest(random_state=4).fit(x, y).predict_proba(x)

    def broken(*_: object) -> object:
        raise TypeError("__init__() takes 5 positional arguments but 6 were given")

    def wrong(criterion: str, max_depth: int | None, max_features: int) -> object:
        return _public_grower("gini" if criterion == "entropy" else "entropy", max_depth,
                              max_features)

    for fake in (broken, wrong):
        tree_grower.cache_clear()
        monkeypatch.setattr(bagging, "_compiled_grower", fake)
        grow = tree_grower("entropy", 10, 5)
        assert grow.__qualname__.startswith("_public_grower")
        np.testing.assert_array_equal(
            BootstrapForest(random_state=4).fit(x, y).predict_proba(x), expected)
    tree_grower.cache_clear()
