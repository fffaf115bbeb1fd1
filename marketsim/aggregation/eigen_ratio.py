"""EigenRatio ("ratio of eigenvectors", Dalvi, Dasgupta, Kumar & Rastogi, "Aggregating
crowdsourced binary ratings", WWW 2013), in the variant run by Zhang, Chen, Zhou & Jordan (2014),
Table 3. K>2 by threshold reduction.

Both matrices are worker by worker. Up to ``DENSE_LIMIT`` cells they are formed densely (the
reference computation); beyond, workers who labelled the same set of tasks are grouped (the
ratio only depends on the two groups' overlap), and the top singular vectors come from ARPACK
on an operator whose cost is labels plus tasks x groups, never workers squared.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from marketsim.aggregation._binary import (
    DENSE_LIMIT,
    ThresholdReduction,
    tie_sign,
    top_singular,
)
from marketsim.aggregation.ghosh_svd import ghosh_signs


def _orient(mat: sp.csr_matrix, v: np.ndarray) -> np.ndarray:
    """``sign(O v)``, flipped so that ``u^T O 1 > 0`` (all 0, a tie, where it is 0)."""
    u = mat @ v
    row_sums = np.asarray(mat.sum(axis=1)).ravel()
    score = float(u @ row_sums)
    if abs(score) <= 1e-12 * float(np.abs(u) @ np.abs(row_sums)):
        return np.zeros_like(u)
    return tie_sign(u) if score > 0 else -tie_sign(u)


def _ratio(v1: np.ndarray, v2: np.ndarray) -> np.ndarray:
    """``v1 / v2`` with ``v2`` made non-negative (Perron vector); 0 where ``v2`` vanishes."""
    v2 = v2 if v2.sum() >= 0 else -v2
    ok = np.abs(v2) > 1e-12
    return np.where(ok, v1 / np.where(ok, v2, 1.0), 0.0)


def task_set_groups(g: sp.csr_matrix) -> tuple[np.ndarray, sp.csr_matrix] | None:
    """Group the columns (workers) of the 0/1 matrix ``g`` by their set of rows (tasks).

    Returns ``(group per worker, tasks x groups 0/1 matrix)``. Columns are fingerprinted by
    two random integer projections, exact in float64, then checked exactly; ``None`` in the
    (astronomically unlikely) case of a fingerprint collision.
    """
    n, m = g.shape
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**40, size=(n, 2)).astype(np.float64)
    prints = np.asarray(g.T @ keys)  # exact integers: n * 2**40 < 2**53 as n < 8192
    _, first, group = np.unique(prints, axis=0, return_index=True, return_inverse=True)
    group = group.ravel()
    reps = g[:, first].tocsr()
    if (g - reps[:, group]).count_nonzero():
        return None
    return group, reps


def _grouped_vectors(mat: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray] | None:
    """Top singular vectors of ``R1`` and ``R2`` (see :func:`eigen_ratio_signs`) without
    forming them; ``None`` when the groups are too many for that to be cheap."""
    n, m = mat.shape
    g = abs(mat).tocsr()
    grouped = task_set_groups(g) if n < 8192 else None
    if grouped is None:
        return None
    group, reps = grouped
    p = reps.shape[1]
    if p * p > DENSE_LIMIT or n * p > DENSE_LIMIT:
        return None
    overlap = (reps.T @ reps).toarray()
    inv = 1.0 / (overlap + 1e-8)
    linked = (overlap > 0).astype(np.float64)
    member = sp.csr_matrix((np.ones(m), (np.arange(m), group)), shape=(m, p))
    coo = mat.tocoo()
    rows, cols, vals = coo.row, coo.col, coo.data
    csc = mat.tocsc()

    def r1(x: np.ndarray) -> np.ndarray:
        y = (csc @ sp.diags(np.ravel(x)) @ member).toarray()  # y[:, q] = O_q x_q
        z = y @ inv  # z[:, p] = sum_q y[:, q] / (overlap_qp + 1e-8)
        return np.bincount(cols, weights=vals * z[rows, group[cols]], minlength=m)

    def r2(x: np.ndarray) -> np.ndarray:
        return (linked @ (member.T @ np.ravel(x)))[group]

    v0 = np.ones(m) / np.sqrt(m)
    out = []
    for fn in (r1, r2):
        op = spla.LinearOperator((m, m), matvec=fn, rmatvec=fn, dtype=np.float64)
        _, _, vt = spla.svds(op, k=1, v0=v0)
        out.append(vt[0])
    return out[0], out[1]


def eigen_ratio_signs(mat: sp.csr_matrix) -> np.ndarray:
    """Task signs from ``v = v1 / v2``, the top singular vectors of
    ``R1 = (O^T O) ./ (G^T G + 1e-8)`` and ``R2 = [G^T G > 0]`` (``G = |O|``); ``u = O v``,
    flipped so that ``u^T O 1 >= 0``. Workers where ``v2`` vanishes get weight 0.

    Too many workers and task sets to group: Ghosh's signs, with a RuntimeWarning.
    """
    m = mat.shape[1]
    if m * m <= DENSE_LIMIT:
        gram = (mat.T @ mat).toarray()
        g = abs(mat)
        overlap = (g.T @ g).toarray()
        r1 = gram / (overlap + 1e-8)
        r2 = (overlap > 0).astype(np.float64)
        v1 = top_singular(r1)[0]
        v2 = top_singular(r2)[0]
    else:
        vectors = _grouped_vectors(mat)
        if vectors is None:
            warnings.warn(
                f"EigenRatio: {m} workers in too many distinct task sets for the worker-by-"
                "worker matrices; using Ghosh-SVD's signs instead",
                RuntimeWarning,
                stacklevel=4,
            )
            return ghosh_signs(mat)
        v1, v2 = vectors
    return _orient(mat, _ratio(v1, v2))


class EigenRatio(ThresholdReduction):
    """Dalvi et al.'s EigenRatio estimator (binary one-coin model; K>2 via thresholds).

    Parameters and fitted attributes: see
    :class:`~marketsim.aggregation._binary.ThresholdReduction`.
    """

    method = "eigen-ratio"
    description = "Dalvi et al.'s EigenRatio (K>2 by threshold reduction)"

    def _sign_rule(self) -> Callable[[sp.csr_matrix], np.ndarray]:
        return eigen_ratio_signs
