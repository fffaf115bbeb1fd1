"""Threaded EM kernels: the same bits as one thread, and the cap that keeps studies serial."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from marketsim.aggregation import (
    DawidSkene,
    OneCoinEM,
    OneCoinShiftedBetaEM,
    OptDS,
    _threads,
    max_threads,
    set_max_threads,
)
from marketsim.aggregation._numeric import (
    column_products,
    log_posterior,
    normalise_log,
    transposed_products,
)
from marketsim.data.labels import LabelSet

ESTIMATORS = {
    "ds": lambda: DawidSkene(max_iter=25, tol=0.0),
    "opt-ds": lambda: OptDS(max_iter=25, tol=0.0, random_state=3),
    "ds-smoothed": lambda: DawidSkene(smoothing=1.0, max_iter=25, tol=0.0),
    "one-coin": lambda: OneCoinEM(max_iter=25, tol=0.0),
    "one-coin-shifted-beta": lambda: OneCoinShiftedBetaEM(max_iter=25, tol=0.0),
}


def random_crowd(k: int, seed: int, *, repeats: bool = False) -> LabelSet:
    """3,000 tasks × 6 labels from 150 workers of mixed skill (some labels repeated)."""
    rng = np.random.default_rng(seed)
    n_tasks, n_workers, per_task = 3000, 150, 6
    truth = rng.integers(0, k, n_tasks)
    skill = rng.uniform(0.4, 0.95, n_workers)
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.concatenate([rng.choice(n_workers, per_task, replace=False)
                              for _ in range(n_tasks)])
    right = rng.random(tasks.size) < skill[workers]
    labels = np.where(right, truth[tasks], rng.integers(0, k, tasks.size))
    if repeats:  # a few workers label a task twice
        extra = rng.choice(tasks.size, 200, replace=False)
        tasks, workers = np.append(tasks, tasks[extra]), np.append(workers, workers[extra])
        labels = np.append(labels, rng.integers(0, k, extra.size))
    order = rng.permutation(tasks.size)
    return LabelSet.from_arrays(tasks[order], workers[order], labels[order], n_classes=k)


@pytest.fixture
def low_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fit above 1,000 labels uses the threads (the real threshold is far higher)."""
    monkeypatch.setattr(_threads, "MIN_LABELS", 1000)
    monkeypatch.setattr(_threads, "available_cores", lambda: 3)
    monkeypatch.setattr(_threads, "MIN_BLOCK_ROWS", 200)  # up to 12 blocks on 3,000 tasks


def fit(name: str, data: LabelSet, n: int) -> Any:
    with max_threads(n):
        return ESTIMATORS[name]().fit(data)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("k", [2, 5])
def test_threaded_fit_is_bitwise_the_single_threaded_fit(
    low_threshold: None, name: str, k: int
) -> None:
    for seed, repeats in ((0, False), (1, True)):
        data = random_crowd(k, seed, repeats=repeats)
        one, many = fit(name, data, 1), fit(name, data, 3)
        assert _threads.threads_for(data.n_labels) == 3
        assert one.proba_.tobytes() == many.proba_.tobytes()
        assert one.log_likelihood_ == many.log_likelihood_
        assert one.n_iter_ == many.n_iter_
        assert one.prior_.tobytes() == many.prior_.tobytes()


@pytest.mark.parametrize("k", [2, 3, 5])
def test_kernels_split_over_threads_give_the_same_bits(k: int) -> None:
    data = random_crowd(k, 7, repeats=True)
    rng = np.random.default_rng(k)
    emission = rng.normal(size=(data.n_workers * k, k))
    proba = rng.dirichlet(np.ones(k), size=data.n_tasks)
    for n in (2, 3, 4):
        assert np.array_equal(column_products(data.incidence, emission, n),
                              data.incidence @ emission)
        assert np.array_equal(transposed_products(data.incidence, proba, n),
                              data.incidence.T @ proba)
        assert transposed_products(data.incidence, proba, n).flags.c_contiguous
        prior = np.log(rng.dirichlet(np.ones(k)))
        want_q, want_ll = normalise_log(data.incidence @ emission + prior[None, :])
        got_q, got_ll = log_posterior(data.incidence, emission, prior, n)
        assert got_q.tobytes("C") == want_q.tobytes("C") and got_ll == want_ll
        joint = rng.normal(scale=30.0, size=(data.n_tasks, k))
        want, want_ll = normalise_log(joint.copy())
        got, got_ll = normalise_log(np.asfortranarray(joint), n_threads=n)
        assert got.tobytes("C") == want.tobytes("C") and got_ll == want_ll


def test_cap_and_threshold() -> None:
    previous = set_max_threads(None)
    try:
        assert _threads.threads_for(_threads.MIN_LABELS - 1) == 1
        assert _threads.threads_for(_threads.MIN_LABELS) == _threads.available_cores()
        with max_threads(1):
            assert _threads.threads_for(10**9) == 1
        assert _threads.thread_limit() == _threads.available_cores()
        with pytest.raises(ValueError, match="max threads must be >= 1"):
            set_max_threads(0)
    finally:
        set_max_threads(previous)


def test_a_failing_block_raises_in_the_caller() -> None:
    def boom() -> None:
        raise RuntimeError("block failed")

    with pytest.raises(RuntimeError, match="block failed"):
        _threads.run_parallel([boom, lambda: None])
    assert _threads.blocks(5, 2) == [(0, 2), (2, 5)]
    assert _threads.blocks(2, 4) == [(0, 1), (1, 2)]
    assert _threads.row_blocks(100_000, 1) == [(0, 100_000)]
    assert len(_threads.row_blocks(100_000, 2)) == 8  # up to four per thread
    assert len(_threads.row_blocks(10_000, 2)) == 2  # but not below MIN_BLOCK_ROWS rows


def test_every_task_runs_once_whichever_thread_takes_it() -> None:
    done: list[int] = []
    _threads.run_parallel([functools.partial(done.append, i) for i in range(50)], 3)
    assert sorted(done) == list(range(50))


def report_threads(rep: int, arm: int) -> tuple[int, int, int]:
    """A study unit that reports how many threads the aggregation kernels may use."""
    return rep, arm, _threads.thread_limit()


def test_study_worker_processes_run_the_kernels_on_one_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from marketsim.study import backends

    # these units are tiny: make worker processes pay, or they would run in this process
    monkeypatch.setattr(backends, "worth_processes", lambda *_: True)
    units = sorted(backends.local_units(report_threads, [(0, 0), (1, 0)], jobs=2))
    assert units == [(0, 0, 1), (1, 0, 1)]
    serial = list(backends.local_units(report_threads, [(0, 0)], jobs=1))
    assert serial == [(0, 0, _threads.thread_limit())]  # one job: the cores are free


def _blas_threads() -> int:
    from threadpoolctl import threadpool_info

    return min(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")


def test_one_blas_thread_caps_blas_inside_and_restores_it() -> None:
    pytest.importorskip("threadpoolctl")
    from threadpoolctl import threadpool_limits

    with threadpool_limits(2, user_api="blas"):
        with _threads.one_blas_thread():
            assert _blas_threads() == 1
        assert _blas_threads() == 2


@pytest.mark.parametrize("name", ["mmsr", "kos-svd", "ghosh-svd", "opt-ds"])
def test_small_dense_linear_algebra_runs_on_one_blas_thread_same_numbers(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """M-MSR's eigh, the SVD baselines' dense SVD and Opt-D&S's moment algebra run on one
    BLAS thread (on a loaded 2-core machine, 300 times faster for a 39-worker eigh), with
    the numbers of the default thread count."""
    pytest.importorskip("threadpoolctl")
    import contextlib

    from threadpoolctl import threadpool_limits

    from marketsim.aggregation import _binary, dawid_skene, make_estimator, mmsr

    rng = np.random.default_rng(7)
    truth = rng.integers(0, 2, 300)
    tasks = np.repeat(np.arange(300), 5)
    workers = np.concatenate([rng.choice(40, 5, replace=False) for _ in range(300)])
    right = rng.random(tasks.size) < np.linspace(0.55, 0.95, 40)[workers]
    data = LabelSet(tasks, workers, np.where(right, truth[tasks], 1 - truth[tasks]), 300, 40, 2)
    seen: list[int] = []
    calls = {"eigh": np.linalg.eigh, "svd": np.linalg.svd}

    def spy(fn: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(_blas_threads())
        return calls[fn](*args, **kwargs)

    with threadpool_limits(2, user_api="blas"):
        monkeypatch.setattr(np.linalg, "eigh", functools.partial(spy, "eigh"))
        monkeypatch.setattr(np.linalg, "svd", functools.partial(spy, "svd"))
        capped = make_estimator(name).fit(data).proba_
        assert seen and set(seen) == {1}
        for module in (_binary, mmsr, dawid_skene):
            monkeypatch.setattr(module, "one_blas_thread", contextlib.nullcontext)
        seen.clear()
        free = make_estimator(name).fit(data).proba_
        assert set(seen) == {2}
    np.testing.assert_array_equal(capped, free)
