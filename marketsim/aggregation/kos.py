"""Karger–Oh–Shah crowdsourcing estimators, as compared in Zhang et al. (2014), Table 3.

- :class:`KOS` — the original iterative message-passing algorithm of Karger, Oh & Shah
  ("Iterative learning for reliable crowdsourcing systems", NIPS 2011; "Budget-optimal task
  allocation for reliable crowdsourcing systems", Operations Research 62(1), 2014), with the
  multi-class threshold reduction of Karger, Oh & Shah (2013).
- :class:`KOSSVD` — the spectral stand-in that Zhang, Chen, Zhou & Jordan's released code runs
  under the name "KOS": the top singular pair of the column-centred ±1 matrix.

Both reduce K classes to K-1 binary problems (:mod:`marketsim.aggregation._binary`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from marketsim.aggregation._binary import ThresholdReduction, tie_sign, top_singular
from marketsim.aggregation._numeric import as_generator
from marketsim.aggregation.options import param, random_state_param


def kos_svd_signs(mat: sp.csr_matrix) -> np.ndarray:
    """Task signs from the top singular pair (u, v) of the column-centred ±1 matrix.

    The sign is fixed so that v's positive part holds more than half of v's squared mass
    (Zhang et al.'s code); task sign = sign(u). Where nothing fixes it (a zero singular value,
    or exactly half the mass on each side, as for two workers who disagree on one task) every
    sign is 0: a tie, left to the estimators' one tie rule instead of the decomposition's
    arbitrary sign.
    """
    u, s, v = top_singular(mat, center_columns=True)
    norm = np.linalg.norm(v)
    if s <= 1e-12 * max(1.0, float(np.sqrt(mat.nnz))) or norm == 0:
        return np.zeros(mat.shape[0])
    positive = float(np.sum((v / norm)[v >= 0] ** 2))
    if abs(positive - 0.5) <= 1e-12:
        return np.zeros(mat.shape[0])
    return (1.0 if positive > 0.5 else -1.0) * tie_sign(u)


def kos_message_passing(
    mat: sp.csr_matrix, *, rng: np.random.Generator | None, max_iter: int
) -> np.ndarray:
    r"""Karger–Oh–Shah iterative inference on the ±1 task–worker matrix ``A``.

    Edge messages, initialised ``y_{j->i} ~ N(1, 1)`` drawn from ``rng`` (or all 1 when
    ``rng`` is None, which no renaming of tasks or workers can change), are updated
    ``max_iter`` times:
    ``x_{i->j} = sum_{j' in di \ j} A_ij' y_{j'->i}``, ``y_{j->i} = sum_{i' in dj \ i} A_i'j
    x_{i'->j}``; the decision is ``sign(sum_{j in di} A_ij y_{j->i})``. Messages are rescaled
    each round (signs are scale-free), which keeps them finite.
    """
    coo = mat.tocoo()
    t, w, a = coo.row, coo.col, coo.data
    n, m = mat.shape
    y = np.ones(a.shape[0]) if rng is None else rng.normal(1.0, 1.0, size=a.shape[0])
    for _ in range(int(max_iter)):
        x = np.bincount(t, weights=a * y, minlength=n)[t] - a * y
        x /= max(np.abs(x).max(initial=0.0), 1e-300)
        y = np.bincount(w, weights=a * x, minlength=m)[w] - a * x
        y /= max(np.abs(y).max(initial=0.0), 1e-300)
    return np.sign(np.bincount(t, weights=a * y, minlength=n))


class KOS(ThresholdReduction):
    """Karger–Oh–Shah iterative message passing (KOS 2011/2014), K>2 by threshold reduction.

    Parameters: :class:`KOS.Options` (``start = "ones"``: every ``y_{j->i} = 1``, the mean
    of the paper's N(1, 1) draw, so the first round is a leave-one-out majority vote and
    renaming tasks or workers cannot change the result; ``"gaussian"``: the paper's ``y ~ N(1,
    1)``, drawn from ``random_state`` per (task, worker) edge in index order).
    """

    method = "kos"
    description = "Karger-Oh-Shah iterative message passing (K>2 by threshold reduction)"

    class Options(ThresholdReduction.Options):
        """Parameters of KOS."""

        max_iter: int = param(100, "message-passing rounds (the algorithm has no stopping "
                              "rule: all are run)", ge=1, le=100_000)
        start: Literal["ones", "gaussian"] = param(
            "ones", "initial edge messages: all 1 (deterministic, the mean of the paper's "
            "draw) or the paper's N(1, 1), drawn from random_state")
        random_state: Any = random_state_param()

    max_iter: int
    start: str
    random_state: Any

    def _sign_rule(self) -> Callable[[sp.csr_matrix], np.ndarray]:
        rng = as_generator(self.random_state) if self.start == "gaussian" else None
        return lambda mat: kos_message_passing(mat, rng=rng, max_iter=self.max_iter)

    def _rounds(self) -> int:
        return int(self.max_iter)


class KOSSVD(ThresholdReduction):
    """"KOS" as run by Zhang et al.'s released code: SVD of the column-centred ±1 matrix.

    This is a spectral surrogate, not Karger–Oh–Shah's message passing (see :class:`KOS`).
    Parameters and fitted attributes: see
    :class:`~marketsim.aggregation._binary.ThresholdReduction`.
    """

    method = "kos-svd"
    description = "'KOS' as run in Zhang et al.'s code: SVD of the column-centred +-1 matrix"

    def _sign_rule(self) -> Callable[[sp.csr_matrix], np.ndarray]:
        return kos_svd_signs
