"""The sparse structures and column kernels the fast EM paths use (issue #17): the very numbers
of the obvious scipy/numpy expressions they replace (Dawid–Skene's own EM is checked against a
plain implementation in ``test_dawid_skene.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from marketsim.aggregation._numeric import column_products, column_sums, normalise_log
from marketsim.aggregation.identifiability import _presence, excess_agreement_z
from marketsim.aggregation.metrics import expected_correct
from marketsim.data.incidence import sort_by_task, sort_within_rows
from marketsim.data.labels import LabelSet
from tests.aggregation.test_dawid_skene import random_crowd


def scipy_incidence(data: LabelSet) -> sp.csr_matrix:
    """The incidence matrix as scipy's COO conversion builds it (the previous code)."""
    cols = data.workers * data.n_classes + data.labels
    mat = sp.csr_matrix((np.ones(data.n_labels), (data.tasks, cols)),
                        shape=(data.n_tasks, data.n_workers * data.n_classes))
    mat.sum_duplicates()
    return mat


def assert_scipy_incidence(data: LabelSet, t: np.ndarray, w: np.ndarray) -> None:
    """``data.incidence`` has scipy's arrays and dtypes; ``has_repeated_pairs`` is right."""
    ours, theirs = data.incidence, scipy_incidence(data)
    for name in ("indptr", "indices", "data"):
        got, want = getattr(ours, name), getattr(theirs, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
    pairs = set(zip(t.tolist(), w.tolist(), strict=True))
    assert data.has_repeated_pairs == (len(pairs) < t.size)


@pytest.fixture(params=["default", "row sort"])
def row_sort(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run a test with the default thresholds and again with every set of labels built by the
    row sort or the sort by blocks of tasks (ROW_SORT_MIN_LABELS = BLOCK_SORT_MIN_LABELS = 0)."""
    if request.param == "row sort":
        monkeypatch.setattr("marketsim.data.labels.ROW_SORT_MIN_LABELS", 0)
        monkeypatch.setattr("marketsim.data.labels.BLOCK_SORT_MIN_LABELS", 0)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.usefixtures("row_sort")
def test_incidence_is_scipys_canonical_matrix(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m, k = int(rng.integers(1, 30)), int(rng.integers(1, 8)), int(rng.integers(1, 5))
    size = int(rng.integers(0, 90))
    t, w, lab = rng.integers(0, n, size), rng.integers(0, m, size), rng.integers(0, k, size)
    if seed % 4 in (0, 1):  # no triple twice, in (task, worker, label) order: no sort
        keep = np.unique(t * m * k + w * k + lab)
        t, w, lab = keep // (m * k), keep // k % m, keep % k
    if seed % 4 in (1, 2):  # grouped by task, shuffled within each task (as files often are)
        order = np.argsort(t + rng.random(t.size) / 2, kind="stable")
        t, w, lab = t[order], w[order], lab[order]
    data = LabelSet(t, w, lab, n, m, k)
    assert_scipy_incidence(data, t, w)


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.usefixtures("row_sort")
def test_incidence_with_keys_beyond_32_bits_is_scipys(grouped: bool) -> None:
    """100,000 tasks x 20,000 workers x 2 classes: keys past 2**31 take the int64 path."""
    rng = np.random.default_rng(3)
    t = rng.integers(0, 100_000, 500)
    w, lab = rng.integers(0, 20_000, 500), rng.integers(0, 2, 500)
    if grouped:
        t = np.sort(t)
    data = LabelSet(t, w, lab, 100_000, 20_000, 2)
    ours, theirs = data.incidence, scipy_incidence(data)
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(ours, name), getattr(theirs, name)), name


@pytest.mark.parametrize(
    ("degrees", "dtype"),
    [
        ([10] * 50, np.int32),  # equal rows: one 2-D sort
        ([4, 0, 7, 1, 5, 6, 7, 2], np.int32),  # padded to the longest row (with empty rows)
        ([3, 40, 2, 0, 1], np.int64),  # one long row: the stable sort
        ([2, 300, 1, 0, 5], np.int32),  # one row longer than 128: the default sort
        ([7] * 20, np.int64),
        ([1, 1, 1], np.int32),
    ],
)
def test_sort_within_rows_is_a_whole_sort(degrees: list[int], dtype: type) -> None:
    """Rows of increasing key ranges, shuffled within (and with repeated keys): the row sort,
    whatever its path, gives ``np.sort``."""
    rng = np.random.default_rng(len(degrees))
    degree = np.array(degrees, dtype=np.int64)
    rows = np.repeat(np.arange(degree.size), degree)
    keys = (rows * 1000 + rng.integers(0, 30, rows.size)).astype(dtype)
    want = np.sort(keys)
    sort_within_rows(keys, degree)
    assert keys.dtype == dtype and np.array_equal(keys, want)


@pytest.mark.parametrize(("n_tasks", "dtype"),
                         [(50, np.int32), (70_000, np.int32), (300_000, np.int64)])
def test_sort_by_task_is_a_whole_sort(n_tasks: int, dtype: type) -> None:
    """Keys task * columns + column of shuffled labels (uneven tasks, some empty, repeated
    keys), sorted by blocks of tasks: ``np.sort``, for one task per block and for several."""
    rng = np.random.default_rng(n_tasks)
    tasks = rng.integers(0, n_tasks, 3 * n_tasks // 2 + 100)
    keys = (tasks * 7 + rng.integers(0, 7, tasks.size)).astype(dtype)
    got = sort_by_task(keys, tasks, np.bincount(tasks, minlength=n_tasks))
    assert got.dtype == dtype and np.array_equal(got, np.sort(keys))


@pytest.mark.parametrize("shape", ["equal", "variable", "repeats", "long row", "shuffled"])
@pytest.mark.usefixtures("row_sort")
def test_grouped_labels_build_scipys_incidence(shape: str) -> None:
    """Labels in task order but not sorted within tasks (equal or variable numbers per task,
    repeated (task, worker) pairs, one task with most labels), or in no order at all: the
    incidence matrix is the one scipy's COO conversion builds, index dtypes included."""
    rng = np.random.default_rng(11)
    n, m, k = 400, 600, 3
    degree = {"equal": np.full(n, 8), "variable": rng.integers(0, 12, n),
              "repeats": rng.integers(1, 12, n), "long row": np.r_[500, np.ones(n - 1, int)],
              "shuffled": rng.integers(0, 12, n)}[shape]
    t = np.repeat(np.arange(n), degree)
    w, lab = rng.integers(0, 20, t.size), rng.integers(0, k, t.size)
    if shape != "repeats":  # distinct workers per task
        w = (np.arange(t.size) - np.repeat(np.cumsum(degree) - degree, degree)) * 7 % m
        order = np.argsort(t + rng.random(t.size) / 2, kind="stable")
        w = w[order]
    if shape == "shuffled":
        order = rng.permutation(t.size)
        t, w, lab = t[order], w[order], lab[order]
    data = LabelSet(t, w, lab, n, m, k)
    assert_scipy_incidence(data, t, w)
    assert data.has_repeated_pairs == (shape == "repeats")


@pytest.mark.usefixtures("row_sort")
def test_a_single_label_has_a_one_entry_incidence() -> None:
    data = LabelSet.from_arrays([1], [0], [1], n_tasks=2, n_workers=1, n_classes=2)
    assert data.incidence.toarray().tolist() == [[0.0, 0.0], [0.0, 1.0]]
    assert not data.has_repeated_pairs


@pytest.mark.usefixtures("row_sort")
def test_empty_label_set_has_an_empty_incidence() -> None:
    data = LabelSet.from_arrays([], [], [], n_tasks=3, n_workers=2, n_classes=2)
    assert data.incidence.shape == (3, 4) and data.incidence.nnz == 0
    assert not data.has_repeated_pairs


@pytest.mark.parametrize("repeats", [False, True])
def test_agreement_z_from_cached_counts_equals_the_sparse_count(repeats: bool) -> None:
    data = random_crowd(3, seed=4, repeats=repeats)
    assert data.has_repeated_pairs == repeats
    g, b = _presence(data)
    d = np.diff(g.indptr).astype(np.float64)
    r = np.diff(b.indptr).astype(np.float64)
    overlap = (d * (d - 1.0)).sum() / 2.0
    agree = (r * (r - 1.0)).sum() / 2.0
    c = float(((np.bincount(data.labels, minlength=3) / data.n_labels) ** 2).sum())
    z = (agree - c * overlap) / np.sqrt(overlap * c * (1.0 - c))
    assert excess_agreement_z(data) == (z, overlap)


def test_column_kernels_give_the_bits_of_the_plain_expressions() -> None:
    data = random_crowd(4, seed=2)
    rng = np.random.default_rng(0)
    x = rng.random((data.n_workers * 4, 4))
    q = rng.random((data.n_tasks, 4))
    assert np.array_equal(column_products(data.incidence, x), data.incidence @ x)
    assert np.array_equal(column_products(data.incidence.T, q), data.incidence.T @ q)
    big = rng.random((100_001, 3))
    assert np.array_equal(column_sums(big), big.sum(axis=0))
    assert np.array_equal(column_sums(np.asfortranarray(big)), big.sum(axis=0))
    assert np.array_equal(column_sums(np.zeros((0, 3))), np.zeros(3))


@pytest.mark.parametrize("k", [2, 3, 5, 8])
@pytest.mark.parametrize("repeats", [False, True])
def test_one_coin_counts_are_the_diagonal_of_the_full_product(k: int, repeats: bool) -> None:
    """The one-coin M-step's expected correct labels per worker: the same bits as the diagonal
    of ``incidence.T @ proba`` summed by einsum (the former computation), whatever the
    posteriors' memory layout."""
    data = random_crowd(k, seed=20 + k, repeats=repeats)
    proba = np.random.default_rng(k).dirichlet(np.ones(k), size=data.n_tasks)
    counts = (data.incidence.T @ proba).reshape(data.n_workers, k, k)
    want = np.einsum("jcc->j", counts)
    for layout in (proba, np.asfortranarray(proba)):
        correct, n = expected_correct(data, layout)
        assert np.array_equal(correct, want)
        assert np.array_equal(n, np.bincount(data.workers, minlength=data.n_workers))


def test_two_class_normalisation_is_the_general_log_sum_exp_bit_for_bit() -> None:
    rng = np.random.default_rng(1)
    log_joint = rng.normal(-20.0, 30.0, size=(10_000, 2))
    log_joint[::7, 1] = log_joint[::7, 0]  # exact ties
    log_joint[::11, 0] = -np.inf  # a class with prior 0
    shift = np.maximum(log_joint[:, 0], log_joint[:, 1])
    want = np.exp(log_joint - shift[:, None])
    total = want[:, 0] + want[:, 1]
    want /= total[:, None]
    want_ll = float(shift.sum() + np.log(total).sum())
    before = log_joint.copy()
    got, ll = normalise_log(log_joint)
    assert np.array_equal(log_joint, before)  # without ``out`` the input is left alone
    assert np.array_equal(got, want) and ll == want_ll
    class_major = np.asfortranarray(log_joint)
    got, ll = normalise_log(class_major, out=class_major)
    assert got is class_major and np.array_equal(got, want) and ll == want_ll
