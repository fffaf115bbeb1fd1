"""Property-based tests (hypothesis) for every estimator in the method registry.

Small random label sets — including degenerate ones: a single worker, unanimous labels, an
unused class, a worker with a single label, tasks without any label, no labels at all — are fed
to every method in :data:`marketsim.aggregation.registry.METHODS` (iterated dynamically, so
methods added later are covered too). Properties:

- posteriors are finite, non-negative, rows sum to 1; ``labels_`` in range; ``skill_`` and
  ``confusion_`` finite probabilities where present;
- EM objective (log-likelihood, plus the log prior of the parameters for MAP variants) never
  decreases, run for a fixed number of iterations with ``tol=0``;
- relabelling tasks and workers (and shuffling the label rows) permutes ``proba_`` rows and
  changes nothing else, for the deterministic estimators.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from marketsim.aggregation._numeric import majority_posterior
from marketsim.aggregation.base import BaseAggregator, EMAggregator
from marketsim.aggregation.dawid_skene import DawidSkene
from marketsim.aggregation.estimator import ConvergenceWarning
from marketsim.aggregation.identifiability import NotIdentifiableWarning
from marketsim.aggregation.majority_vote import MajorityVote
from marketsim.aggregation.registry import CLASS_METHODS, METHODS, make_estimator
from marketsim.data.labels import LabelSet
from tests.helpers import example_counts

MAX_ITER = 15
#: Examples per test with ``-m slow``; raise it for a deeper search, e.g.
#: ``MARKETSIM_PROPERTY_EXAMPLES=2000``. The default loop runs a fifth of them.
MAX_EXAMPLES = int(os.environ.get("MARKETSIM_PROPERTY_EXAMPLES", "100"))
EXAMPLES = example_counts(max(1, MAX_EXAMPLES // 5), MAX_EXAMPLES)
SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- data -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Crowd:
    """Raw label triples plus sizes (kept separate from LabelSet for readable examples)."""

    triples: tuple[tuple[int, int, int], ...]
    n_tasks: int
    n_workers: int
    n_classes: int

    def labelset(self) -> LabelSet:
        """As a LabelSet with the stated sizes (unlabelled tasks/workers kept)."""
        arr = np.array(self.triples, dtype=np.int64).reshape(-1, 3)
        return LabelSet(
            arr[:, 0], arr[:, 1], arr[:, 2], self.n_tasks, self.n_workers, self.n_classes
        )


@st.composite
def crowds(draw: st.DrawFn) -> Crowd:
    """Random subset of (task, worker) pairs with random labels, plus degenerate variants.

    Three densities: "sparse" (a short list of distinct pairs, shrinks well), "dense" (a
    boolean mask over all pairs) and "planted" (labels from a hidden truth and per-worker
    accuracies, so that spectral initialisers get non-singular moments).
    """
    n_tasks = draw(st.integers(1, 30))
    n_workers = draw(st.integers(1, 10))
    k = draw(st.integers(2, 5))
    density = draw(st.sampled_from(["sparse", "dense", "planted"]))
    if density == "sparse":
        triples = draw(
            st.lists(
                st.tuples(
                    st.integers(0, n_tasks - 1),
                    st.integers(0, n_workers - 1),
                    st.integers(0, k - 1),
                ),
                unique_by=lambda t: (t[0], t[1]),
                max_size=n_tasks * n_workers,
            )
        )
    elif density == "dense":
        size = n_tasks * n_workers
        mask = draw(st.lists(st.booleans(), min_size=size, max_size=size))
        labs = draw(st.lists(st.integers(0, k - 1), min_size=size, max_size=size))
        triples = [
            (i // n_workers, i % n_workers, labs[i]) for i in range(size) if mask[i]
        ]
    else:
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        truth = rng.integers(0, k, n_tasks)
        accuracy = rng.uniform(0.4, 0.95, n_workers)
        observed = rng.random((n_tasks, n_workers)) < rng.uniform(0.3, 1.0)
        right = rng.random((n_tasks, n_workers)) < accuracy
        noise = rng.integers(0, k, (n_tasks, n_workers))
        labs = np.where(right, truth[:, None], noise)
        triples = [(int(t), int(w), int(labs[t, w])) for t, w in np.argwhere(observed)]
    variant = draw(
        st.sampled_from(["plain", "unanimous", "unused-class", "single-label-worker", "empty-task"])
    )
    if variant == "unanimous":
        c = draw(st.integers(0, k - 1))
        triples = [(t, w, c) for t, w, _ in triples]
    elif variant == "unused-class":
        triples = [(t, w, lab % (k - 1)) for t, w, lab in triples]
    elif variant == "single-label-worker":
        triples = [*triples, (draw(st.integers(0, n_tasks - 1)), n_workers, draw(
            st.integers(0, k - 1)))]
        n_workers += 1
    elif variant == "empty-task":
        n_tasks += 1
    return Crowd(tuple(triples), n_tasks, n_workers, k)


#: Hand-written degenerate cases, always tried first.
DEGENERATE = [
    Crowd((), 1, 1, 2),  # no labels at all
    Crowd(((0, 0, 1),), 1, 1, 2),  # one label
    Crowd(((0, 0, 0), (1, 0, 1), (2, 0, 1)), 3, 1, 3),  # one worker, unused class
    Crowd(((0, 0, 1), (0, 1, 1), (1, 0, 1), (1, 1, 1)), 3, 2, 2),  # unanimous + empty task
    Crowd(((0, 0, 0), (0, 1, 1), (1, 0, 1), (1, 1, 0), (2, 2, 4)), 4, 4, 5),  # ties, idle worker
]


def with_degenerate(**extra: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add the explicit degenerate examples (plus fixed ``extra`` arguments) to a test."""

    def decorate(test: Callable[..., Any]) -> Callable[..., Any]:
        for crowd in DEGENERATE:
            test = example(crowd=crowd, **extra)(test)
        return test

    return decorate


# --- estimators -----------------------------------------------------------------------------
def is_spectral(name: str) -> bool:
    """Spectral methods (allowed to warn with RuntimeWarning on degenerate input)."""
    est = make_estimator(name)
    return "spectral" in name or name.startswith("opt-") or est.get_params().get(
        "init"
    ) == "spectral"


def configure(est: BaseAggregator, **overrides: Any) -> BaseAggregator:
    """Set the hyperparameters the estimator has among ``overrides`` (others are ignored)."""
    params = est.get_params()
    est.set_params(**{k: v for k, v in overrides.items() if k in params})
    return est


def build(name: str, **overrides: Any) -> BaseAggregator:
    """Registry estimator with fixed iterations, ``tol=0`` and a fixed seed."""
    est = make_estimator(name)
    return configure(est, **{"max_iter": MAX_ITER, "tol": 0.0, "random_state": 0, **overrides})


def fit(name: str, est: BaseAggregator, data: LabelSet) -> BaseAggregator:
    """Fit with warnings as errors, except ConvergenceWarning (and RuntimeWarning for spectral
    methods on degenerate input)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ConvergenceWarning)
        # Random label sets often carry no signal: saying so is the estimator's job here.
        warnings.simplefilter("ignore", NotIdentifiableWarning)
        if is_spectral(name):
            warnings.simplefilter("ignore", RuntimeWarning)
        return est.fit(data)


def _available(name: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            build(name).fit(Crowd(((0, 0, 0), (0, 1, 0), (1, 0, 1)), 2, 3, 2).labelset())
    except ModuleNotFoundError:  # a method whose module is still being written
        return False
    return True


#: Class-posterior methods; the continuous-score ones have their own tests (test_continuous).
NAMES = sorted(CLASS_METHODS)
AVAILABLE = {name: _available(name) for name in NAMES}


def method_param(name: str) -> Any:
    """pytest param, skipped when the method's implementation module does not exist yet."""
    return pytest.param(
        name,
        marks=pytest.mark.skipif(not AVAILABLE[name], reason=f"{name}: module not importable"),
    )


def em_cases() -> list[Any]:
    """(name, overrides) for every registry method fitted by the EM loop, plus MAP D&S."""
    cases = []
    for name in NAMES:
        if AVAILABLE[name] and isinstance(make_estimator(name), EMAggregator):
            cases.append(pytest.param(name, {}, id=name))
    cases.append(pytest.param("ds", {"smoothing": 1.0}, id="ds-smoothing-1"))
    return cases


def deterministic_cases() -> list[Any]:
    """Methods whose output is a unique function of the labels, whatever the numbering.

    Majority vote (``proba_`` only; ``labels_`` breaks ties at random) and EM models started
    from majority vote. Excluded: spectral starts (workers are split into groups by index, with
    random restarts), KOS message passing (random start) and the SVD baselines (on symmetric,
    degenerate input the singular vectors and sign rules are not unique; on generic planted
    data they are equivariant, checked by hand).
    """
    cases = []
    for name in NAMES:
        if not AVAILABLE[name] or is_spectral(name):
            continue
        est = make_estimator(name)
        if isinstance(est, MajorityVote) or (
            isinstance(est, EMAggregator) and est.get_params().get("init") == "majority"
        ):
            cases.append(pytest.param(name, {}, id=name))
    cases.append(pytest.param("ds", {"smoothing": 1.0}, id="ds-smoothing-1"))
    return cases


# --- properties -----------------------------------------------------------------------------
@pytest.mark.parametrize("examples", EXAMPLES)
@pytest.mark.parametrize("name", [method_param(n) for n in NAMES])
def test_outputs_are_probabilities(name: str, examples: int) -> None:
    """Posterior rows sum to 1, everything finite, labels in range."""

    @settings(SETTINGS, max_examples=examples)
    @given(crowd=crowds())
    @with_degenerate()
    def check(crowd: Crowd) -> None:
        outputs_are_probabilities(name, crowd)

    check()


def outputs_are_probabilities(name: str, crowd: Crowd) -> None:
    """The assertions of :func:`test_outputs_are_probabilities` on one crowd."""
    data = crowd.labelset()
    if getattr(make_estimator(name), "BINARY_ONLY", False) and data.n_classes > 2:
        with pytest.raises(ValueError, match="binary") as refused:  # e.g. mmsr: one line
            build(name).fit(data)
        assert "\n" not in str(refused.value)
        return
    est = fit(name, build(name), data)
    n, k = data.n_tasks, data.n_classes
    proba = est.proba_
    assert proba.shape == (n, k)
    assert np.all(np.isfinite(proba))
    assert np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-9)
    assert est.labels_.shape == (n,)
    assert np.all((est.labels_ >= 0) & (est.labels_ < k))
    if hasattr(est, "skill_"):
        assert est.skill_.shape == (data.n_workers,)
        assert np.all(np.isfinite(est.skill_))
        assert np.all((est.skill_ >= 0) & (est.skill_ <= 1))
    if hasattr(est, "confusion_"):
        assert est.confusion_.shape == (data.n_workers, k, k)
        assert np.all(np.isfinite(est.confusion_))
        assert np.all((est.confusion_ >= 0) & (est.confusion_ <= 1))
    if hasattr(est, "prior_"):
        assert np.all(np.isfinite(est.prior_))


@pytest.mark.parametrize("examples", EXAMPLES)
@pytest.mark.parametrize(("name", "overrides"), em_cases())
def test_em_objective_never_decreases(name: str, overrides: dict[str, Any],
                                      examples: int) -> None:
    """Log-likelihood (ML) or log-posterior (MAP) is non-decreasing over EM iterations."""

    @settings(SETTINGS, max_examples=examples)
    @given(crowd=crowds())
    @with_degenerate()
    def check(crowd: Crowd) -> None:
        em_objective_never_decreases(name, overrides, crowd)

    check()


def em_objective_never_decreases(name: str, overrides: dict[str, Any], crowd: Crowd) -> None:
    """The assertions of :func:`test_em_objective_never_decreases` on one crowd."""
    est = fit(name, build(name, **overrides), crowd.labelset())
    ll = np.asarray(est.log_likelihood_)
    assert 1 <= len(ll) <= MAX_ITER  # tol=0 still stops early on an exactly unchanged objective
    assert np.all(np.isfinite(ll))
    drops = np.diff(ll) + 1e-8 * (1.0 + np.abs(ll[:-1]))
    assert np.all(drops >= 0), f"objective decreased: {ll.tolist()}"


def aligned_fits(
    name: str, overrides: dict[str, Any], runs: list[tuple[LabelSet, np.ndarray | None]]
) -> list[BaseAggregator]:
    """Fit every ``(data, init_proba)`` run with the same number of EM iterations.

    ``tol=0`` still stops when the objective repeats bit for bit, which depends on rounding;
    refit all runs with the smallest ``n_iter_`` until they agree.
    """
    max_iter = MAX_ITER
    while True:
        fitted = []
        for data, init in runs:
            est = build(name, **{**overrides, "max_iter": max_iter})
            if init is None:
                fitted.append(fit(name, est, data))
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    warnings.simplefilter("ignore", NotIdentifiableWarning)  # random crowds
                    fitted.append(est.fit(data, init_proba=init))
        n_iter = [getattr(f, "n_iter_", 0) for f in fitted]
        if not isinstance(fitted[0], EMAggregator) or len(set(n_iter)) == 1:
            return fitted
        max_iter = min(n_iter)


#: Relative perturbation of the starting posterior used to measure the conditioning of EM.
PERTURBATION = 1e-13
#: Largest amplification of that perturbation for which rounding (~1e-16) cannot reach 1e-8.
MAX_AMPLIFICATION = 1e6


@pytest.mark.parametrize("examples", EXAMPLES)
@pytest.mark.parametrize(("name", "overrides"), deterministic_cases())
def test_permutation_equivariance(name: str, overrides: dict[str, Any], examples: int) -> None:
    """Relabelling tasks/workers and shuffling label rows permutes ``proba_`` rows only
    (:func:`permutation_equivariance`)."""

    @settings(SETTINGS, max_examples=examples)
    @given(crowd=crowds(), perm_seed=st.integers(0, 2**32 - 1))
    @with_degenerate(perm_seed=1)
    @example(  # D&S: a class with ~1e-12 posterior mass; its confusion rows are 0/0-determined
        crowd=Crowd(((0, 1, 2), (1, 0, 1), (1, 1, 1), (2, 0, 0), (2, 1, 0), (3, 0, 0),
                     (3, 1, 1), (3, 2, 0)), 4, 4, 4),
        perm_seed=0,
    )
    @example(  # one-coin ML: a 2-vs-2 tie on a single task, an unstable fixed point (rejected)
        crowd=Crowd(((0, 0, 2), (0, 2, 0), (0, 4, 2), (0, 7, 3), (0, 9, 3)), 2, 10, 4),
        perm_seed=0,
    )
    def check(crowd: Crowd, perm_seed: int) -> None:
        permutation_equivariance(name, overrides, crowd, perm_seed)

    check()


def permutation_equivariance(
    name: str, overrides: dict[str, Any], crowd: Crowd, perm_seed: int
) -> None:
    """Relabelling tasks/workers and shuffling label rows permutes ``proba_`` rows only.

    Mathematically exact; numerically, ML EM started on an exact tie (e.g. one task, 2 votes
    against 2) sits on an unstable fixed point that amplifies rounding differences by ~4× per
    iteration. Such ill-conditioned inputs are recognised by refitting from a start perturbed
    by 1e-13 and rejected when the output moves by more than 1e-13 × 1e6; everywhere else the
    permuted fit must match to 1e-8. Confusion rows are compared weighted by the worker's
    posterior mass on that true class (rows of a class with ~1e-12 mass are 0/0-determined).
    """
    data = crowd.labelset()
    rng = np.random.default_rng(perm_seed)
    task_perm = rng.permutation(data.n_tasks)  # old task i -> new task task_perm[i]
    worker_perm = rng.permutation(data.n_workers)
    rows = rng.permutation(data.n_labels)
    permuted = LabelSet(
        task_perm[data.tasks[rows]],
        worker_perm[data.workers[rows]],
        data.labels[rows],
        data.n_tasks,
        data.n_workers,
        data.n_classes,
    )
    runs: list[tuple[LabelSet, np.ndarray | None]] = [(data, None), (permuted, None)]
    if isinstance(make_estimator(name), EMAggregator):
        start = majority_posterior(data)
        noise = np.random.default_rng(12345).standard_normal(start.shape)
        perturbed = start * (1.0 + PERTURBATION * noise)
        runs.append((data, perturbed / perturbed.sum(axis=1, keepdims=True)))
    a, b, *sensitivity = aligned_fits(name, overrides, runs)
    if sensitivity:
        moved = float(np.max(np.abs(sensitivity[0].proba_ - a.proba_), initial=0.0))
        assume(moved <= PERTURBATION * MAX_AMPLIFICATION)
    np.testing.assert_allclose(b.proba_[task_perm], a.proba_, rtol=0, atol=1e-8)
    if hasattr(a, "skill_"):
        np.testing.assert_allclose(b.skill_[worker_perm], a.skill_, rtol=0, atol=1e-8)
    if hasattr(a, "confusion_"):
        k = data.n_classes
        mass = (data.incidence_t @ a.proba_).reshape(data.n_workers, k, k).sum(axis=1)
        weighted = np.abs(b.confusion_[worker_perm] - a.confusion_) * np.minimum(mass, 1.0)[
            :, :, None
        ]
        assert np.all(weighted <= 1e-8), f"confusion differs by {weighted.max():.3g}"


def test_registry_is_covered() -> None:
    """Every registry method is exercised (or explicitly unavailable), and DS is among them."""
    assert "ds" in METHODS and AVAILABLE["ds"]
    assert isinstance(make_estimator("ds"), DawidSkene)
