"""Building blocks of the worker-aware policies (``qasca``, ``explore-exploit``,
``oracle-workers``): QASCA's expected-gain kernel (Zheng et al., SIGMOD 2015), the arriving
worker's confusion matrix, the task pick with the stale-posterior rule, and the decline rule
that never turns the whole crowd away."""

from __future__ import annotations

import numpy as np

from marketsim.policies.base import MarketState
from marketsim.policies.simple import posterior_entropy

#: Gains below this are rounding noise of an exact zero (the answer cannot change the decision).
GAIN_TOL = 1e-12


def one_coin_matrices(accuracy: np.ndarray, k: int) -> np.ndarray:
    """(n, K, K) symmetric matrices: ``accuracy`` on the diagonal, the rest spread evenly."""
    accuracy = np.asarray(accuracy, dtype=np.float64)
    eye = np.eye(k)
    wrong = (1.0 - accuracy) / max(k - 1, 1)
    return accuracy[:, None, None] * eye + wrong[:, None, None] * (1.0 - eye)


def worker_confusion(state: MarketState, worker: int) -> np.ndarray:
    """The arriving worker's estimated (K, K) confusion matrix, rows = true class: the state's
    ``confusion`` when the market gives one, else the one-coin matrix of its ``skill``."""
    if state.confusion is not None:
        return np.asarray(state.confusion[worker], dtype=np.float64)
    k = state.proba.shape[1]
    return one_coin_matrices(np.asarray(state.skill[worker : worker + 1]), k)[0]


def expected_accuracy_gain(proba: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """Expected gain in accuracy of each task (n,) from one answer by a worker with ``confusion``.

    With ``P(a) = Σ_k p_k C[k, a]`` and ``p'(k | a) = p_k C[k, a] / P(a)`` the gain is
    ``Σ_a P(a) max_k p'(k | a) − max_k p_k = Σ_a max_k p_k C[k, a] − max_k p_k``: zero when no
    answer can change the task's decision. Vectorised over tasks; never negative.
    """
    proba = np.asarray(proba, dtype=np.float64)
    joint = proba[:, :, None] * np.asarray(confusion, dtype=np.float64)[None, :, :]
    gain = joint.max(axis=1).sum(axis=1) - proba.max(axis=1)
    return np.where(gain > GAIN_TOL, gain, 0.0)


def fresh_tasks(state: MarketState) -> np.ndarray:
    """Tasks the arriving worker may get (bool, n_tasks): not held by them, and among those the
    ones handed out the fewest times since the last refresh — so none while an untouched task is
    left. ``proba`` does not know about those labels yet; without this rule every worker between
    two refreshes would be sent to the same top task."""
    n = state.proba.shape[0]
    ok = np.ones(n, dtype=bool) if state.held is None else ~np.asarray(state.held, dtype=bool)
    if state.handed_since_refresh is not None and ok.any():
        handed = np.asarray(state.handed_since_refresh)
        ok &= handed == handed[ok].min()
    return ok


def pick_task(
    score: np.ndarray, secondary: np.ndarray, allowed: np.ndarray, rng: np.random.Generator
) -> int | None:
    """The allowed task with the largest ``score``; ties by the largest ``secondary``, then
    uniformly at random (one draw from ``rng``). ``None`` when no task is allowed."""
    if not allowed.any():
        return None
    s = np.where(allowed, score, -np.inf)
    top = s == s.max()
    sec = np.where(top, secondary, -np.inf)
    top &= sec == sec.max()
    best = np.flatnonzero(top)
    return int(best[rng.integers(best.size)])


class GainMemo:
    """The parts of :func:`best_gain_task` that depend only on the refresh's posterior, kept
    between the arrivals of one refresh: the posterior entropy, and the gain array of each
    distinct confusion matrix (a refresh serves hundreds of arrivals from a few dozen workers).
    The same arrays as computed afresh, so the picks do not change."""

    def __init__(self) -> None:
        self._proba: np.ndarray | None = None
        self._entropy = np.zeros(0)
        self._gains: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}

    def get(self, proba: np.ndarray, confusion: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(gain, entropy) for ``proba`` and ``confusion``; recomputed when ``proba`` is a new
        object (a refresh; the old one is held here, so its identity is not reused)."""
        if proba is not self._proba:
            self._proba, self._entropy, self._gains = proba, posterior_entropy(proba), {}
        confusion = np.asarray(confusion, dtype=np.float64)
        key = confusion.tobytes()
        entry = self._gains.get(key)
        if entry is None:
            entry = self._gains[key] = (confusion, expected_accuracy_gain(proba, confusion))
        return entry[1], self._entropy

    def rows_changed(self, proba: np.ndarray, tasks: np.ndarray) -> None:
        """``proba`` (the memo's array) changed in place at ``tasks``: recompute those rows of
        the entropy and of every kept gain array."""
        if proba is not self._proba or tasks.size == 0:
            return
        rows = proba[tasks]
        self._entropy[tasks] = posterior_entropy(rows)
        for confusion, gain in self._gains.values():
            gain[tasks] = expected_accuracy_gain(rows, confusion)


def best_gain_task(
    state: MarketState, confusion: np.ndarray, rng: np.random.Generator,
    memo: GainMemo | None = None,
) -> tuple[int | None, float]:
    """QASCA's pick for a worker with ``confusion`` and its gain: the largest expected accuracy
    gain among :func:`fresh_tasks`, ties (often zero gains) by posterior entropy, then at
    random; ``(None, 0.0)`` when no task is left for the worker. ``memo`` reuses the gains and
    entropy between arrivals of one refresh."""
    if memo is None:
        gain, entropy = expected_accuracy_gain(state.proba, confusion), posterior_entropy(
            state.proba)
    else:
        gain, entropy = memo.get(state.proba, confusion)
    task = pick_task(gain, entropy, fresh_tasks(state), rng)
    return task, (0.0 if task is None else float(gain[task]))


def open_workers(state: MarketState, n_workers: int) -> np.ndarray:
    """Workers who may still work (bool): those the market may hand a label now (not blocked,
    not departed, with capacity left, affordable: ``WorkerStats.available``) with a task they
    have neither labelled nor abandoned yet (an abandoned task is never handed to them again)."""
    w = state.workers
    if w is None:
        return np.ones(n_workers, dtype=bool)
    may = (np.asarray(w.available, dtype=bool) if w.available is not None
           else ~np.asarray(w.blocked, dtype=bool) & (np.asarray(w.capacity_left) != 0))
    used = np.asarray(w.labels)
    if w.abandoned is not None:
        used = used + np.asarray(w.abandoned)
    return may & (used < state.proba.shape[0])


def declines(worker: int, value: np.ndarray, cut: float, state: MarketState) -> bool:
    """Whether to decline ``worker``: their ``value`` is below ``cut`` while some worker who may
    still work reaches it. A crowd where nobody reaches the cut is not turned away (the market
    would be stuck), so the cut then admits everyone."""
    if value[worker] >= cut:
        return False
    return bool((value[open_workers(state, value.shape[0])] >= cut).any())
