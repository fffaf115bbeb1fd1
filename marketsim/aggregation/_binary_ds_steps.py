"""Dawid–Skene's two-class M- and E-step fused for fits on one thread (issue #39).

A design curve fits Dawid–Skene hundreds of times on a few thousand labels (``calibrate``:
about 850 fits of 30-60 iterations each), where an iteration's arithmetic takes microseconds
and numpy's per-call overhead (some 60 calls through :func:`binary_confusion`,
:meth:`EMAggregator._binary_prior` and :func:`log_odds_posterior`) is most of its time.
:class:`BinarySteps` holds what does not change between iterations (the incidence arrays with
their compiled kernels bound, the float label counts) and does each step in about half the
calls, the prior in scalars and no thread dispatch: the same operations on the same numbers
in the same order, so every result is bit for bit the one of the general path
(``tests/aggregation/test_dawid_skene_small.py`` compares them). It is used where that path
would run on one thread (:func:`threads_for`); a big fit keeps the threaded kernels.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.sparse import _sparsetools

from marketsim.aggregation import _ones
from marketsim.aggregation._numeric import PROB_FLOOR
from marketsim.aggregation._threads import threads_for
from marketsim.data.labels import LabelSet

#: Rows whose ``log(1 + e^-|s|)`` terms are multiplied before one ``log`` (as in
#: :func:`marketsim.aggregation._numeric.log_odds_posterior`).
LOG_BLOCK = 1000


def fits_one_thread(data: LabelSet) -> bool:
    """Whether a two-class fit on ``data`` runs on one thread with a float64 CSR incidence
    matrix: where :class:`BinarySteps` replaces the general steps."""
    if data.n_classes != 2 or threads_for(data.n_labels) > 1:
        return False
    mat = data.incidence
    return bool(getattr(mat, "format", None) == "csr" and mat.data.dtype == np.float64)


class BinarySteps:
    """The M-step (smoothed confusion matrices, estimated prior) and the log-odds E-step of
    two-class Dawid–Skene on ``data``, with the arrays they reuse set up once.

    ``generic_e_step`` runs where the log-odds form does not apply (a class of prior 0);
    ``fixed_prior`` is the prior to keep, or ``None`` to estimate it in every M-step.
    """

    def __init__(self, data: LabelSet, smoothing: float, fixed_prior: np.ndarray | None,
                 generic_e_step: Callable[[dict[str, np.ndarray]], tuple[np.ndarray, float]],
                 ) -> None:
        self.n_tasks = data.n_tasks
        self.n_workers = data.n_workers
        self.smoothing = smoothing
        self.fixed_prior = fixed_prior
        self.generic_e_step = generic_e_step
        self.label_counts = data.worker_label_counts.ravel()  # [(j, l)], int64
        self.float_counts = self.label_counts.astype(np.float64)
        self.cells = self.label_counts.size
        self.products, self.transposed_products = _kernels(data.incidence)

    # --- M-step ----------------------------------------------------------------------------
    def m_step(self, proba: np.ndarray) -> dict[str, np.ndarray]:
        """:func:`binary_confusion` and :meth:`EMAggregator._binary_prior` of ``proba``."""
        one = np.zeros(self.cells)
        self.transposed_products(np.ascontiguousarray(proba[:, 1]), one)
        pairs = np.empty((self.cells, 2))  # [(j, l), c]
        np.subtract(self.float_counts, one, out=pairs[:, 0])
        pairs[:, 1] = one
        if self.smoothing:  # (+ 0.0 changes no count: none is -0.0)
            pairs += self.smoothing
        by_worker = pairs.reshape(self.n_workers, 2, 2)  # [j, l, c]
        totals = np.add(by_worker[:, 0], by_worker[:, 1])  # [j, c]: label 0's plus label 1's
        if self.n_workers and np.minimum.reduce(totals, axis=None) > 0:
            np.divide(by_worker, totals[:, None, :], out=by_worker)
        else:  # a (worker, class) without labels: uniform, as confusion_from_counts
            positive = totals > 0
            np.divide(by_worker, np.where(positive, totals, 1.0)[:, None, :], out=by_worker)
            np.copyto(by_worker, 0.5, where=~positive[:, None, :])
        return {"confusion": by_worker.transpose(0, 2, 1), "prior": self._prior(proba)}

    def _prior(self, proba: np.ndarray) -> np.ndarray:
        """:meth:`EMAggregator._estimate_prior` from the columns' pairwise sums, in scalars."""
        if self.fixed_prior is not None:
            return self.fixed_prior
        if self.n_tasks == 0:
            return np.full(2, 0.5)
        zero = float(np.add.reduce(proba[:, 0])) / self.n_tasks
        one = float(np.add.reduce(proba[:, 1])) / self.n_tasks
        zero = max(zero, PROB_FLOOR) if zero > 0 else 0.0
        one = max(one, PROB_FLOOR) if one > 0 else 0.0
        total = zero + one
        if not total > 0:  # no posterior mass at all: numpy's 0/0, as the general path
            with np.errstate(invalid="ignore"):
                return np.array([zero, one]) / total
        return np.array([zero / total, one / total])

    # --- E-step ----------------------------------------------------------------------------
    def e_step(self, params: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
        """:meth:`EMAggregator._binary_e_step`: posteriors ``[1 - sigma(s), sigma(s)]`` of the
        log-odds ``s`` and the log-likelihood."""
        prior = params["prior"]
        shares: list[float] = prior.tolist() if prior.ndim == 1 else []
        if len(shares) != 2 or not (shares[0] > 0 and shares[1] > 0):
            return self.generic_e_step(params)  # a class of prior 0 (or an odd warm start)
        zero_prior, one_prior = np.log(np.maximum(prior, PROB_FLOOR)).tolist()  # log_prior
        if not (math.isfinite(zero_prior) and math.isfinite(one_prior)):
            return self.generic_e_step(params)
        n = self.n_tasks
        # R[(j, l), c] = log P(l | c, j): the confusion's memory is [j, l, c]
        emission = np.maximum(params["confusion"].transpose(0, 2, 1), PROB_FLOOR)
        np.log(emission, out=emission)  # safe_log
        emission = emission.reshape(-1, 2)
        class_zero_logs = np.ascontiguousarray(emission[:, 0])
        odds = np.subtract(emission[:, 1], class_zero_logs)
        out = np.zeros((2, n))  # class-major, as the general path returns it
        softplus_sum = self._posteriors(odds, one_prior - zero_prior, out) if n else 0.0
        class_zero = n * zero_prior + float(self.label_counts @ class_zero_logs)
        return out.T, float(class_zero + softplus_sum)

    def _posteriors(self, odds: np.ndarray, offset: float, out: np.ndarray) -> float:
        """:func:`log_odds_posterior` on one thread: ``out`` (2, n), zeros, gets the
        posteriors of ``s = incidence @ odds + offset``; returns ``sum_i log(1 + e^{s_i})``."""
        n = self.n_tasks
        s = out[1]
        self.products(odds, s)
        s += offset
        positive = np.maximum(s, 0.0)
        e = np.abs(s)
        np.negative(e, out=e)
        np.exp(e, out=e)
        total = np.add(e, 1.0)
        larger = np.divide(1.0, total)
        negative = np.signbit(s)  # class 1 wins where s >= 0 (a tie gives both 1/2)
        np.multiply(e, larger, out=e)  # the smaller share
        np.copyto(out[0], e)
        np.copyto(out[0], larger, where=negative)
        np.copyto(s, larger)
        np.copyto(s, e, where=negative)
        whole = n - n % LOG_BLOCK
        logs = (np.add.reduce(np.log(np.multiply.reduce(
            total[:whole].reshape(-1, LOG_BLOCK), axis=1))) if whole else 0.0)
        logs += np.log(np.multiply.reduce(total[whole:]))
        return float(np.add.reduce(positive) + logs)


def _kernels(mat: Any) -> tuple[Callable[[np.ndarray, np.ndarray], None],
                                Callable[[np.ndarray, np.ndarray], None]]:
    """``out += mat @ x`` and ``out += mat.T @ x`` for the CSR ``mat``, bound once: the
    compiled kernels :func:`~._ones.csr_rows` and :func:`~._ones.transposed_rows` call
    (the same bits)."""
    n_rows, n_cols = mat.shape
    indptr, indices, values = mat.indptr, mat.indices, mat.data
    if _ones.is_shared_ones(mat):  # the compiled pattern kernels are there
        return (functools.partial(_ones.row_sums, indptr, indices),
                functools.partial(_ones.scatter_sums, indptr, indices))
    return (functools.partial(_sparsetools.csr_matvec, n_rows, n_cols, indptr, indices, values),
            functools.partial(_sparsetools.csc_matvec, n_cols, n_rows, indptr, indices, values))
