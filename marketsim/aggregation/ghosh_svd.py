"""Ghosh-SVD (Ghosh, Kale & McAfee, "Who moderates the moderators?", EC 2011), as run in
Zhang, Chen, Zhou & Jordan (2014), Table 3: the sign of the top left singular vector of the ±1
task–worker matrix, oriented so that it agrees with the row sums. K>2 by threshold reduction.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from marketsim.aggregation._binary import ThresholdReduction, tie_sign, top_singular


def ghosh_signs(mat: sp.csr_matrix) -> np.ndarray:
    """``u = sign(top left singular vector of O)``, flipped so that ``u^T O 1 > 0``; all 0 (a
    tie, for the estimators' one tie rule) where ``u^T O 1 = 0`` leaves the sign open."""
    u, _, _ = top_singular(mat)
    u = tie_sign(u)
    row_sums = np.asarray(mat.sum(axis=1)).ravel()
    return oriented(u, row_sums)


def oriented(u: np.ndarray, row_sums: np.ndarray) -> np.ndarray:
    """``u`` or ``-u``, whichever has ``u^T O 1 > 0``; zeros where it is 0 (within rounding)."""
    score = float(u @ row_sums)
    if abs(score) <= 1e-12 * float(np.abs(u) @ np.abs(row_sums)):
        return np.zeros_like(u)
    return u if score > 0 else -u


class GhoshSVD(ThresholdReduction):
    """Ghosh–Kale–McAfee SVD estimator (binary one-coin model; K>2 via thresholds).

    Parameters and fitted attributes: see
    :class:`~marketsim.aggregation._binary.ThresholdReduction`.
    """

    method = "ghosh-svd"
    description = "Ghosh-Kale-McAfee SVD (K>2 by threshold reduction)"

    def _sign_rule(self) -> Callable[[sp.csr_matrix], np.ndarray]:
        return ghosh_signs
