"""Every estimator in the method registry at numerical extremes.

Worker abilities at exactly 0.5, at 0.999 and at the prior's lower bound; K up to 20; a task
with 2,000 labels; workers with a single label; a class nobody chose; all workers adversarial.
Every estimator must return finite posteriors that sum to 1; where the labels do not identify
the classes it must warn
(:class:`~marketsim.aggregation.identifiability.NotIdentifiableWarning`); the spectral
initialisers fall back to majority vote with a RuntimeWarning instead of crashing.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from marketsim.aggregation.identifiability import NotIdentifiableWarning
from marketsim.aggregation.registry import CLASS_METHODS, make_estimator
from marketsim.data.labels import LabelSet

#: ds-features needs task features; without them it is D&S with smoothing, covered by "ds".
NEEDS_EXTRA = {"ds-features"}
#: Score methods are covered by tests/aggregation/test_bad_annotators.py.
ALL = [m for m in CLASS_METHODS if m not in NEEDS_EXTRA]
SPECTRAL = {"opt-ds", "one-coin-spectral"}


def crowd(n_tasks: int, n_workers: int, k: int, ability: float | np.ndarray, per_task: int,
          *, seed: int = 0, n_classes: int | None = None) -> tuple[LabelSet, np.ndarray]:
    """One-coin crowd: each task labelled by ``per_task`` distinct workers; wrong answers
    uniform over the other K - 1 classes; ``n_classes`` > K adds classes nobody chose."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, size=n_tasks)
    p = np.broadcast_to(np.asarray(ability, dtype=np.float64), (n_workers,))
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.concatenate([rng.choice(n_workers, per_task, replace=False)
                              for _ in range(n_tasks)])
    right = rng.random(tasks.size) < p[workers]
    wrong = (truth[tasks] + rng.integers(1, k, size=tasks.size)) % k
    labels = np.where(right, truth[tasks], wrong)
    return LabelSet(tasks, workers, labels, n_tasks, n_workers, n_classes or k), truth


def binary_only(method: str) -> bool:
    """Methods defined for two classes only (class attribute ``BINARY_ONLY``, e.g. mmsr)."""
    return bool(getattr(make_estimator(method), "BINARY_ONLY", False))


def fit(method: str, data: LabelSet) -> tuple[object, list[warnings.WarningMessage]]:
    """Fit ``method`` on ``data``; a binary-only method given K > 2 must refuse in one line,
    and the test is then skipped."""
    est = make_estimator(method)
    if binary_only(method) and data.n_classes > 2:
        with pytest.raises(ValueError, match="binary") as refused:
            est.fit(data)
        assert "\n" not in str(refused.value)
        pytest.skip(f"{method} is binary-only and refused K = {data.n_classes}")
    if "random_state" in est.get_params():
        est.set_params(random_state=0)
    if "max_iter" in est.get_params():
        est.set_params(max_iter=50)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(data)
    return est, list(caught)


def check_posteriors(est: object, data: LabelSet) -> None:
    proba = np.asarray(est.proba_)
    assert proba.shape == (data.n_tasks, data.n_classes)
    assert np.all(np.isfinite(proba)) and np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    labels = np.asarray(est.labels_)
    assert labels.min() >= 0 and labels.max() < data.n_classes
    for attr in ("skill_", "confusion_", "prior_"):
        value = getattr(est, attr, None)
        if value is not None:
            assert np.all(np.isfinite(value)), attr


def kinds(caught: list[warnings.WarningMessage]) -> set[type]:
    return {w.category for w in caught}


# --- identifiable extremes: finite, sum to 1, no identifiability warning -----------------------
EXTREMES = {
    "ability 0.999": dict(n_tasks=200, n_workers=12, k=2, ability=0.999, per_task=3),
    "ability 0.999, K=20": dict(n_tasks=200, n_workers=12, k=20, ability=0.999, per_task=3),
    "K=20, ability 0.7": dict(n_tasks=300, n_workers=15, k=20, ability=0.7, per_task=5),
    "K=5, classes 3 and 4 never chosen": dict(n_tasks=200, n_workers=10, k=3, ability=0.8,
                                              per_task=4, n_classes=5),
    "ability at the prior's lower bound 0.1, K=2": dict(n_tasks=200, n_workers=10, k=2,
                                                        ability=0.1, per_task=4),
}


@pytest.mark.parametrize("case", list(EXTREMES))
@pytest.mark.parametrize("method", ALL)
def test_extremes_give_finite_posteriors(method: str, case: str) -> None:
    data, _ = crowd(**EXTREMES[case])
    est, caught = fit(method, data)
    check_posteriors(est, data)
    if "never chosen" in case:
        assert not np.any(est.labels_ >= 3), "predicted a class nobody chose"


#: Methods that work on the worker-by-worker matrix: ~10 CPU s each on 2,010 workers (the others
#: well under one), 1 s and less on 510; the default loop runs them on 500 one-label workers,
#: the slow step on 2,000 as the others.
WORKER_BY_WORKER = {"mmsr", "eigen-ratio"}


def _many_label_cases() -> list[Any]:
    cases = []
    for method in ALL:
        if method in WORKER_BY_WORKER:
            cases += [pytest.param(method, 500, id=f"{method}-500"),
                      pytest.param(method, 2000, id=f"{method}-2000", marks=pytest.mark.slow)]
        else:
            cases.append(pytest.param(method, 2000, id=method))
    return cases


#: one-coin-spectral's reference-pair search is O(workers x pairs): on this crowd (2,010 workers,
#: 2 million pairs) it took minutes until MAX_REFERENCE_WORK bounded it (majority start, warned).
@pytest.mark.parametrize(("method", "voters"), _many_label_cases())
def test_task_with_2000_labels_and_one_label_workers(method: str, voters: int) -> None:
    """Task 0 labelled by ``voters`` (2,000) workers who label nothing else; 50 ordinary tasks
    besides."""
    rng = np.random.default_rng(1)
    big_w = np.arange(voters)
    big_l = np.where(rng.random(voters) < 0.8, 1, 0)
    small, _ = crowd(50, 10, 2, 0.8, 3, seed=2)
    data = LabelSet(
        np.concatenate([np.zeros(voters, dtype=np.int64), small.tasks + 1]),
        np.concatenate([big_w, small.workers + voters]),
        np.concatenate([big_l, small.labels]), 51, voters + 10, 2,
    )
    est, _ = fit(method, data)
    check_posteriors(est, data)
    assert est.labels_[0] == 1  # 80 % of the votes


# --- not identifiable: must warn ---------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("method", ALL)
def test_abilities_at_chance_warn(method: str, k: int) -> None:
    """Every worker at chance (0.5 for K=2, 1/K in general): labels carry no signal."""
    data, _ = crowd(300, 20, k, 1.0 / k, 5, seed=3)
    est, caught = fit(method, data)
    check_posteriors(est, data)
    assert NotIdentifiableWarning in kinds(caught), [str(w.message) for w in caught]


def test_lower_bound_of_ten_classes_is_chance_and_warns() -> None:
    """The shifted-Beta prior's lower bound 0.1 is exactly chance for K = 10."""
    data, _ = crowd(300, 20, 10, 0.1, 5, seed=4)
    for method in [m for m in ALL if not binary_only(m)]:
        est, caught = fit(method, data)
        check_posteriors(est, data)
        assert NotIdentifiableWarning in kinds(caught), method


@pytest.mark.parametrize("method", ALL)
def test_all_adversarial(method: str) -> None:
    """All workers below chance. For K = 2 this is exactly the mirror image of good workers with
    the classes renamed: no method can tell from labels alone, so posteriors must merely be
    valid (and are the mirror solution, error ~ 1 - error of the good case). For K = 4 a fit
    that lands below chance must say so."""
    data, truth = crowd(300, 20, 2, 0.2, 5, seed=5)
    est, _ = fit(method, data)
    check_posteriors(est, data)
    assert np.mean(est.labels_ != truth) > 0.5  # the mirror solution, as documented

    data4, _ = crowd(300, 20, 4, 0.1, 5, seed=6)
    est4, caught = fit(method, data4)
    check_posteriors(est4, data4)
    from marketsim.aggregation.metrics import mean_accuracy

    acc = mean_accuracy(est4, data4)
    if acc is not None and acc < 0.25:
        assert NotIdentifiableWarning in kinds(caught), (method, acc)


# --- spectral initialisers: fall back, never crash ---------------------------------------------
SINGULAR = {
    "two workers": crowd(40, 2, 3, 0.8, 2, seed=7)[0],
    "unanimous labels": LabelSet(np.repeat(np.arange(30), 3), np.tile(np.arange(3), 30),
                                 np.zeros(90, dtype=np.int64), 30, 3, 3),
    "K=20, few tasks": crowd(8, 6, 20, 0.9, 3, seed=8)[0],
    "one task": LabelSet([0, 0, 0], [0, 1, 2], [1, 0, 1], 1, 3, 2),
}


SINGULAR["one label per task"] = LabelSet(np.arange(30), np.arange(30) % 5,
                                         np.arange(30) % 2, 30, 5, 2)
#: (method, case): Opt-D&S needs non-singular group moments; the one-coin initialiser needs
#: three workers and a pair of workers labelling the same tasks.
FALLBACKS = [("opt-ds", c) for c in SINGULAR] + [
    ("one-coin-spectral", "two workers"), ("one-coin-spectral", "one label per task")]


@pytest.mark.parametrize(("method", "case"), FALLBACKS)
def test_spectral_falls_back_with_warning(method: str, case: str) -> None:
    data = SINGULAR[case]
    est, caught = fit(method, data)
    check_posteriors(est, data)
    fell_back = [w for w in caught if issubclass(w.category, RuntimeWarning)
                 and "fell back" in str(w.message)]
    assert fell_back, [str(w.message) for w in caught]
    assert est.init_used_ == "majority"
