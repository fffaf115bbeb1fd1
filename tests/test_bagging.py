"""BootstrapForest: the random-forest policy's bagged trees."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

from marketsim.policies.bagging import BootstrapForest


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
