"""Ghosh-SVD (Ghosh, Kale & McAfee, "Who moderates the moderators?", EC 2011), as run in
Zhang, Chen, Zhou & Jordan (2014), Table 3: the sign of the top left singular vector of the ±1
task–worker matrix, oriented so that it agrees with the row sums. K>2 by threshold reduction.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from marketsim.aggregation._binary import fitted_hard, reduce_and_combine, top_singular
from marketsim.aggregation.base import BaseAggregator, warn_if_not_identifiable
from marketsim.data.labels import LabelSet


def ghosh_signs(mat: sp.csr_matrix) -> np.ndarray:
    """``u = sign(top left singular vector of O)``, flipped so that ``u^T O 1 >= 0``."""
    u, _, _ = top_singular(mat)
    u = np.sign(u)
    row_sums = np.asarray(mat.sum(axis=1)).ravel()
    return u if u @ row_sums >= 0 else -u


class GhoshSVD(BaseAggregator):
    """Ghosh–Kale–McAfee SVD estimator (binary one-coin model; K>2 via thresholds).

    Sets ``proba_`` (one-hot), ``labels_``, ``prior_`` (predicted class shares),
    ``log_likelihood_ = []``, ``n_iter_ = 0``, ``converged_ = True``.
    """

    def __init__(self) -> None:
        pass

    def fit(self, data: LabelSet, **_: Any) -> GhoshSVD:
        """Estimate one sign per task and threshold, then combine into classes."""
        fitted_hard(self, data, reduce_and_combine(data, ghosh_signs))
        self.n_iter_ = 0
        self.converged_ = True
        warn_if_not_identifiable(data)
        return self
