"""Seed 001's bad-annotator EM for continuous scores (GaussianBadAnnotatorEM)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from marketsim.aggregation.bad_annotators import (
    GaussianBadAnnotatorEM,
    GaussianHardEM,
    plain_means,
    simulate_bad_annotators,
)
from marketsim.data.labels import LabelSet

TOY_GOOD = np.array([True, True, False, True, False])  # seed 001's demo: annotators 0, 1, 3


def toy(seed: int, sigma: float = 0.05, n_tasks: int = 50) -> tuple[LabelSet, np.ndarray]:
    """Seed 001's toy: every one of 5 annotators scores every task; 3 good, 2 uniform."""
    rng = np.random.default_rng(seed)
    mu = rng.random(n_tasks)
    m = TOY_GOOD.size
    tasks = np.repeat(np.arange(n_tasks), m)
    workers = np.tile(np.arange(m), n_tasks)
    good_scores = np.clip(mu[tasks] + sigma * rng.standard_normal(tasks.size), 0, 1)
    scores = np.where(TOY_GOOD[workers], good_scores, rng.random(tasks.size))
    data = LabelSet(tasks, workers, np.zeros_like(tasks), n_tasks, m, 1, scores=scores)
    return data, mu


def rmse(est: np.ndarray, truth: np.ndarray) -> float:
    return float(np.sqrt(np.mean((est - truth) ** 2)))


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_toy_finds_the_good_annotators(seed: int, hard: bool) -> None:
    data, mu = toy(seed)
    est = (GaussianHardEM if hard else GaussianBadAnnotatorEM)().fit(data)
    assert np.all(est.good_proba_[TOY_GOOD] > 0.9)
    assert np.all(est.good_proba_[~TOY_GOOD] < 0.1)
    assert est.converged_
    assert est.pi_ == pytest.approx(0.6, abs=1e-6)
    assert 0.03 < est.sigma_ < 0.07
    assert rmse(est.means_, mu) < 0.5 * rmse(plain_means(data), mu)


def test_hard_em_weights_are_binary() -> None:
    data, _ = toy(7, sigma=0.1)
    est = GaussianHardEM().fit(data)
    assert set(np.unique(est.good_proba_)) <= {0.0, 1.0}


def reference_em(scores: np.ndarray, n_iter: int) -> tuple[np.ndarray, np.ndarray]:
    """Seed 001's loop code (tasks x annotators, all observed), in log space."""
    n, m = scores.shape
    mean = scores.mean(axis=1)
    std = np.sqrt(np.sum((scores - mean[:, None]) ** 2) / n / m)
    pz = 0.5
    w = np.zeros(m)

    def e_step() -> None:
        for a in range(m):
            log_good = np.log(pz)
            for i in range(n):
                log_good += -0.5 * np.log(2 * np.pi * std**2) - 0.5 * (
                    scores[i, a] - mean[i]
                ) ** 2 / std**2
            w[a] = 1.0 / (1.0 + np.exp(np.log(1 - pz) - log_good))

    e_step()
    for _ in range(n_iter):
        mean = (scores * w).sum(axis=1) / w.sum()
        std = np.sqrt(np.sum(w * (scores - mean[:, None]) ** 2) / (n * w.sum()))
        pz = w.mean()
        e_step()
    return mean, w.copy()


def test_matches_seed_001_loop_code() -> None:
    """Same iterates as a literal loop implementation, on a case needing several iterations."""
    data, _ = toy(3, sigma=0.25, n_tasks=12)
    dense = data.scores.reshape(12, 5)
    for n_iter in (1, 2, 5):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = GaussianBadAnnotatorEM(max_iter=n_iter, tol=0).fit(data)
        mean, w = reference_em(dense, n_iter)
        np.testing.assert_allclose(est.means_, mean, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(est.good_proba_, w, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_log_likelihood_never_decreases(seed: int) -> None:
    """Soft EM's marginal log-likelihood is monotone (cases chosen to take many iterations)."""
    rng = np.random.default_rng(seed)
    data, _, _ = simulate_bad_annotators(
        40, 8, int(rng.integers(2, 6)), bad_fraction=0.4, sigma=0.25, random_state=seed
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = GaussianBadAnnotatorEM(tol=0, max_iter=40).fit(data)
    ll = np.asarray(est.log_likelihood_)
    assert np.all(np.isfinite(ll))
    assert np.all(np.diff(ll) >= -1e-9 * (1.0 + np.abs(ll[:-1]))), ll.tolist()


def test_log_likelihood_moves_over_several_iterations() -> None:
    """Guard for the monotonicity test: at least one case must actually iterate."""
    data, _, _ = simulate_bad_annotators(40, 8, 3, bad_fraction=0.4, sigma=0.25, random_state=0)
    est = GaussianBadAnnotatorEM(tol=0, max_iter=40).fit(data)
    ll = np.asarray(est.log_likelihood_)
    assert est.n_iter_ >= 4 and ll[-1] - ll[0] > 1e-3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_market_with_30_percent_bad_beats_plain_mean(seed: int) -> None:
    data, mu, good = simulate_bad_annotators(
        400, 20, 5, bad_fraction=0.3, sigma=0.05, random_state=seed
    )
    soft = GaussianBadAnnotatorEM().fit(data)
    hard = GaussianHardEM().fit(data)
    base = rmse(plain_means(data), mu)
    assert rmse(soft.means_, mu) < 0.7 * base
    assert rmse(hard.means_, mu) < 0.7 * base
    assert np.all((soft.good_proba_ > 0.5) == good)


def test_missing_scores_are_skipped() -> None:
    data, _ = toy(1)
    rng = np.random.default_rng(0)
    drop = rng.random(data.n_labels) < 0.2
    scores = data.scores.copy()
    scores[drop] = np.nan
    with_nan = LabelSet(data.tasks, data.workers, data.labels, data.n_tasks, 5, 1, scores=scores)
    a = GaussianBadAnnotatorEM().fit(with_nan)
    b = GaussianBadAnnotatorEM().fit(data.subset(~drop))
    np.testing.assert_allclose(a.means_, b.means_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.good_proba_, b.good_proba_, rtol=0, atol=1e-12)


def test_unscored_tasks_and_annotators() -> None:
    data, _ = toy(2)
    extra = LabelSet(
        data.tasks, data.workers, data.labels, data.n_tasks + 1, 6, 1, scores=data.scores
    )
    est = GaussianBadAnnotatorEM().fit(extra)
    assert np.isnan(est.means_[-1]) and np.all(np.isfinite(est.means_[:-1]))
    assert est.good_proba_[-1] == pytest.approx(est.pi_)
    ref = GaussianBadAnnotatorEM().fit(data)
    np.testing.assert_allclose(est.means_[:-1], ref.means_, atol=1e-12)


def test_input_errors() -> None:
    data, _ = toy(0)
    no_scores = LabelSet(data.tasks, data.workers, data.labels, data.n_tasks, 5, 1)
    with pytest.raises(ValueError, match="scores"):
        GaussianBadAnnotatorEM().fit(no_scores)
    bad = data.scores.copy()
    bad[3] = 1.5
    out_of_range = LabelSet(data.tasks, data.workers, data.labels, data.n_tasks, 5, 1, scores=bad)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        GaussianBadAnnotatorEM().fit(out_of_range)
    with pytest.raises(ValueError, match="init_pi"):
        GaussianBadAnnotatorEM(init_pi=1.0).fit(data)
    # a score estimator has no class posteriors, so no class-probability API at all
    assert not hasattr(GaussianBadAnnotatorEM(), "fit_predict_proba")
    np.testing.assert_array_equal(
        GaussianBadAnnotatorEM().fit_predict(data), GaussianBadAnnotatorEM().fit(data).means_
    )


@pytest.mark.parametrize("hard", [False, True])
def test_task_scored_only_by_bad_annotators_reports_plain_mean(hard: bool) -> None:
    """Not a weighted mean dominated by the 'least bad' scorer (seed 001 fallback)."""
    data, _ = toy(1, sigma=0.2, n_tasks=8)  # bad annotators' P(good) small but not underflowed
    tasks = np.concatenate([data.tasks, [8, 8]])
    workers = np.concatenate([data.workers, [2, 4]])  # the two bad annotators
    scores = np.concatenate([data.scores, [0.1, 0.9]])
    more = LabelSet(tasks, workers, np.zeros_like(tasks), 9, 5, 1, scores=scores)
    est = (GaussianHardEM if hard else GaussianBadAnnotatorEM)().fit(more)
    w_bad = est.good_proba_[[2, 4]]
    assert np.all(w_bad < 1e-3)
    assert hard or (w_bad.sum() > 1e-12 and abs(w_bad[0] / w_bad[1] - 1) > 0.5)
    assert est.means_[8] == pytest.approx(0.5)
