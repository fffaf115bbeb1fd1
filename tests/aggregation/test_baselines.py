"""Table 3 baselines (KOS, KOS-SVD, Ghosh-SVD, EigenRatio): accuracy, K>2, degenerate input."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from marketsim.aggregation import (
    KOS,
    KOSSVD,
    EigenRatio,
    GhoshSVD,
    fractional_tie_error,
    make_estimator,
)
from marketsim.aggregation._binary import combine_signs, threshold_matrix
from marketsim.data.labels import LabelSet

BASELINES = {
    "kos": lambda: KOS(random_state=0),
    "kos-svd": KOSSVD,
    "ghosh-svd": GhoshSVD,
    "eigen-ratio": EigenRatio,
}


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(1):
        yield


def one_coin_crowd(
    seed: int, *, n: int, m: int, k: int, p: float, skill=(0.55, 0.95)
) -> tuple[LabelSet, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, size=n)
    acc = rng.uniform(*skill, size=m)
    ti, wi = np.nonzero(rng.random((n, m)) < p)
    right = rng.random(ti.size) < acc[wi]
    wrong = (truth[ti] + rng.integers(1, k, size=ti.size)) % k if k > 1 else truth[ti]
    lab = np.where(right, truth[ti], wrong)
    return LabelSet.from_arrays(ti, wi, lab, n_tasks=n, n_workers=m, n_classes=k), truth


@pytest.mark.parametrize("name", list(BASELINES))
def test_binary_beats_chance_clearly(name: str) -> None:
    data, truth = one_coin_crowd(1, n=600, m=30, k=2, p=0.3)
    est = BASELINES[name]().fit(data)
    err = np.mean(est.labels_ != truth)
    assert err < 0.1, err  # chance is 0.5; majority vote is about 0.1 here
    assert est.labels_.dtype == np.int64 and est.labels_.shape == (600,)
    np.testing.assert_allclose(est.proba_.sum(axis=1), 1.0)
    np.testing.assert_array_equal(est.proba_.argmax(axis=1), est.labels_)
    np.testing.assert_allclose(est.prior_.sum(), 1.0)
    assert est.log_likelihood_ == [] and est.converged_ is True
    assert isinstance(est.n_iter_, int)


@pytest.mark.parametrize("name", list(BASELINES))
def test_multiclass_by_threshold_reduction(name: str) -> None:
    data, truth = one_coin_crowd(2, n=600, m=30, k=4, p=0.4, skill=(0.7, 0.95))
    est = BASELINES[name]().fit(data)
    assert est.proba_.shape == (600, 4)
    assert set(np.unique(est.labels_)) <= {0, 1, 2, 3}
    err = np.mean(est.labels_ != truth)
    assert err < 0.35, err  # chance is 0.75


@pytest.mark.parametrize("name", list(BASELINES))
def test_baselines_beat_majority_on_adversarial_mix(name: str) -> None:
    # A third of the workers are adversaries (accuracy 0.1): spectral methods learn the sign.
    rng = np.random.default_rng(3)
    n, m = 800, 30
    truth = rng.integers(0, 2, size=n)
    acc = np.where(np.arange(m) < 10, 0.1, rng.uniform(0.7, 0.9, size=m))
    ti, wi = np.nonzero(rng.random((n, m)) < 0.4)
    lab = np.where(rng.random(ti.size) < acc[wi], truth[ti], 1 - truth[ti])
    data = LabelSet.from_arrays(ti, wi, lab, n_tasks=n, n_workers=m, n_classes=2)
    err = np.mean(BASELINES[name]().fit(data).labels_ != truth)
    assert err < fractional_tie_error(data.vote_counts(), truth)


DEGENERATE = {
    "empty": LabelSet.from_arrays([], [], [], n_tasks=0, n_workers=0, n_classes=2),
    "no-labels": LabelSet.from_arrays([], [], [], n_tasks=4, n_workers=3, n_classes=3),
    "one-worker": LabelSet.from_arrays([0, 1, 2], [0, 0, 0], [0, 1, 1]),
    "one-task": LabelSet.from_arrays([0, 0, 0], [0, 1, 2], [1, 1, 0]),
    "unanimous": LabelSet.from_arrays(
        np.repeat(np.arange(5), 3), np.tile(np.arange(3), 5), np.zeros(15, dtype=int), n_classes=3
    ),
    "one-class": LabelSet.from_arrays([0, 1], [0, 1], [0, 0], n_classes=1),
    "duplicates": LabelSet.from_arrays([0, 0, 1], [0, 0, 1], [0, 1, 1]),
}


@pytest.mark.parametrize("case", list(DEGENERATE))
@pytest.mark.parametrize("name", list(BASELINES))
def test_degenerate_input_does_not_crash(name: str, case: str) -> None:
    data = DEGENERATE[case]
    est = BASELINES[name]().fit(data)
    assert est.labels_.shape == (data.n_tasks,)
    assert est.proba_.shape == (data.n_tasks, data.n_classes)
    assert np.all((est.labels_ >= 0) & (est.labels_ < data.n_classes))
    assert np.all(np.isfinite(est.prior_))


def test_unanimous_crowd_is_followed() -> None:
    # Not kos-svd: centring the columns of a unanimous matrix leaves zero, so the authors'
    # SVD variant has no information there (its output is arbitrary, but must not crash).
    data = DEGENERATE["unanimous"]
    for name in ("kos", "ghosh-svd", "eigen-ratio"):
        assert np.all(BASELINES[name]().fit(data).labels_ == 0), name


def test_combine_signs_first_negative_threshold() -> None:
    signs = np.array([[-1, -1, 1], [1, -1, -1], [1, 1, 1], [1, 0, -1], [0, 0, 0]])
    np.testing.assert_array_equal(combine_signs(signs, 4), [0, 1, 3, 2, 3])


def test_threshold_matrix_values() -> None:
    data = LabelSet.from_arrays([0, 0, 1], [0, 1, 1], [2, 0, 1], n_classes=3)
    np.testing.assert_array_equal(threshold_matrix(data, 1).toarray(), [[1, -1], [0, 1]])
    np.testing.assert_array_equal(threshold_matrix(data, 2).toarray(), [[1, -1], [0, -1]])


def test_kos_seeded_and_registered() -> None:
    data, _ = one_coin_crowd(4, n=200, m=12, k=3, p=0.5)
    a = KOS(random_state=7, max_iter=5).fit(data).labels_
    b = KOS(random_state=7, max_iter=5).fit(data).labels_
    np.testing.assert_array_equal(a, b)
    assert KOS(max_iter=5).fit(data).n_iter_ == 5
    with pytest.raises(ValueError):
        KOS(max_iter=0).fit(data)
    for name, cls in [("kos", KOS), ("kos-svd", KOSSVD), ("ghosh-svd", GhoshSVD),
                      ("eigen-ratio", EigenRatio)]:
        assert isinstance(make_estimator(name), cls)
