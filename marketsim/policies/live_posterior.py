"""The refresh's posterior brought up to date between refreshes, for worker-aware policies.

The inference service refits every ``batch`` labels, so a policy acting on ``state.proba`` acts
on a posterior up to a batch old: it keeps sending labels to a task that the answers received
since the refresh have already settled, and cannot ask again about a task a new answer has made
doubtful. A requester on a real platform sees every answer as it comes. :class:`LivePosterior`
does what that requester would: it takes the refresh's posterior and multiplies in the
likelihood of each task label received since (``MarketState.received`` past the refresh's
labels), under the refresh's estimate of the answering worker's confusion matrix — the exact
Bayesian update with the worker parameters held fixed until the next refit. Only the tasks that
received labels change, so the work per arrival is the new labels only.
"""

from __future__ import annotations

import numpy as np

from marketsim.policies.base import MarketState
from marketsim.policies.worker_aware import one_coin_matrices

#: Probabilities are kept this far from 0 before taking logarithms.
_TINY = 1e-300


def worker_confusions(state: MarketState) -> np.ndarray:
    """(n_workers, K, K) estimated confusion matrices of the refresh: ``confusion`` when the
    estimator gives them, else the one-coin matrices of ``skill``."""
    if state.confusion is not None:
        return np.asarray(state.confusion, dtype=np.float64)
    return one_coin_matrices(np.asarray(state.skill, dtype=np.float64), state.proba.shape[1])


def fold_in(log_post: np.ndarray, proba: np.ndarray, log_confusion: np.ndarray,
            tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Multiply the likelihood of each label (``log_confusion[worker, :, label]``) into its
    task's log posterior ``log_post`` and renormalise those rows of ``proba``, both in place;
    the tasks that changed (sorted, distinct)."""
    t = np.asarray(tasks, dtype=np.int64)
    w = np.asarray(workers, dtype=np.int64)
    lab = np.asarray(labels, dtype=np.int64)
    np.add.at(log_post, t, log_confusion[w, :, lab])
    touched = np.unique(t)
    rows = log_post[touched]
    rows = np.exp(rows - rows.max(axis=1, keepdims=True))
    proba[touched] = rows / rows.sum(axis=1, keepdims=True)
    return touched


class LivePosterior:
    """The refresh's class posterior times the likelihood of every task label received since."""

    def __init__(self) -> None:
        self._refresh: np.ndarray | None = None
        self._log = np.zeros((0, 0))
        self._proba = np.zeros((0, 0))
        self._log_confusion = np.zeros((0, 0, 0))
        self._cursor = 0

    def update(self, state: MarketState) -> tuple[np.ndarray, np.ndarray | None]:
        """The live posterior (n_tasks, K) and the tasks it changed since the last call
        (``None``: all of them, after a refresh). The array is this object's own, updated in
        place: read it, never keep a reference across calls."""
        assert state.received is not None, "a live posterior needs the market's received labels"
        changed: np.ndarray | None
        if state.proba is not self._refresh:  # a refresh: start from its posterior
            # The refresh's proba is held here, so its identity is not reused.
            self._refresh = state.proba
            self._proba = np.array(state.proba, dtype=np.float64)
            self._log = np.log(np.maximum(self._proba, _TINY))
            self._log_confusion = np.log(np.maximum(worker_confusions(state), _TINY))
            self._cursor = int(state.labels.tasks.shape[0])
            changed = None
        else:
            changed = np.zeros(0, dtype=np.int64)
        tasks, workers, labels = state.received
        end = int(tasks.shape[0])
        if end > self._cursor:
            new = slice(self._cursor, end)
            touched = fold_in(self._log, self._proba, self._log_confusion, tasks[new],
                              workers[new], labels[new])
            self._cursor = end
            if changed is not None:
                changed = touched
        return self._proba, changed
