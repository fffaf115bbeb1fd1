"""A bagged forest of scikit-learn decision trees, each fitted on its own bootstrap sample.

Seed 000's forest (MATLAB ``TreeBagger``, ``InBagFraction`` 0.2) gives every tree a bootstrap
sample of 20 % of the pooled rows. scikit-learn's ``RandomForestClassifier(max_samples=0.2)``
draws the same sample but hands every tree *all* rows, with the bootstrap counts as sample
weights, and re-encodes the full target per tree; on the policy's 20,000-row training sets
that is slower than fitting each tree on its sample, with the same held-out accuracy
(``benchmarks/bench_market.py --only forest``; figures in docs/explanation/performance/). The
trees are scikit-learn's ``DecisionTreeClassifier`` with the same criterion, depth and features
per split; repeated rows of a bootstrap sample weigh like sklearn's counts.

Each tree is grown by the package's C extension ``_native.tree_builder`` (``pip install``
compiles it; entropy criterion): the trees ``DecisionTreeClassifier.fit`` grows, node for node,
from per-node class histograms of the small-integer feature columns instead of a sort per
feature per node (:func:`_compiled_grower`). Its node arrays are loaded into a scikit-learn
``Tree`` through the tree's pickling state, the one scikit-learn class the package touches
that is not public. That is done only for the scikit-learn releases it was tested with
(:data:`TESTED_SKLEARN`, the range ``pyproject.toml`` declares) and checked against ``fit`` on
first use; otherwise — another release, another criterion, no compiler — the trees come from
``DecisionTreeClassifier.fit`` itself, the same trees, slower
(``tests/policies/test_tree_builder.py`` and ``tests/policies/test_bagging.py`` check both
paths).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

try:  # the package's C extension, compiled by pip install; optional (see _compiled_grower)
    from marketsim.policies._native.tree_builder import grow as grow_nodes
    from marketsim.policies._native.tree_builder import splitter_state

    COMPILED = True
except ImportError:  # not built: DecisionTreeClassifier.fit grows the same trees, slower
    COMPILED = False

#: ``grow(sample, codes, seed) -> DecisionTreeClassifier``: a fitted tree.
Grower = Callable[[np.ndarray, np.ndarray, int], Any]

#: scikit-learn releases whose ``Tree`` pickling state the compiled grower was tested with:
#: [low, high). ``pyproject.toml`` declares the same range; outside it, ``fit`` grows the trees.
TESTED_SKLEARN = ((1, 4), (1, 10))


def sklearn_release(version: str) -> tuple[int, int]:
    """(major, minor) of a scikit-learn version string (``"1.9.1"``, ``"1.10.dev0"``)."""
    major, minor = (version.split(".") + ["0"])[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def private_api_tested(version: str) -> bool:
    """Whether scikit-learn ``version`` is one the compiled grower's ``Tree`` state was
    tested with (:data:`TESTED_SKLEARN`)."""
    low, high = TESTED_SKLEARN
    return low <= sklearn_release(version) < high


def _public_grower(
    criterion: str, max_depth: int | None, max_features: int, check_input: bool = False
) -> Grower:
    """Trees grown by ``DecisionTreeClassifier.fit`` (``check_input``: let it check the
    rows, which the forest has not found all finite)."""
    from sklearn.tree import DecisionTreeClassifier  # see BootstrapForest.fit

    def grow(sample: np.ndarray, codes: np.ndarray, seed: int) -> Any:
        tree = DecisionTreeClassifier(criterion=criterion, max_depth=max_depth,
                                      max_features=max_features, random_state=seed)
        return tree.fit(sample, codes, check_input=check_input)

    return grow


def _split_codes(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)``, without its sort for 0/1 and one-class
    targets (what ``fit`` encodes the target with)."""
    if codes.size and codes.min() == codes.max():  # one class: np.unique's answer
        return codes[:1].copy(), np.zeros_like(codes)
    if codes.size and codes.min() == 0 and codes.max() == 1:
        return np.array([0, 1], dtype=codes.dtype), codes
    classes, encoded = np.unique(codes, return_inverse=True)
    return classes, encoded


def _compiled_grower(criterion: str, max_depth: int | None, max_features: int) -> Grower:
    """Trees grown by the C extension ``_native.tree_builder`` (entropy criterion only): the
    node arrays it fills are loaded into a scikit-learn ``Tree`` (its pickling state), wrapped in
    the fitted ``DecisionTreeClassifier`` that ``fit`` returns. Raises ImportError when the
    extension is not built, ValueError for another criterion or an untested scikit-learn."""
    if criterion not in ("entropy", "log_loss"):
        raise ValueError(f"the compiled tree builder grows entropy trees, not {criterion!r}")
    import sklearn
    from sklearn.tree import DecisionTreeClassifier

    if not private_api_tested(sklearn.__version__):
        raise ValueError(f"scikit-learn {sklearn.__version__} is outside the releases the "
                         f"compiled tree builder was tested with {TESTED_SKLEARN}")
    from sklearn.tree._tree import NODE_DTYPE, Tree

    if not COMPILED:
        raise ImportError(
            "marketsim.policies._native.tree_builder is not built (no C compiler?)")

    depth = np.iinfo(np.int32).max if max_depth is None else int(max_depth)
    public = _public_grower(criterion, max_depth, max_features)
    node_fields = ("left_child", "right_child", "feature", "threshold", "impurity",
                   "n_node_samples", "weighted_n_node_samples", "missing_go_to_left")
    field_types = (np.int64, np.int64, np.int64, np.float64, np.float64, np.int64, np.float64,
                   np.uint8)

    def grow(sample: np.ndarray, codes: np.ndarray, seed: int) -> Any:
        classes, encoded = _split_codes(codes)
        n, n_features = sample.shape
        if classes.size > 255 or n > 2**30:  # beyond the builder's uint8 classes, int32 rows
            return public(sample, codes, seed)
        capacity = 2 * n - 1 if depth >= 30 else min(2 * n - 1, 2 ** (depth + 1) - 1)
        columns = [np.empty(capacity, dtype=t) for t in field_types]
        left, right, feature, threshold, impurity, counts, weights, missing = columns
        value = np.empty((capacity, classes.size))
        # the splitter's rand_r state: RandomState(seed).randint(0, 2**31 - 1), as
        # scikit-learn's Splitter.init draws it, without building a RandomState (0.1 ms)
        state = splitter_state(seed)
        count, depth_seen = grow_nodes(
            np.ascontiguousarray(sample, dtype=np.float32), encoded.astype(np.uint8),
            classes.size, depth, max_features, state, left, right, feature, threshold, impurity,
            counts, weights, missing, value)
        nodes = np.zeros(count, dtype=NODE_DTYPE)
        for name, column in zip(node_fields, columns, strict=True):
            nodes[name] = column[:count]
        n_classes = np.array([classes.size], dtype=np.intp)
        tree = Tree(n_features, n_classes, 1)
        tree.__setstate__({"max_depth": depth_seen, "node_count": count, "nodes": nodes,
                           "values": value[:count].reshape(count, 1, classes.size)})
        model = DecisionTreeClassifier(criterion=criterion, max_depth=max_depth,
                                       max_features=max_features, random_state=seed)
        model.tree_, model.n_outputs_, model.n_features_in_ = tree, 1, n_features
        model.classes_, model.n_classes_, model.max_features_ = classes, n_classes[0], max_features
        return model

    return grow


def _same_trees(a: Any, b: Any) -> bool:
    """Whether two fitted trees have the same nodes, splits, impurities and leaf values."""
    fields = ("children_left", "children_right", "feature", "threshold", "value",
              "n_node_samples", "impurity", "weighted_n_node_samples")
    inner = a.tree_.children_left != -1
    return (all(np.array_equal(getattr(a.tree_, f), getattr(b.tree_, f)) for f in fields)
            and np.array_equal(a.tree_.missing_go_to_left[inner],
                               b.tree_.missing_go_to_left[inner])
            and a.tree_.max_depth == b.tree_.max_depth
            and np.array_equal(a.classes_, b.classes_))


def _check_problem(max_features: int) -> tuple[np.ndarray, np.ndarray]:
    """A small training set like the policy's: one continuous column, the others small counts
    (the histogram path), a target that depends on both."""
    rng = np.random.default_rng(0)
    n_columns = max(max_features, 3)
    x = rng.poisson(2.0, size=(400, n_columns)).astype(np.float32)
    x[:, 0] = rng.random(400)
    codes = (x[:, 0] + 0.2 * x[:, 1] + 0.3 * rng.random(400) > 1.0).astype(np.intp)
    return x, codes


@functools.cache
def tree_grower(criterion: str, max_depth: int | None, max_features: int) -> Grower:
    """The compiled grower when it grows ``fit``'s trees on a small problem (two classes, and
    one), else ``fit`` itself."""
    public = _public_grower(criterion, max_depth, max_features)
    x, codes = _check_problem(max_features)
    try:
        grow = _compiled_grower(criterion, max_depth, max_features)
        same = all(_same_trees(grow(x, target, 7), public(x, target, 7))
                   for target in (codes, np.ones_like(codes)))
    except Exception:  # noqa: BLE001 - no extension, another criterion, an untested
        return public  # scikit-learn or a moved private API: fit itself is always right
    return grow if same else public


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
        # scikit-learn is imported when a forest is fitted: importing it costs 1.5 s, which
        # every other command and arm would pay for nothing.
        from sklearn import config_context

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
        if checked:
            grow = tree_grower(self.criterion, self.max_depth, self.max_features_)
        else:  # non-finite rows: scikit-learn's own checks decide what to do with them
            grow = _public_grower(self.criterion, self.max_depth, self.max_features_, True)
        with config_context(skip_parameter_validation=checked):
            for seed in seeds:  # one tree per iteration; each fit is vectorised inside sklearn
                rows = rng.integers(n, size=size)
                sample = np.take(x, rows, axis=0)  # x[rows], at a third of the time
                self.estimators_.append(grow(sample, codes[rows], int(seed)))
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
