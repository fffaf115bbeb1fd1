"""Skill-weighted voting, shared by Wawa, ZeroBasedSkill and M-MSR (crowd-kit's
``MajorityVote(skills=...)``), vectorised over labels with ``np.bincount``.

A weighted vote gives task i the score ``S[i, c] = sum_{j labelled i with c} w_j`` and predicts
``argmax_c S[i, c]`` (ties by the estimators' one rule, :mod:`._ties`: the task's majority, then
the class with the most labels, then the class given first; crowd-kit's ``idxmax`` takes the
class whose value sorts first). :class:`WeightedVote` is the estimator skeleton: ``fit``
estimates the worker weights (``_fit_weights``), then ``predict``/``predict_proba`` vote with
them on any labels of the same workers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.aggregation._ties import break_ties
from marketsim.aggregation.base import BaseAggregator
from marketsim.aggregation.identifiability import warn_if_not_identifiable
from marketsim.data.frames import labels_series, pandas, proba_frame
from marketsim.data.labels import LabelSet


def vote_scores(data: LabelSet, weights: np.ndarray) -> np.ndarray:
    """(n_tasks, K) summed weights ``S[i, c]`` of the workers who labelled task i with c."""
    k = data.n_classes
    flat = np.bincount(data.tasks * k + data.labels, weights=weights[data.workers],
                       minlength=data.n_tasks * k)
    return flat.astype(np.float64).reshape(data.n_tasks, k)


def top_class(scores: np.ndarray, data: LabelSet) -> np.ndarray:
    """Highest-scoring class per task; ties by the one tie rule (:mod:`._ties`: the task's
    majority, then the class with the most labels, then the class first given)."""
    return break_ties(scores, data)


def vote_shares(scores: np.ndarray) -> np.ndarray:
    """Rows of non-negative ``scores`` divided by their sums (crowd-kit's ``probas_``); a task
    with zero total weight (no labels, or only weight-0 workers) gets the uniform row."""
    k = scores.shape[1]
    total = scores.sum(axis=1, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    return np.where(total > 0, scores / safe, 1.0 / k)


def agreement(data: LabelSet, labels: np.ndarray, idle: np.ndarray | float) -> np.ndarray:
    """Per worker, the share of their labels equal to ``labels`` of the task (crowd-kit's
    ``get_accuracy(by="worker")``); workers without labels get ``idle``."""
    m = data.n_workers
    hits = np.bincount(data.workers, weights=labels[data.tasks] == data.labels, minlength=m)
    seen = np.bincount(data.workers, minlength=m)
    return np.where(seen > 0, hits / np.maximum(seen, 1), idle)


class WeightedVote(BaseAggregator):
    """Skeleton: ``_fit_weights(data)`` returns the per-worker vote weights; ``fit`` stores them
    as ``weights_`` and votes on ``data``. ``proba_`` is ``_proba(scores)`` (vote shares by
    default; M-MSR overrides it), ``labels_`` the top-scoring class, ``scores_`` the summed
    weights. ``predict``/``predict_proba`` vote with the fitted weights on other labels of the
    same workers: a :class:`LabelSet` coded as the fitted one, or a ``task, worker, label``
    DataFrame with the fitted workers' ids and label values.
    """

    def _fit_weights(self, data: LabelSet) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _proba(self, scores: np.ndarray) -> np.ndarray:
        return vote_shares(scores)

    def fit(self, data: LabelSet, **_: Any) -> WeightedVote:
        """Estimate the worker weights, then vote on ``data``; return ``self``."""
        self.weights_ = self._fit_weights(data)
        self.worker_ids_ = data.worker_ids
        self.class_values_ = data.class_values
        self.scores_, self.proba_, self.labels_ = self._vote(data)
        k = data.n_classes
        self.prior_ = self.proba_.mean(axis=0) if data.n_tasks else np.full(k, 1.0 / k)
        self.log_likelihood_: list[float] = []
        warn_if_not_identifiable(data)
        return self

    def _vote(self, data: LabelSet) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if data.n_workers != self.weights_.shape[0]:
            raise ValueError(f"the labels have {data.n_workers} workers, the fit had "
                             f"{self.weights_.shape[0]}")
        scores = vote_scores(data, self.weights_)
        return scores, self._proba(scores), top_class(scores, data)

    def _coded(self, data: Any) -> tuple[LabelSet, bool]:
        """``data`` as a LabelSet coded like the fit (workers and classes), and whether it
        came as a DataFrame."""
        if isinstance(data, LabelSet):
            return data, False
        frame = LabelSet.from_frame(data)
        worker = _codes(frame.worker_ids, self.worker_ids_, "worker")
        label = _codes(frame.class_values, self.class_values_, "label")
        coded = LabelSet(frame.tasks, worker[frame.workers], label[frame.labels], frame.n_tasks,
                         self.worker_ids_.shape[0], self.class_values_.shape[0],
                         frame.task_ids, self.worker_ids_, self.class_values_)
        return coded, True

    def predict(self, data: Any) -> Any:
        """Predicted class per task with the fitted weights: class indices for a LabelSet, a
        Series ``agg_label`` of label values indexed by task id for a DataFrame."""
        coded, frame = self._coded(data)
        labels = self._vote(coded)[2]
        return labels_series(coded.task_ids, self.class_values_[labels]) if frame else labels

    def predict_proba(self, data: Any) -> Any:
        """``proba_`` of the weighted vote with the fitted weights (an array, or a DataFrame
        indexed by task id with one column per label value)."""
        coded, frame = self._coded(data)
        proba = self._vote(coded)[1]
        return proba_frame(coded.task_ids, self.class_values_, proba) if frame else proba


def _codes(values: np.ndarray, fitted: np.ndarray, what: str) -> np.ndarray:
    """Index in ``fitted`` of each of ``values`` (pandas' hash lookup, no Python loop);
    one-line ValueError for a value the fit did not see."""
    codes = np.asarray(pandas().Index(fitted).get_indexer(values), dtype=np.int64)
    if np.any(codes < 0):
        unknown = values[np.flatnonzero(codes < 0)[0]]
        unknown = unknown.item() if isinstance(unknown, np.generic) else unknown
        raise ValueError(f"{what} {unknown!r} was not in the data the estimator was fitted on")
    return codes
