"""Dawid–Skene (``ds``): the fast EM against a plain implementation kept here (one scatter-add
per label, dense confusion arrays), to 1e-12, with repeated labels, degenerate priors and the
two-class shortcuts. Other behaviour of the estimator is covered where it is shared with every
method: ``test_properties.py``, ``test_metamorphic.py``, ``test_identifiability.py``,
``tests/data/test_frames.py`` (DataFrames, crowd-kit agreement) and ``test_zhang_tables.py``
(the published tables).
"""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.aggregation import DawidSkene
from marketsim.aggregation.dawid_skene import (
    binary_confusion,
    binary_confusion_counts,
    confusion_counts,
    confusion_from_counts,
)
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
