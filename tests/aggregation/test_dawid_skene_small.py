"""Dawid–Skene's fused two-class steps for fits on one thread (``_binary_ds_steps``, issue #39):
every fitted number is bit for bit the general path's (``EMAggregator``'s steps, which the
threaded big fits keep), on random crowds with every option that reaches the steps: smoothing,
a fixed prior, gold tasks, random and spectral starts, warm starts, exact fixed points, idle
workers and tasks, a prior that reaches 0, more than a thousand tasks (the blocks of logs) and
an incidence matrix with shared values (a market's)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from marketsim.aggregation import DawidSkene
from marketsim.aggregation._binary_ds_steps import fits_one_thread
from marketsim.aggregation._ones import NATIVE, shared_ones
from marketsim.aggregation.base import EMAggregator
from marketsim.data.labels import LabelSet

#: Small random crowds need not be identifiable, converge in 40 iterations or have a spectral
#: start: the claim here is the bits, whatever the fit says of itself.
pytestmark = [pytest.mark.filterwarnings("ignore::marketsim.aggregation.identifiability."
                                         "NotIdentifiableWarning"),
              pytest.mark.filterwarnings("ignore::marketsim.aggregation.estimator."
                                         "ConvergenceWarning"),
              pytest.mark.filterwarnings("ignore::marketsim.aggregation.spectral."
                                         "SpectralFallbackWarning")]

FITTED = ("proba_", "labels_", "confusion_", "prior_", "log_likelihood_", "n_iter_",
          "converged_")


def crowd(seed: int, n_tasks: int, per_task: int = 3, n_workers: int = 12,
          idle_workers: int = 0, idle_tasks: int = 0) -> tuple[LabelSet, np.ndarray]:
    """A two-class crowd of workers right 30-95 % of the time, and its truth."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_tasks)
    labelled = n_tasks - idle_tasks
    tasks = np.repeat(np.arange(labelled), per_task)
    workers = np.argsort(rng.random((labelled, n_workers)), axis=1)[:, :per_task].ravel()
    right = rng.random(tasks.size) < rng.uniform(0.3, 0.95, n_workers)[workers]
    labels = np.where(right, truth[tasks], 1 - truth[tasks])
    return LabelSet(tasks, workers, labels, n_tasks, n_workers + idle_workers, 2), truth


def fitted(model: DawidSkene, data: LabelSet, **fit: Any) -> list[Any]:
    model.fit(data, **fit)
    return [np.asarray(getattr(model, name)) for name in FITTED]


def general_path(model: DawidSkene, data: LabelSet, monkeypatch: pytest.MonkeyPatch,
                 **fit: Any) -> list[Any]:
    """The fit through EMAggregator's general steps (binary_confusion, _binary_e_step)."""
    with monkeypatch.context() as patch:
        patch.setattr(DawidSkene, "_em_steps", EMAggregator._em_steps)
        return fitted(model, data, **fit)


def assert_same_bits(got: list[Any], want: list[Any]) -> None:
    for name, a, b in zip(FITTED, got, want, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype, name
        assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), name


OPTIONS = {
    "defaults": {},
    "smoothing": {"smoothing": 1.0},
    "fixed-prior": {"class_prior": [0.3, 0.7]},
    "random-start": {"init": "random", "random_state": 5},
    "spectral-start": {"init": "spectral", "random_state": 5},
    "tol-0": {"tol": 0, "max_iter": 40},  # to the exact fixed point, or 40 iterations
}


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
@pytest.mark.parametrize(("seed", "n_tasks", "idle"), [(0, 40, 0), (1, 300, 2)])
def test_the_fused_steps_give_the_general_paths_bits(
        options: dict[str, Any], seed: int, n_tasks: int, idle: int,
        monkeypatch: pytest.MonkeyPatch) -> None:
    data, truth = crowd(seed, n_tasks, idle_workers=idle, idle_tasks=idle)
    assert fits_one_thread(data)  # the fused steps are what the fit below runs
    known = np.where(np.arange(n_tasks) % 7 == 0, truth, -1)
    for fit in ({}, {"known": known}):
        want = general_path(DawidSkene(**options), data, monkeypatch, **fit)
        assert_same_bits(fitted(DawidSkene(**options), data, **fit), want)
    warm = DawidSkene(**options).fit(data).params_
    assert_same_bits(fitted(DawidSkene(**options), data, init_params=warm),
                     general_path(DawidSkene(**options), data, monkeypatch, init_params=warm))


def test_more_than_a_thousand_tasks_give_the_same_bits(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """The log-likelihood's logs of products of 1,000 rows, and a remainder."""
    data, truth = crowd(2, 2345, idle_workers=1, idle_tasks=1)
    known = np.where(np.arange(data.n_tasks) % 7 == 0, truth, -1)
    assert_same_bits(fitted(DawidSkene(), data, known=known),
                     general_path(DawidSkene(), data, monkeypatch, known=known))


def test_a_class_that_loses_all_its_mass_takes_the_general_e_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every label 0: the majority start gives class 1 no mass, its prior is 0 and the
    log-odds form does not apply; the fused steps hand that E-step to the general one."""
    data = LabelSet.from_arrays([0, 0, 1, 1, 2], [0, 1, 0, 1, 1], [0, 0, 0, 0, 0])
    data = LabelSet(data.tasks, data.workers, data.labels, data.n_tasks, data.n_workers, 2)
    got = fitted(DawidSkene(), data)
    assert got[3][1] == 0.0  # prior_
    assert_same_bits(got, general_path(DawidSkene(), data, monkeypatch))


@pytest.mark.skipif(not NATIVE, reason="shared values need the compiled pattern kernels")
def test_a_markets_shared_values_give_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = crowd(3, 200)
    plain = data.incidence
    shared = sp.csr_matrix((shared_ones(plain.nnz), plain.indices, plain.indptr),
                           shape=plain.shape, copy=False)
    market = LabelSet(data.tasks, data.workers, data.labels, data.n_tasks, data.n_workers, 2)
    market.__dict__["_canonical_incidence"] = (shared, data.has_repeated_pairs)  # a log's
    assert market.incidence.data.strides == (0,)
    assert_same_bits(fitted(DawidSkene(), market), fitted(DawidSkene(), data))
    assert_same_bits(fitted(DawidSkene(), market),
                     general_path(DawidSkene(), market, monkeypatch))
