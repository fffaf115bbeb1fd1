"""Binary reduction shared by the Table 3 baselines of Zhang et al. (2014).

A K-class problem becomes K-1 binary ones: for threshold l = 1..K-1 the (n_tasks, n_workers)
matrix ``O[i, j] = +1`` if worker j's (1-based) label on task i exceeds l, ``-1`` if not, and 0
where j did not label i. A binary estimator returns a ±1 sign per task for each threshold; the
predicted (1-based) class is the first l whose sign is -1, else K.

Thresholds need an order of the classes. So that renaming the classes cannot change the answer
(#13 item 22), :func:`class_order` takes it from the data: the reverse of the tie rule's class
rank (:func:`._ties.class_rank`), i.e. rarest class first, by label count, and of classes with
equal counts the one first given last, never by name. ``class_order="given"`` thresholds in
index order, as Zhang et al.'s released code does (needed to reproduce their Table 3 on the
4-class Dog data). With K = 2 there is one threshold and the given order is always kept: the
binary estimators are symmetric in the two classes up to exact zero signs, and a task whose
sign is exactly 0 is a tie, decided by the estimators' one tie rule (:mod:`._ties`), not sent
to the class whose name sorts last.

:class:`ThresholdReduction` is the estimator skeleton; each baseline supplies its sign rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import connected_components

from marketsim.aggregation._numeric import check_choice
from marketsim.aggregation._threads import one_blas_thread
from marketsim.aggregation._ties import break_ties, class_rank
from marketsim.aggregation.base import BaseAggregator
from marketsim.aggregation.identifiability import warn_if_not_identifiable
from marketsim.aggregation.options import Params, param
from marketsim.data.labels import LabelSet

#: Matrices with at most this many cells are decomposed densely (faster and deterministic).
DENSE_LIMIT = 4_000_000

#: How the threshold reduction orders the classes (see the module docstring).
CLASS_ORDERS = ("frequency", "given")


def class_order(data: LabelSet, how: str) -> np.ndarray:
    """Classes in threshold order: ``order[r]`` is the class ranked r-th (0-based).

    ``"frequency"``: by label count, rarest first; of equal counts the class first given last
    (the reverse of :func:`._ties.class_rank`); ``"given"`` (and any K <= 2): index order.
    """
    check_choice("class_order", how, CLASS_ORDERS)
    k = data.n_classes
    if how == "given" or k <= 2:
        return np.arange(k)
    return np.argsort(class_rank(data))[::-1].copy()


def threshold_matrix(data: LabelSet, level: int) -> sp.csr_matrix:
    """±1 matrix for threshold ``level`` (1-based: +1 iff 0-based label >= level).

    Repeated (task, worker) pairs are combined by the sign of their summed ±1 votes.
    """
    vals = np.where(data.labels >= level, 1.0, -1.0)
    mat = sp.csr_matrix(
        (vals, (data.tasks, data.workers)), shape=(data.n_tasks, data.n_workers)
    )
    mat.sum_duplicates()
    mat.data = np.sign(mat.data)
    mat.eliminate_zeros()
    return mat


def combine_signs(signs: np.ndarray, n_classes: int) -> np.ndarray:
    """0-based class per task from ``signs`` (n_tasks, K-1): first l with sign -1, else K."""
    n = signs.shape[0]
    if n_classes < 2 or n == 0:
        return np.zeros(n, dtype=np.int64)
    neg = signs < 0
    first = np.argmax(neg, axis=1)
    return np.where(neg.any(axis=1), first, n_classes - 1).astype(np.int64)


def by_parts(binary: Callable[[sp.csr_matrix], np.ndarray], mat: sp.csr_matrix) -> np.ndarray:
    """``binary`` run on each connected part of the task-worker graph of ``mat`` on its own
    (its own singular vectors and its own sign orientation); a task nobody labelled gets 0.

    A part shares no worker with the others, so nothing in the data relates their signs: one
    decomposition of the whole matrix puts its top vector on one part (or, on equal singular
    values, on a mix that depends on the order of the workers) and leaves the others to
    rounding. Most crowds have one part, run as before. A loop over the parts, each a sparse
    slice; the parts come from one ``connected_components`` call.
    """
    n, m = mat.shape
    pattern = abs(mat)
    graph = sp.bmat([[None, pattern], [pattern.T, None]], format="csr")
    n_parts, part = connected_components(graph, directed=False)
    if n_parts <= 1:
        return binary(mat)
    task_part, worker_part = part[:n], part[n:]
    out = np.zeros(n)
    tasks_by = np.argsort(task_part, kind="stable")
    workers_by = np.argsort(worker_part, kind="stable")
    task_cut = np.searchsorted(task_part[tasks_by], np.arange(n_parts + 1))
    worker_cut = np.searchsorted(worker_part[workers_by], np.arange(n_parts + 1))
    for p in range(n_parts):
        cols = workers_by[worker_cut[p]:worker_cut[p + 1]]
        if cols.size == 0:  # a task without labels
            continue
        rows = tasks_by[task_cut[p]:task_cut[p + 1]]
        out[rows] = binary(mat[rows][:, cols].tocsr())
    return out


def reduce_and_combine(
    data: LabelSet,
    binary: Callable[[sp.csr_matrix], np.ndarray],
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Run ``binary(O) -> ±1 signs (n_tasks,)`` on every threshold matrix and combine.

    ``order`` (from :func:`class_order`) is the class order the thresholds follow; ``None``
    is index order.
    """
    k = data.n_classes
    if order is not None and np.any(order != np.arange(k)):
        rank = np.empty(k, dtype=np.int64)
        rank[order] = np.arange(k)
        ranked = LabelSet(data.tasks, data.workers, rank[data.labels], data.n_tasks,
                          data.n_workers, k)
        return np.asarray(order)[reduce_and_combine(ranked, binary)]
    signs = np.zeros((data.n_tasks, max(k - 1, 0)))
    if data.n_tasks and data.n_workers and data.n_labels:
        for level in range(1, k):
            mat = threshold_matrix(data, level)
            if mat.nnz and (mat.data > 0).all():  # every label is >= level
                signs[:, level - 1] = 1.0
            elif mat.nnz and (mat.data < 0).all():  # none is (e.g. a class nobody chose)
                signs[:, level - 1] = -1.0
            else:
                signs[:, level - 1] = by_parts(binary, mat)
    if k == 2:  # a zero sign is a tie between the two classes: the one tie rule decides
        return break_ties(np.column_stack([-signs[:, 0], signs[:, 0]]), data)
    return combine_signs(signs, k)


def top_singular(
    mat: sp.spmatrix | np.ndarray, *, center_columns: bool = False
) -> tuple[np.ndarray, float, np.ndarray]:
    """Top singular triple (u, s, v) of ``mat`` (columns optionally centred to mean 0).

    Dense LAPACK for small matrices, ARPACK (``svds``) on a linear operator otherwise, so the
    centred matrix is never formed for large inputs. Where the dense path finds the top
    singular value repeated (within ``1e-9``), no direction is the top one (LAPACK's pick
    depends on the order of the rows and columns): ``u`` and ``v`` are zeros, a tie for the
    sign rules.
    """
    n, m = mat.shape
    if n == 0 or m == 0:
        return np.zeros(n), 0.0, np.zeros(m)
    if n * m <= DENSE_LIMIT or min(n, m) < 3:
        dense = (mat.toarray() if sp.issparse(mat)  # type: ignore[union-attr]
                 else np.asarray(mat, dtype=np.float64))
        if center_columns:
            dense = dense - dense.mean(axis=0, keepdims=True)
        with one_blas_thread():
            u, s, vt = np.linalg.svd(dense, full_matrices=False)
        if s.size > 1 and s[1] >= s[0] * (1.0 - 1e-9):
            return np.zeros(n), float(s[0]), np.zeros(m)
        return u[:, 0], float(s[0]), vt[0]
    csr = sp.csr_matrix(mat, dtype=np.float64)
    means = np.asarray(csr.mean(axis=0)).ravel() if center_columns else np.zeros(m)
    ones = np.ones(n)
    op = spla.LinearOperator(
        (n, m),
        matvec=lambda x: csr @ np.ravel(x) - ones * (means @ np.ravel(x)),
        rmatvec=lambda y: csr.T @ np.ravel(y) - means * ones.dot(np.ravel(y)),
        dtype=np.float64,
    )
    u, s, vt = spla.svds(op, k=1, v0=np.ones(min(n, m)) / np.sqrt(min(n, m)))
    return u[:, 0], float(s[0]), vt[0]


def tie_sign(u: np.ndarray) -> np.ndarray:
    """``sign(u)`` with entries within rounding of 0 (``|u_i| <= 1e-12 max|u|``) set to 0.

    The tie rule of the spectral sign estimators: a task whose singular-vector entry is 0 in
    exact arithmetic gets sign 0 (counted as "not below" the threshold) whatever rounding
    noise the decomposition leaves, so the answer does not depend on the task order.
    """
    scale = float(np.abs(u).max(initial=0.0))
    return np.sign(np.where(np.abs(u) > 1e-12 * scale, u, 0.0))


def one_hot(labels: np.ndarray, n_classes: int) -> np.ndarray:
    """(n, K) one-hot rows of ``labels``."""
    out = np.zeros((labels.shape[0], n_classes))
    out[np.arange(labels.shape[0]), labels] = 1.0
    return out


def fitted_hard(est: object, data: LabelSet, labels: np.ndarray) -> None:
    """Set the fitted attributes of a non-iterative hard-label estimator."""
    k = data.n_classes
    est.labels_ = labels  # type: ignore[attr-defined]
    est.proba_ = one_hot(labels, k)  # type: ignore[attr-defined]
    est.prior_ = (  # type: ignore[attr-defined]
        np.bincount(labels, minlength=k) / labels.shape[0]
        if labels.shape[0]
        else np.full(k, 1.0 / k)
    )
    est.log_likelihood_ = []  # type: ignore[attr-defined]


class ThresholdReduction(BaseAggregator):
    """Skeleton of the hard-label baselines: one sign rule, K-1 thresholds, one class per task.

    Subclasses give ``_sign_rule()`` (a function ``O -> ±1 signs per task``, made afresh per
    fit so it may hold a seeded generator) and may set ``_rounds`` (reported as ``n_iter_``).
    Sets ``proba_`` (one-hot), ``labels_``, ``prior_`` (predicted class shares),
    ``log_likelihood_ = []``, ``n_iter_``, ``converged_ = True``.

    Parameters: :class:`ThresholdReduction.Options`.
    """

    class Options(Params):
        """Parameters of a threshold-reduction estimator."""

        class_order: Literal["frequency", "given"] = param(
            "frequency", "order of the classes for the thresholds: by label count (the result "
            "does not depend on how the classes are named) or as given (Zhang et al.'s)")

    class_order: str

    def _sign_rule(self) -> Callable[[sp.csr_matrix], np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    def _rounds(self) -> int:
        return 0

    def fit(self, data: LabelSet, **_: Any) -> ThresholdReduction:
        """Estimate one sign per task and threshold, then combine into classes."""
        order = class_order(data, self.class_order)
        fitted_hard(self, data, reduce_and_combine(data, self._sign_rule(), order))
        self.n_iter_ = self._rounds()
        self.converged_ = True
        warn_if_not_identifiable(data)
        return self
