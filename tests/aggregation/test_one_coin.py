"""Two-class one-coin EM in log-odds form against a plain implementation of the model.

The log-odds E-step and the one-product M-step change the floating-point order, so they are
checked against the textbook formulas (per-label sums with ``np.bincount``) to 1e-12, with
every prior the market uses; the cheaper helpers they brought are checked bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.aggregation._numeric import PROB_FLOOR, log_prior, transposed_product
from marketsim.aggregation.metrics import binary_expected_correct, expected_correct
from marketsim.aggregation.one_coin import (
    EPS,
    OneCoinBetaEM,
    OneCoinEM,
    OneCoinShiftedBetaEM,
    beta_map,
    clip,
    one_coin_log_emission,
    shifted_beta_map,
)
from marketsim.data.labels import LabelSet

pytestmark = pytest.mark.filterwarnings(
    "ignore::marketsim.aggregation.identifiability.NotIdentifiableWarning"
)


def crowd(seed: int, repeats: bool = False, idle_worker: bool = False) -> LabelSet:
    """A random two-class crowd (workers right 55-95 % of the time)."""
    rng = np.random.default_rng(seed)
    n, m = 60, 9
    truth = rng.integers(0, 2, n)
    skill = rng.uniform(0.55, 0.95, m)
    pairs = np.array([(i, j) for i in range(n) for j in range(m) if rng.random() < 0.4])
    if repeats:
        pairs = np.vstack([pairs, pairs[:15]])
    tasks, workers = pairs[:, 0], pairs[:, 1]
    right = rng.random(tasks.size) < skill[workers]
    labels = np.where(right, truth[tasks], 1 - truth[tasks])
    return LabelSet(tasks, workers, labels, n, m + int(idle_worker), 2)


def reference_one_coin(
    data: LabelSet, start: np.ndarray, n_iter: int, est: OneCoinEM
) -> tuple[np.ndarray, list[float]]:
    """The one-coin EM of Maginnis & Gupta, label by label: M-step then E-step, ``n_iter``
    times from the posterior ``start``; returns the last posterior and the objectives."""
    t, w, z = data.tasks, data.workers, data.labels
    m = data.n_workers
    q = start.copy()
    history = []
    for _ in range(n_iter):
        n = np.bincount(w, minlength=m).astype(float)
        correct = np.bincount(w, weights=q[t, z], minlength=m)
        lam = np.where(n > 0, correct / np.maximum(n, 1.0), 0.0)
        if est.prior == "shifted-beta":
            p = shifted_beta_map(n, lam, est.alpha, est.beta, est.low)
            log_param = ((est.alpha - 1) * np.log(np.maximum(p - est.low, EPS))
                         + (est.beta - 1) * np.log1p(-p)).sum()
        elif est.prior == "beta":
            p = beta_map(n, lam, est.alpha, est.beta)
            log_param = ((est.alpha - 1) * np.log(p) + (est.beta - 1) * np.log1p(-p)).sum()
        else:
            fill = correct[n > 0].sum() / n[n > 0].sum()
            p = np.clip(np.where(n > 0, lam, fill), EPS, 1 - EPS)
            log_param = 0.0
        if est.class_prior is None:
            pi = q.mean(axis=0)
            pi = np.where(pi > 0, np.maximum(pi, PROB_FLOOR), 0.0)
            pi /= pi.sum()
        else:
            pi = np.asarray(est.class_prior, dtype=float)
        log_joint = np.tile(np.log(pi), (data.n_tasks, 1))
        for c in (0, 1):
            per_label = np.where(z == c, np.log(p[w]), np.log(1 - p[w]))
            log_joint[:, c] += np.bincount(t, weights=per_label, minlength=data.n_tasks)
        top = log_joint.max(axis=1, keepdims=True)
        total = np.log(np.exp(log_joint - top).sum(axis=1))
        q = np.exp(log_joint - top - total[:, None])
        history.append(float((top[:, 0] + total).sum() + log_param))
    return q, history


#: The one-coin method of each ability prior.
BY_PRIOR = {cls.prior: cls for cls in (OneCoinEM, OneCoinBetaEM, OneCoinShiftedBetaEM)}


@pytest.mark.parametrize("prior", ["shifted-beta", "beta", None])
@pytest.mark.parametrize("class_prior", [None, [0.75, 0.25]])
@pytest.mark.parametrize("repeats", [False, True])
def test_two_class_one_coin_matches_the_plain_model(
    prior: str | None, class_prior: list[float] | None, repeats: bool
) -> None:
    data = crowd(3, repeats=repeats, idle_worker=True)
    start = np.random.default_rng(4).dirichlet([1.0, 1.0], size=data.n_tasks)
    est = BY_PRIOR[prior](class_prior=class_prior, max_iter=25, tol=0.0)
    est.fit(data, init_proba=start)
    q, history = reference_one_coin(data, start, est.n_iter_, est)
    np.testing.assert_allclose(est.proba_, q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.log_likelihood_, history, rtol=1e-12)
    assert np.array_equal(est.labels_, np.argmax(q, axis=1))


def test_a_class_of_prior_zero_keeps_posterior_zero() -> None:
    """The log-odds form would meet inf - inf: such fits take the generic path."""
    data = crowd(5)
    est = OneCoinShiftedBetaEM(class_prior=[1.0, 0.0], max_iter=5, tol=0.0).fit(data)
    assert np.all(est.proba_[:, 1] == 0.0)
    assert np.all(np.isfinite(est.log_likelihood_))


@pytest.mark.parametrize("repeats", [False, True])
def test_binary_expected_correct_is_the_diagonal_count(repeats: bool) -> None:
    data = crowd(7, repeats=repeats, idle_worker=True)
    proba = np.random.default_rng(1).dirichlet([0.4, 0.4], size=data.n_tasks)
    correct, n = expected_correct(data, proba)
    fast = binary_expected_correct(data, proba)
    np.testing.assert_allclose(fast, correct, rtol=0, atol=1e-12)
    assert fast[-1] == 0.0 and n[-1] == 0  # the idle worker


@pytest.mark.parametrize("k", [2, 3, 5])
def test_log_emission_keeps_the_bits_of_the_identity_formula(k: int) -> None:
    skill = np.random.default_rng(k).uniform(1e-6, 1 - 1e-6, 40)
    log_right = np.log(np.maximum(skill, PROB_FLOOR))
    log_wrong = np.log(np.maximum((1 - skill) / (k - 1), PROB_FLOOR))
    eye = np.eye(k)[None, :, :]
    formula = log_wrong[:, None, None] + (log_right - log_wrong)[:, None, None] * eye
    assert np.array_equal(one_coin_log_emission(skill, k), formula.reshape(-1, k))


def test_clip_and_log_prior_keep_the_bits_of_numpy_forms() -> None:
    x = np.random.default_rng(0).normal(0.5, 0.5, 1000)
    x[:3] = [np.nan, np.inf, -np.inf]
    np.testing.assert_array_equal(clip(x, 0.1, 0.9), np.clip(x, 0.1, 0.9))
    for prior in ([0.75, 0.25], [1e-300, 1.0], [0.0, 1.0], [0.2, 0.3, 0.5]):
        p = np.array(prior)
        with np.errstate(divide="ignore"):
            masked = np.where(p > 0, np.log(np.maximum(p, PROB_FLOOR)), -np.inf)
        np.testing.assert_array_equal(log_prior(p), masked)


def test_transposed_product_is_scipys_bit_for_bit() -> None:
    data = crowd(9, repeats=True)
    x = np.random.default_rng(3).random(data.n_tasks)
    assert np.array_equal(transposed_product(data.incidence, x), data.incidence.T @ x)
    as_csc = data.incidence.tocsc()  # not a CSR matrix: scipy's product
    np.testing.assert_allclose(transposed_product(as_csc, x), data.incidence.T @ x, rtol=1e-15)


@pytest.mark.parametrize("alpha, beta", [(6.0, 2.0), (1.0, 1.0), (0.5, 0.5)])
def test_shifted_beta_map_fast_path_keeps_the_masked_numbers(alpha: float, beta: float) -> None:
    """alpha + beta = 2 makes the quadratic linear for workers without labels: the masked
    path; otherwise the unmasked one, with the same numbers as the masks give."""
    rng = np.random.default_rng(0)
    n = rng.integers(0, 30, 200).astype(float)
    lam = np.where(n > 0, rng.random(200), 0.0)
    low = 0.1
    a = -(n + alpha + beta - 2.0)
    b = n * (lam + low) + (alpha - 1.0) + low * (beta - 1.0)
    c = -low * n * lam
    disc = np.maximum(b * b - 4.0 * a * c, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        quad = (-b - np.sqrt(disc)) / (2.0 * a)
        linear = np.where(b != 0, -c / b, lam)
    p = np.where(np.abs(a) > 1e-12, quad, linear)
    p = np.clip(np.where(np.isfinite(p), p, lam), low + EPS, 1.0 - EPS)
    assert np.array_equal(shifted_beta_map(n, lam, alpha, beta, low), p)
