"""The optimised EM kernels (issue #17) against straightforward references.

Dawid–Skene's posteriors must match a plain implementation kept here (one scatter-add per
label, dense confusion arrays) to 1e-12; the sparse structures and column products the fast
path uses must be the very numbers of the obvious scipy/numpy expressions they replace.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from marketsim.aggregation import DawidSkene
from marketsim.aggregation._numeric import column_products, column_sums, normalise_log
from marketsim.aggregation.dawid_skene import (
    binary_confusion,
    binary_confusion_counts,
    confusion_counts,
    confusion_from_counts,
)
from marketsim.aggregation.identifiability import _presence, excess_agreement_z
from marketsim.aggregation.metrics import expected_correct
from marketsim.data.incidence import sort_by_task, sort_within_rows
from marketsim.data.labels import LabelSet

FLOOR = 1e-12


def reference_dawid_skene(
    data: LabelSet, n_iter: int, smoothing: float, class_prior: np.ndarray | None
) -> tuple[np.ndarray, list[float]]:
    """Dawid–Skene EM written out plainly: majority start, then ``n_iter`` times M-step
    (smoothed confusion counts, class prior) and E-step (per-label log-likelihood sums)."""
    n, m, k = data.n_tasks, data.n_workers, data.n_classes
    t, w, lab = data.tasks, data.workers, data.labels
    votes = np.zeros((n, k))
    np.add.at(votes, (t, lab), 1.0)
    deg = votes.sum(axis=1, keepdims=True)
    start = np.full(k, 1.0 / k) if class_prior is None else class_prior
    q = np.where(deg > 0, votes / np.maximum(deg, 1.0), start)
    history = []
    for _ in range(n_iter):
        counts = np.zeros((m, k, k))  # [worker, true class, given label]
        for c in range(k):
            np.add.at(counts[:, c, :], (w, lab), q[t, c])
        counts += smoothing
        totals = counts.sum(axis=2, keepdims=True)
        conf = np.where(totals > 0, counts / np.where(totals > 0, totals, 1.0), 1.0 / k)
        if class_prior is None:
            prior = q.sum(axis=0) / n
            prior = np.where(prior > 0, np.maximum(prior, FLOOR), 0.0)
            prior = prior / prior.sum()
        else:
            prior = class_prior
        log_conf = np.log(np.maximum(conf, FLOOR))
        joint = np.zeros((n, k))
        for c in range(k):
            np.add.at(joint[:, c], t, log_conf[w, c, lab])
        with np.errstate(divide="ignore"):
            joint += np.where(prior > 0, np.log(np.maximum(prior, FLOOR)), -np.inf)
        top = joint.max(axis=1, keepdims=True)
        e = np.exp(joint - top)
        q = e / e.sum(axis=1, keepdims=True)
        objective = float((top[:, 0] + np.log(e.sum(axis=1))).sum())
        if smoothing > 0:
            objective += smoothing * float(log_conf.sum())
        history.append(objective)
    return q, history


def random_crowd(k: int, seed: int, repeats: bool = False) -> LabelSet:
    """A few hundred tasks of uneven degree from workers of mixed quality, in shuffled order;
    with ``repeats``, some (task, worker) pairs labelled twice."""
    rng = np.random.default_rng(seed)
    n, m = 300, 25
    truth = rng.integers(0, k, n)
    acc = rng.uniform(0.6, 0.95, m)
    deg = rng.integers(1, 9, n)
    t = np.repeat(np.arange(n), deg)
    w = np.concatenate([rng.choice(m, d, replace=False) for d in deg])
    if repeats:
        again = rng.choice(t.size, 40, replace=False)
        t, w = np.concatenate([t, t[again]]), np.concatenate([w, w[again]])
    right = rng.random(t.size) < acc[w]
    lab = np.where(right, truth[t], (truth[t] + rng.integers(1, k, t.size)) % k)
    order = rng.permutation(t.size)
    return LabelSet(t[order], w[order], lab[order], n, m, k)


@pytest.mark.parametrize("k", [2, 5])
@pytest.mark.parametrize("smoothing", [0.0, 1.0])
@pytest.mark.parametrize("fixed_prior", [False, True])
def test_dawid_skene_posteriors_match_the_plain_implementation(
    k: int, smoothing: float, fixed_prior: bool
) -> None:
    data = random_crowd(k, seed=10 * k + int(smoothing) + 3 * fixed_prior)
    prior = np.linspace(1.0, 2.0, k) / np.linspace(1.0, 2.0, k).sum() if fixed_prior else None
    est = DawidSkene(max_iter=15, tol=0.0, smoothing=smoothing, class_prior=prior).fit(data)
    q, history = reference_dawid_skene(data, 15, smoothing, prior)
    assert est.n_iter_ == 15
    np.testing.assert_allclose(est.proba_, q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.log_likelihood_, history, rtol=1e-12)
    assert est.proba_.flags.c_contiguous


@pytest.mark.parametrize("k", [2, 3])
def test_repeated_labels_count_twice_as_in_the_plain_implementation(k: int) -> None:
    data = random_crowd(k, seed=7, repeats=True)
    est = DawidSkene(max_iter=10, tol=0.0).fit(data)
    q, history = reference_dawid_skene(data, 10, 0.0, None)
    np.testing.assert_allclose(est.proba_, q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.log_likelihood_, history, rtol=1e-12)


@pytest.mark.filterwarnings("ignore::marketsim.aggregation.identifiability.NotIdentifiableWarning")
@pytest.mark.parametrize("prior", [[0.0, 1.0], [1.0, 0.0], [0.999999, 1e-6]])
def test_two_classes_with_a_degenerate_prior_match_the_plain_implementation(
    prior: list[float],
) -> None:
    """A class of prior 0 gets posterior 0 (the log-odds form would meet inf - inf), and a
    lopsided prior keeps every posterior and the log-likelihood to 1e-12."""
    full = random_crowd(2, seed=11)
    # a task nobody labelled: its posterior is the prior
    data = LabelSet(full.tasks, full.workers, full.labels, full.n_tasks + 1, full.n_workers, 2)
    fixed = np.array(prior)
    est = DawidSkene(max_iter=8, tol=0.0, smoothing=0.5, class_prior=fixed).fit(data)
    q, history = reference_dawid_skene(data, 8, 0.5, fixed)
    np.testing.assert_allclose(est.proba_, q, rtol=0, atol=1e-12)
    # (tol = 0 stops early at an exact fixed point, where the objective repeats)
    np.testing.assert_allclose(est.log_likelihood_, history[: est.n_iter_], rtol=1e-12)
    np.testing.assert_allclose(est.proba_[-1], fixed, rtol=0, atol=1e-15)


@pytest.mark.parametrize("repeats", [False, True])
def test_two_class_confusion_counts_from_one_product_match_the_two_products(
    repeats: bool,
) -> None:
    """Class-0 counts as (labels per cell) - (class-1 counts): the generic two-product counts
    to rounding, and never negative (a float sum of values <= 1 never exceeds the count)."""
    data = random_crowd(2, seed=5, repeats=repeats)
    proba = np.random.default_rng(2).dirichlet([0.3, 0.3], size=data.n_tasks)
    proba[:5] = [[0.0, 1.0]] * 5
    fast = binary_confusion_counts(data, proba)
    np.testing.assert_allclose(fast, confusion_counts(data, proba), rtol=0, atol=1e-12)
    assert fast.min() >= 0
    assert fast.sum() == pytest.approx(data.n_labels)


@pytest.mark.parametrize("smoothing", [0.0, 0.5])
def test_two_class_confusion_is_the_generic_normalisation_bit_for_bit(smoothing: float) -> None:
    """binary_confusion: the very numbers, and memory layout, of confusion_from_counts on the
    two-class counts, with a worker whose cells have no mass (uniform rows at smoothing 0)."""
    data = random_crowd(2, seed=7, repeats=True)
    proba = np.random.default_rng(4).dirichlet([0.3, 0.3], size=data.n_tasks)
    proba[:3] = [[1.0, 0.0]] * 3
    data = LabelSet(data.tasks, data.workers, data.labels, data.n_tasks, data.n_workers + 1, 2)
    want = confusion_from_counts(binary_confusion_counts(data, proba), smoothing)
    got = binary_confusion(data, proba, smoothing)
    assert np.array_equal(got, want) and got.strides == want.strides
    assert smoothing > 0 or np.array_equal(got[-1], np.full((2, 2), 0.5))


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
