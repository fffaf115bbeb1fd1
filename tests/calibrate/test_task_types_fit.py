"""The task-type mixture ``marketsim calibrate`` fits (:mod:`marketsim.aggregation.task_types`):
on labels drawn from two task types it recovers the shares and each type's matrices and BIC
prefers two types to one; on labels drawn from one matrix per worker BIC keeps one; with one
type its likelihood is Dawid and Skene's with the classes known; the same seed gives the
same fit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from marketsim.aggregation.confusion_fit import counted_confusion
from marketsim.aggregation.task_types import fit_task_types, type_candidates
from marketsim.market.worker_models import draw_world
from marketsim.scenario.parser import parse_scenario
from marketsim.study.seeds import world_rng

N_WORKERS = 10
GOOD, POOR = [[0.9, 0.1], [0.1, 0.9]], [[0.6, 0.4], [0.4, 0.6]]
#: Type 0: the first half of the crowd is good, the second poor; type 1 the other way round.
TYPES = [[GOOD] * 5 + [POOR] * 5, [POOR] * 5 + [GOOD] * 5]


def world(shares: Any, matrices: Any, seed: int = 0) -> Any:
    """A world whose initial graph gives each task about 8 labels from the 10 workers."""
    confusion: dict[str, Any] = {"design": "per-worker"}
    if len(matrices) == 1:
        confusion["matrices"] = matrices[0]
    else:
        confusion.update(type_shares=shares, type_matrices=matrices)
    doc = {"scenario": {"seed": seed},
           "tasks": {"count": 1000, "classes": 2, "prior": [0.5, 0.5]},
           "workers": {"count": N_WORKERS, "model": "confusion", "confusion": confusion},
           "budget": {"edges": 10_000, "initial": "bernoulli", "initial_probability": 0.8,
                      "batch": 1000},
           "arms": [{"name": "ds", "policy": "uniform", "inference": "ds"}]}
    return draw_world(parse_scenario(doc, "x").crowd, world_rng(seed, 0))


def fit_input(w: Any) -> tuple[np.ndarray, ...]:
    weights = np.eye(2)[w.truth]
    return w.initial_tasks, w.initial_workers, w.initial_labels, weights


def test_two_types_are_recovered_and_preferred_by_bic() -> None:
    w = world([[0.3, 0.7]], TYPES)
    tasks, workers, labels, weights = fit_input(w)
    one = fit_task_types(tasks, workers, labels, weights, N_WORKERS, 1, per_class=False)
    fits = type_candidates(tasks, workers, labels, weights, N_WORKERS, counts=(2,))
    best = min(fits, key=lambda f: f.bic)
    assert best.bic < one.bic and best.n_types == 2 and not best.per_class, \
        [(f.name, f.bic) for f in fits]
    order = np.argsort(best.shares[0])  # the types up to their order: 0.3 then 0.7
    assert np.allclose(best.shares[0][order], [0.3, 0.7], atol=0.04), best.shares
    accuracy = np.trace(best.matrices[order], axis1=2, axis2=3) / 2  # (T, workers)
    expected = np.trace(np.asarray(TYPES), axis1=2, axis2=3) / 2
    assert np.abs(accuracy - expected).max() < 0.12, np.round(accuracy, 2)


def test_one_matrix_per_worker_keeps_one_type() -> None:
    w = world(None, [TYPES[0]], seed=1)
    tasks, workers, labels, weights = fit_input(w)
    one = fit_task_types(tasks, workers, labels, weights, N_WORKERS, 1, per_class=False)
    fits = type_candidates(tasks, workers, labels, weights, N_WORKERS, counts=(2,))
    assert all(f.bic > one.bic for f in fits), [(f.name, f.bic, one.bic) for f in fits]


def test_one_type_is_dawid_skene_with_the_classes_known() -> None:
    """With one type and no shrinkage target pull beyond the pooled counts, the fitted matrix
    is the counted one and the log-likelihood is sum log prod pi[c_i, y_l]."""
    w = world(None, [TYPES[0]], seed=2)
    tasks, workers, labels, weights = fit_input(w)
    fit = fit_task_types(tasks, workers, labels, weights, N_WORKERS, 1, per_class=False,
                         starts=1)
    pi = fit.matrices[0]
    expected = float(np.log(pi[workers, w.truth[tasks], labels]).sum())
    assert fit.log_likelihood == pytest.approx(expected, rel=1e-9)
    counted = counted_confusion(tasks, workers, labels, weights, N_WORKERS, smoothing=0.0)
    assert np.abs(pi - counted).max() < 0.02  # the shrinkage is worth 2 labels a row
    assert fit.n_params == N_WORKERS * 2


def test_the_same_seed_gives_the_same_fit_and_shares_are_stochastic() -> None:
    w = world([[0.5, 0.5], [0.2, 0.8]], TYPES, seed=3)
    args = fit_input(w)
    a = fit_task_types(*args, N_WORKERS, 2, per_class=True, seed=4)
    b = fit_task_types(*args, N_WORKERS, 2, per_class=True, seed=4)
    assert a.log_likelihood == b.log_likelihood and np.array_equal(a.matrices, b.matrices)
    assert a.shares.shape == (2, 2) and np.allclose(a.shares.sum(axis=1), 1)
    assert np.allclose(a.matrices.sum(axis=3), 1)


def test_a_large_files_short_runs_recover_the_types_as_full_runs_do(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Above ``SHORT_RUNS_LABELS`` only the best start after a few iterations runs on: on
    labels of two types it finds them as every start run to the end does."""
    w = world([[0.3, 0.7]], TYPES)
    tasks, workers, labels, weights = fit_input(w)
    full = fit_task_types(tasks, workers, labels, weights, N_WORKERS, 2, per_class=False)
    monkeypatch.setattr("marketsim.aggregation.task_types.SHORT_RUNS_LABELS", 0)
    short = fit_task_types(tasks, workers, labels, weights, N_WORKERS, 2, per_class=False)
    assert abs(short.log_likelihood - full.log_likelihood) < 1.0
    order = np.argsort(short.shares[0])
    assert np.allclose(short.shares[0][order], [0.3, 0.7], atol=0.04), short.shares
