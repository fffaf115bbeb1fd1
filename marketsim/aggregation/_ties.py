"""The one tie rule of every deterministic estimator: which class a task gets when its
estimator's scores (posteriors, weighted votes) tie at the top.

Among the classes whose score is the task's highest (within rounding: ``1e-9`` of the top,
relative to ``max(1, |top|)``, so that a tie does not depend on the order in which a sum
was added), the task gets

1. the class with the most votes on that task (its majority vote), then
2. the class with the most labels in the whole data set, then the one that tops the vote on
   more tasks, then the one given by more workers, then the one whose labels are more
   concentrated on few workers (sum over workers of their count squared), then
3. the class whose first label comes first in the label rows (the file's order),
4. and only among classes nobody ever gave, the lowest index.

Every step reads counts and the order of the rows, none reads a class's, worker's or task's
name or number: renaming classes, workers or tasks renames the answer and changes nothing
else. Shuffling the rows changes only step 3, the last resort of a crowd symmetric in every
count of step 2 (e.g. two classes given equally often, on equally many tasks, by equally many
workers). Before, an exact tie went to
the lowest class index: the class whose name sorts first, so the answer depended on how the
classes were spelled.
"""

from __future__ import annotations

import numpy as np

from marketsim.aggregation._numeric import hash_uniform
from marketsim.data.labels import LabelSet

#: Scores within this much of a task's top score (times ``max(1, |top|)``) tie with it.
TIE_TOL = 1e-9


def class_rank(data: LabelSet) -> np.ndarray:
    """Rank of each class under steps 2-4 (0 first): the counts of step 2, then the earliest
    first row, then (classes never given) the index."""
    k = data.n_classes
    counts = np.bincount(data.labels, minlength=k)
    votes = data.vote_counts()
    tops = (votes == votes.max(axis=1, keepdims=True)).sum(axis=0) if data.n_tasks else counts
    per_worker = data.worker_label_counts
    givers = (per_worker > 0).sum(axis=0)
    spread = (per_worker.astype(np.float64) ** 2).sum(axis=0)
    first = np.full(k, data.n_labels, dtype=np.int64)
    np.minimum.at(first, data.labels, np.arange(data.n_labels))
    order = np.lexsort((np.arange(k), first, -spread, -givers, -tops, -counts))
    rank = np.empty(k, dtype=np.int64)
    rank[order] = np.arange(k)
    return rank


def tied_top(scores: np.ndarray) -> np.ndarray:
    """(n, K) mask of the classes tied at each row's top score (see :data:`TIE_TOL`)."""
    top = scores.max(axis=1, keepdims=True)
    return scores >= top - TIE_TOL * np.maximum(1.0, np.abs(top))


def break_ties(scores: np.ndarray, data: LabelSet) -> np.ndarray:
    """Class per task: the top of ``scores`` (n_tasks, K), ties broken by the module's rule
    (the rule's counts are read only where some task ties)."""
    n, k = scores.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    if k == 2:  # the two-class mask without a (n, 2) reduction
        gap = scores[:, 1] - scores[:, 0]
        top = np.maximum(scores[:, 0], scores[:, 1])
        labels = (gap > 0).astype(np.int64)
        tied = np.flatnonzero(np.abs(gap) <= TIE_TOL * np.maximum(1.0, np.abs(top)))
    else:
        labels = np.argmax(scores, axis=1).astype(np.int64)
        tied = np.flatnonzero(tied_top(scores).sum(axis=1) > 1)
    if tied.size == 0:
        return labels
    top_mask = tied_top(scores[tied])
    inside = np.zeros(n, dtype=bool)
    inside[tied] = True
    keep = inside[data.tasks]
    row = np.full(n, -1, dtype=np.int64)
    row[tied] = np.arange(tied.size)
    votes = np.bincount(row[data.tasks[keep]] * k + data.labels[keep],
                        minlength=tied.size * k).reshape(tied.size, k)
    votes = np.where(top_mask, votes, -1)
    top_mask &= votes >= votes.max(axis=1, keepdims=True)
    ranked = np.where(top_mask, class_rank(data)[None, :], k)
    labels[tied] = np.argmin(ranked, axis=1)
    return labels


def seeded_ties(counts: np.ndarray, data: LabelSet, seed: int) -> np.ndarray:
    """Majority vote's rule: the top of ``counts`` (n_tasks, K), a tie among t classes broken
    at random, the same way under any renaming. Each tied task draws one uniform ``u`` hashed
    from ``seed`` and the row of its first label (its place in the file, not its name; every
    task without labels draws the same) and takes the ``floor(u t)``-th of its tied classes in
    the order of :func:`class_rank`. So a seed gives one answer, renaming classes, workers or
    tasks renames it, and over seeds each tied class is equally likely."""
    n, k = counts.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    top = counts == counts.max(axis=1, keepdims=True)
    n_tied = top.sum(axis=1)
    labels = np.argmax(counts, axis=1).astype(np.int64)
    tied = np.flatnonzero(n_tied > 1)
    if tied.size == 0:
        return labels
    first = np.full(n, data.n_labels, dtype=np.int64)
    np.minimum.at(first, data.tasks, np.arange(data.n_labels))
    u = hash_uniform(seed, first[tied])
    pick = np.minimum((u * n_tied[tied]).astype(np.int64), n_tied[tied] - 1)
    in_rank_order = np.argsort(np.where(top[tied], class_rank(data)[None, :], k), axis=1,
                               kind="stable")
    labels[tied] = in_rank_order[np.arange(tied.size), pick]
    return labels
