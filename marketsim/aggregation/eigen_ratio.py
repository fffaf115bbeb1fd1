"""EigenRatio ("ratio of eigenvectors", Dalvi, Dasgupta, Kumar & Rastogi, "Aggregating
crowdsourced binary ratings", WWW 2013), in the variant run by Zhang, Chen, Zhou & Jordan (2014),
Table 3. K>2 by threshold reduction.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from marketsim.aggregation._binary import fitted_hard, reduce_and_combine, top_singular
from marketsim.aggregation.base import BaseAggregator, warn_if_not_identifiable
from marketsim.data.labels import LabelSet


def eigen_ratio_signs(mat: sp.csr_matrix) -> np.ndarray:
    """Task signs from ``v = v1 / v2``, the top singular vectors of
    ``R1 = (O^T O) ./ (G^T G + 1e-8)`` and ``R2 = [G^T G > 0]`` (``G = |O|``); ``u = O v``,
    flipped so that ``u^T O 1 >= 0``. Workers where ``v2`` vanishes get weight 0.
    """
    gram = (mat.T @ mat).toarray()
    g = abs(mat)
    overlap = (g.T @ g).toarray()
    r1 = gram / (overlap + 1e-8)
    r2 = (overlap > 0).astype(np.float64)
    v1 = top_singular(r1)[0]
    v2 = top_singular(r2)[0]
    v2 = v2 if v2.sum() >= 0 else -v2  # Perron vector of a non-negative matrix
    ok = np.abs(v2) > 1e-12
    v = np.where(ok, v1 / np.where(ok, v2, 1.0), 0.0)
    u = mat @ v
    row_sums = np.asarray(mat.sum(axis=1)).ravel()
    return np.sign(u) if u @ row_sums >= 0 else -np.sign(u)


class EigenRatio(BaseAggregator):
    """Dalvi et al.'s EigenRatio estimator (binary one-coin model; K>2 via thresholds).

    Sets ``proba_`` (one-hot), ``labels_``, ``prior_`` (predicted class shares),
    ``log_likelihood_ = []``, ``n_iter_ = 0``, ``converged_ = True``.
    """

    def __init__(self) -> None:
        pass

    def fit(self, data: LabelSet, **_: Any) -> EigenRatio:
        """Estimate one sign per task and threshold, then combine into classes."""
        fitted_hard(self, data, reduce_and_combine(data, eigen_ratio_signs))
        self.n_iter_ = 0
        self.converged_ = True
        warn_if_not_identifiable(data)
        return self
