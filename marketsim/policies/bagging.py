"""A bagged forest of scikit-learn decision trees, each fitted on its own bootstrap sample.

Seed 000's forest (MATLAB ``TreeBagger``, ``InBagFraction`` 0.2) gives every tree a bootstrap
sample of 20 % of the pooled rows. scikit-learn's ``RandomForestClassifier(max_samples=0.2)``
draws the same sample but hands every tree *all* rows, with the bootstrap counts as sample
weights, and re-encodes the full target per tree; on the policy's 20,000-row training sets
that is slower than fitting each tree on its sample, with the same held-out accuracy
(``benchmarks/bench_market.py --only forest``; figures in docs/performance.md). The trees
are scikit-learn's ``DecisionTreeClassifier`` with the same criterion, depth and features per
split; repeated rows of a bootstrap sample weigh like sklearn's counts.
"""

from __future__ import annotations

import numpy as np


class BootstrapForest:
    """Bagged decision trees with per-tree feature subsampling (a random forest).

    Parameters
    ----------
    n_trees : int
        Number of trees.
    sample_fraction : float
        Bootstrap sample size per tree, as a fraction of the rows (drawn with replacement).
    max_depth : int or None
    max_features : int
        Features tried at each split (capped at the number of columns).
    criterion : {"entropy", "gini", "log_loss"}
    random_state : int
        Seed of the bootstrap draws and of the trees.

    Attributes
    ----------
    estimators_ : list of DecisionTreeClassifier
    classes_ : ndarray
        Sorted distinct targets seen in ``fit``.
    max_features_ : int
        Features tried per split, ``max_features`` capped at the number of columns.
    """

    def __init__(
        self,
        *,
        n_trees: int = 10,
        sample_fraction: float = 0.2,
        max_depth: int | None = 10,
        max_features: int = 10,
        criterion: str = "entropy",
        random_state: int = 0,
    ) -> None:
        self.n_trees = n_trees
        self.sample_fraction = sample_fraction
        self.max_depth = max_depth
        self.max_features = max_features
        self.criterion = criterion
        self.random_state = random_state

    def fit(self, x: np.ndarray, y: np.ndarray) -> BootstrapForest:
        """Fit ``n_trees`` trees, each on ``round(sample_fraction * n)`` rows drawn with
        replacement (at least one)."""
        # scikit-learn is imported here, when a forest is fitted: importing it costs 1.5 s,
        # which every other command and arm would pay for nothing.
        from sklearn import config_context
        from sklearn.tree import DecisionTreeClassifier

        x = np.ascontiguousarray(x, dtype=np.float32)
        # The rows are checked once here, so each tree may skip scikit-learn's own checks
        # (parameters, array validation, missing-value scan: about a third of a small tree's
        # fit). They change nothing: finite float32 rows build the same tree either way.
        checked = bool(np.isfinite(x).all())
        y = np.asarray(y)
        if y.dtype == np.bool_ and y.any() and not y.all():
            # np.unique's answer for a two-class boolean target, without its sort
            self.classes_, codes = np.array([False, True]), y.astype(np.intp)
        else:
            self.classes_, codes = np.unique(y, return_inverse=True)
        n = x.shape[0]
        size = max(1, int(round(self.sample_fraction * n)))
        self.max_features_ = min(int(self.max_features), x.shape[1])
        rng = np.random.default_rng(self.random_state)
        seeds = rng.integers(2**31 - 1, size=self.n_trees)
        self.estimators_ = []
        with config_context(skip_parameter_validation=checked):
            for seed in seeds:  # one tree per iteration; each fit is vectorised inside sklearn
                rows = rng.integers(n, size=size)
                tree = DecisionTreeClassifier(
                    criterion=self.criterion,
                    max_depth=self.max_depth,
                    max_features=self.max_features_,
                    random_state=int(seed),
                )
                sample = np.take(x, rows, axis=0)  # x[rows], at a third of the time
                self.estimators_.append(tree.fit(sample, codes[rows], check_input=not checked))
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """Mean of the trees' class probabilities, columns in the order of ``classes_`` (a tree
        whose sample lacked a class gives it probability 0)."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        checked = bool(np.isfinite(x).all())  # then the per-tree checks can be skipped
        out = np.zeros((x.shape[0], self.classes_.size))
        for tree in self.estimators_:
            out[:, tree.classes_] += tree.predict_proba(x, check_input=not checked)
        return out / len(self.estimators_)
