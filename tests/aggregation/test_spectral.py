"""Spectral initialisers of Zhang et al. (2014): recovery on synthetic crowds and fallbacks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from marketsim.aggregation import DawidSkene, OneCoinEM, fractional_tie_error
from marketsim.aggregation.spectral import (
    one_coin_spectral_skill,
    robust_tensor_power,
    spectral_confusion,
)
from marketsim.data.labels import LabelSet


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(1):
        yield


def ds_crowd(
    rng: np.random.Generator, *, n: int, m: int, k: int, p: float, diag=(0.6, 0.9), prior=None
) -> tuple[LabelSet, np.ndarray, np.ndarray]:
    """Dawid–Skene crowd: confusion[j, c, c] ~ U(diag), off-diagonal mass Dirichlet-split."""
    prior = np.full(k, 1.0 / k) if prior is None else np.asarray(prior)
    truth = rng.choice(k, size=n, p=prior)
    d = rng.uniform(*diag, size=(m, k))
    off = rng.dirichlet(np.ones(k - 1), size=(m, k))
    conf = np.zeros((m, k, k))
    for c in range(k):
        others = [x for x in range(k) if x != c]
        conf[:, c, c] = d[:, c]
        conf[:, c, others] = (1 - d[:, c])[:, None] * off[:, c]
    ti, wi = np.nonzero(rng.random((n, m)) < p)
    cum = conf[wi, truth[ti]].cumsum(axis=1)
    lab = np.minimum((rng.random(ti.size)[:, None] > cum).sum(axis=1), k - 1)
    data = LabelSet.from_arrays(ti, wi, lab, n_tasks=n, n_workers=m, n_classes=k)
    return data, truth, conf


@pytest.mark.parametrize("k", [2, 3, 4])
def test_recovers_confusion_matrices(k: int) -> None:
    rng = np.random.default_rng(10 + k)
    data, _, conf = ds_crowd(rng, n=4000, m=15, k=k, p=0.6)
    result = spectral_confusion(data, rng=np.random.default_rng(0))
    assert result is not None
    est, prior = result
    assert est.shape == (15, k, k)
    np.testing.assert_allclose(est.sum(axis=2), 1.0, atol=1e-12)
    assert np.abs(est - conf).max() < 0.1
    assert np.abs(est - conf).mean() < 0.03
    np.testing.assert_allclose(prior, np.full(k, 1 / k), atol=0.05)


def test_recovers_skewed_prior() -> None:
    rng = np.random.default_rng(3)
    data, _, _ = ds_crowd(rng, n=5000, m=12, k=3, p=0.7, prior=[0.6, 0.3, 0.1])
    _, prior = spectral_confusion(data, rng=np.random.default_rng(1))
    np.testing.assert_allclose(prior, [0.6, 0.3, 0.1], atol=0.05)


def test_tensor_power_method_finds_orthogonal_components() -> None:
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    lams = np.array([3.0, 2.0, 1.5, 1.0])
    t = np.einsum("h,ih,jh,kh->ijk", lams, q, q, q)
    got_l, got_v = robust_tensor_power(t, rng=rng, n_starts=20, n_iter=50)
    np.testing.assert_allclose(np.sort(got_l), np.sort(lams), rtol=1e-6)
    np.testing.assert_allclose(np.abs(got_v.T @ q).max(axis=1), 1.0, atol=1e-6)


def test_opt_ds_beats_majority_start_or_ties() -> None:
    rng = np.random.default_rng(5)
    data, truth, _ = ds_crowd(rng, n=1500, m=20, k=3, p=0.3, diag=(0.4, 0.9))
    est = DawidSkene(init="spectral", random_state=0).fit(data)
    assert est.init_used_ == "spectral"
    err = np.mean(est.labels_ != truth)
    mv_err = fractional_tie_error(data.vote_counts(), truth)
    ds_err = np.mean(DawidSkene(init="majority").fit(data).labels_ != truth)
    assert err < 0.7 * mv_err and err <= ds_err + 0.005


def _unanimous() -> LabelSet:
    tasks = np.repeat(np.arange(50), 6)
    workers = np.tile(np.arange(6), 50)
    return LabelSet.from_arrays(tasks, workers, np.zeros(300, dtype=int), n_classes=3)


@pytest.mark.parametrize(
    "data",
    [
        _unanimous(),
        LabelSet.from_arrays([0, 1, 2], [0, 0, 0], [0, 1, 1]),  # one worker
        LabelSet.from_arrays([0, 1, 2, 0], [0, 1, 0, 1], [0, 1, 1, 0]),  # two workers
        LabelSet.from_arrays([], [], [], n_tasks=0, n_workers=0, n_classes=2),  # empty
        LabelSet.from_arrays([0, 1], [0, 1], [0, 0], n_classes=1),  # K = 1
    ],
    ids=["unanimous", "one-worker", "two-workers", "empty", "one-class"],
)
def test_singular_input_warns_and_returns_none(data: LabelSet) -> None:
    with pytest.warns(RuntimeWarning, match="fell back to majority vote"):
        assert spectral_confusion(data, rng=np.random.default_rng(0)) is None


def test_many_classes_little_data_does_not_crash() -> None:
    rng = np.random.default_rng(7)
    data, _, _ = ds_crowd(rng, n=60, m=7, k=20, p=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = spectral_confusion(data, rng=np.random.default_rng(0), n_starts=10)
    if result is not None:
        conf, prior = result
        assert np.all(np.isfinite(conf)) and np.all(conf > 0)
        np.testing.assert_allclose(conf.sum(axis=2), 1.0)
        np.testing.assert_allclose(prior.sum(), 1.0)


def test_dawid_skene_falls_back_to_majority() -> None:
    with pytest.warns(RuntimeWarning, match="fell back"):
        est = DawidSkene(init="spectral", random_state=0).fit(_unanimous())
    assert est.init_used_ == "majority"
    assert np.all(est.labels_ == 0)


def one_coin_crowd(
    rng: np.random.Generator, *, n: int, m: int, k: int, p: float
) -> tuple[LabelSet, np.ndarray, np.ndarray]:
    truth = rng.integers(0, k, size=n)
    skill = rng.uniform(0.35, 0.9, size=m)
    ti, wi = np.nonzero(rng.random((n, m)) < p)
    right = rng.random(ti.size) < skill[wi]
    wrong = (truth[ti] + rng.integers(1, k, size=ti.size)) % k
    lab = np.where(right, truth[ti], wrong)
    return LabelSet.from_arrays(ti, wi, lab, n_tasks=n, n_workers=m, n_classes=k), truth, skill


@pytest.mark.parametrize("k", [2, 3])
def test_one_coin_spectral_recovers_abilities(k: int) -> None:
    rng = np.random.default_rng(20 + k)
    data, _, skill = one_coin_crowd(rng, n=3000, m=20, k=k, p=0.5)
    est = one_coin_spectral_skill(data)
    assert est is not None and est.shape == (20,)
    assert np.all((est > 0) & (est < 1))
    assert np.abs(est - skill).max() < 0.08
    assert np.abs(est - skill).mean() < 0.03


def test_one_coin_spectral_em_runs() -> None:
    rng = np.random.default_rng(2)
    data, truth, _ = one_coin_crowd(rng, n=800, m=15, k=3, p=0.4)
    est = OneCoinEM(init="spectral").fit(data)
    assert est.init_used_ == "spectral"
    assert np.mean(est.labels_ != truth) < 0.8 * fractional_tie_error(data.vote_counts(), truth)


@pytest.mark.parametrize(
    "data",
    [
        LabelSet.from_arrays([0, 1], [0, 1], [0, 1]),  # two workers, no overlap
        LabelSet.from_arrays([0, 1, 2], [0, 1, 2], [0, 1, 0]),  # three workers, no overlap
        LabelSet.from_arrays([], [], [], n_tasks=0, n_workers=0, n_classes=2),
    ],
    ids=["two-workers", "no-overlap", "empty"],
)
def test_one_coin_spectral_fallback(data: LabelSet) -> None:
    with pytest.warns(RuntimeWarning, match="fell back"):
        assert one_coin_spectral_skill(data) is None
