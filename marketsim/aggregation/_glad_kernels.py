"""GLAD's passes over the labels (see :mod:`marketsim.aggregation.glad` for the model): the
fit's label arrays and shared logits (:class:`Fit`), and one block-coordinate ascent step of
every worker's ability or every task's log difficulty at once (:func:`ascend`).

Each pass runs block by block of labels (in parallel on a big fit), in place on label-sized
buffers; per-task sums are one ``bincount``'s bit for bit (blocks are cut at task boundaries),
per-worker sums add the blocks' partial sums in block order.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from marketsim.aggregation._threads import MIN_LABELS, blocks, run_parallel, threads_for
from marketsim.data.labels import LabelSet

_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)

#: A step is taken when its coordinate's part of ``Q`` does not fall by more than rounding:
#: near a fixed point a step changes ``Q`` by ~1e-16 and rounding alone would decide.
ROUNDING = 1e-13
#: Blocks of labels the passes of a fit on ``MIN_LABELS`` labels or more run over (:class:`Fit`).
N_BLOCKS = 8


def softplus(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``log(1 + e^x)``, without overflow: ``max(x, 0) + log1p(e^-|x|)`` (into ``out``)."""
    e = np.abs(x, out=out)
    np.negative(e, out=e)
    np.exp(e, out=e)
    np.log1p(e, out=e)
    e += np.maximum(x, 0.0)
    return e


def gaussian_log_pdf(x: np.ndarray, mean: float) -> float:
    """``sum log N(x; mean, 1)``."""
    d = np.square(x - mean)  # summed by numpy, not BLAS (d @ d: 3-4 ms on 100,000 tasks)
    return float(-0.5 * np.sum(d) - _HALF_LOG_2PI * x.size)


class Fit:
    """One fit's labels as the steps read them (index arrays; ``flat = task * K + label``,
    each label's cell in the flattened posterior) and the logits ``x = alpha_j beta_i`` and
    ``softplus(x)`` of the last parameters they were computed for (``params``), which the
    E-step and the next M-step share instead of recomputing."""

    def __init__(self, data: LabelSet) -> None:
        self.tasks, self.workers = data.tasks, data.workers
        self.n_tasks, self.n_workers, self.k = data.n_tasks, data.n_workers, data.n_classes
        self.flat = data.tasks * data.n_classes + data.labels
        self.params: dict[str, np.ndarray] | None = None
        self.x = self.soft = np.zeros(0)
        self.betas: np.ndarray | None = None
        self.n_threads = threads_for(data.n_labels)
        # Blocks of labels the passes run over (in parallel), fixed by the labels alone: the
        # numbers do not depend on the threads. Labels in task order are cut at task
        # boundaries, so per-task sums are one bincount's bit for bit; per-worker sums add
        # the blocks' partial sums in block order (~1e-16 from one bincount's).
        n = data.n_labels
        self.blocks = blocks(n, N_BLOCKS if n >= MIN_LABELS else 1) or [(0, 0)]
        self.rows: list[tuple[int, int]] | None = None
        if n == 0 or not bool(np.all(self.tasks[1:] >= self.tasks[:-1])):
            return
        starts = np.unique(np.searchsorted(self.tasks, self.tasks[[a for a, _ in self.blocks]]))
        edges = [0] + [int(a) for a in starts[1:]] + [n]
        self.blocks = list(zip(edges[:-1], edges[1:], strict=True))
        firsts = [0] + [int(self.tasks[a]) for a in edges[1:-1]] + [self.n_tasks]
        self.rows = list(zip(firsts[:-1], firsts[1:], strict=True))
        self.local = self.tasks - np.repeat(firsts[:-1], np.diff(edges))
        self.local_flat = self.local * self.k + data.labels

    def sums(self, by_task: bool, n_terms: int,
             terms: Callable[[int, int], list[np.ndarray]]) -> list[np.ndarray]:
        """Per-task (``by_task``) or per-worker sums of the ``n_terms`` per-label arrays
        ``terms(a, b)`` returns for the labels ``[a, b)`` of each block (in parallel)."""
        size = self.n_tasks if by_task else self.n_workers
        rows = self.rows if by_task else None
        parts: list[list[np.ndarray]] = [[] for _ in self.blocks]
        out = [np.empty(size) for _ in range(n_terms)] if rows is not None else []

        def run(i: int) -> None:
            a, b = self.blocks[i]
            values = terms(a, b)
            if rows is not None:
                t0, t1 = rows[i]
                for o, v in zip(out, values, strict=True):
                    o[t0:t1] = np.bincount(self.local[a:b], v, minlength=t1 - t0)
            else:
                index = self.tasks if by_task else self.workers
                parts[i] = [np.bincount(index[a:b], v, minlength=size) for v in values]

        run_parallel([partial(run, i) for i in range(len(self.blocks))], self.n_threads)
        if rows is not None:
            return out
        # in block order: the same numbers on any number of threads
        return [sum((p[t] for p in parts[1:]), parts[0][t]) for t in range(n_terms)]

    def logits(self, alpha: np.ndarray, log_beta: np.ndarray) -> np.ndarray:
        return alpha[self.workers] * np.exp(log_beta)[self.tasks]

    def state(self, params: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """``x`` and ``softplus(x)`` at ``params`` (kept from the step that made them)."""
        if self.params is not params:
            self.x = self.logits(params["alpha"], params["log_beta"])
            self.soft, self.params, self.betas = softplus(self.x), params, None
        return self.x, self.soft

    def keep(self, params: dict[str, np.ndarray], x: np.ndarray, soft: np.ndarray,
             betas: np.ndarray | None) -> None:
        """Keep ``x``, ``softplus(x)`` and ``beta_i`` per label (if known) at ``params``."""
        self.params, self.x, self.soft, self.betas = params, x, soft, betas


def ascend(
    fit: Fit, right: np.ndarray, alpha: np.ndarray, log_beta: np.ndarray, x: np.ndarray,
    soft: np.ndarray, mean: float, workers: bool, gathered: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """One ascent step of every worker's ``alpha`` (``workers``) or every task's ``log
    beta``, from logits ``x`` and ``softplus(x)`` at the current parameters; returns the new
    block, the logits and softplus at the new parameters, and the gradient at the old ones.

    Per coordinate ``theta`` (its labels ``l``, ``dx_l/dtheta = s_l``: ``beta_i`` for an
    ability, ``x_l`` for a log difficulty): gradient ``sum_l (p_l - sigma_l) s_l - (theta -
    mean)``, step ``gradient / (sum_l sigma_l (1 - sigma_l) s_l^2 + 1)`` (Newton for ``alpha``,
    Fisher scoring for ``log beta``), halved while the coordinate's part of ``Q`` would fall
    (by more than :data:`ROUNDING`); a coordinate whose step shrinks to rounding keeps its
    value. Each pass runs block by block (:meth:`Fit.sums`), in place on label-sized
    buffers: a fresh 8 MB array per operation costs as much as the operation.

    ``gathered``, if given, is the other block per label (``beta_i`` or ``alpha_j`` of each
    label), as the previous step returned it (its fifth value; None when some coordinate's
    step had to be halved). Indices are valid, so ``np.take`` runs with ``mode="wrap"``: the
    same values, without the copy of ``out`` that ``mode="raise"`` makes."""
    theta = alpha if workers else log_beta
    n = x.size
    other = np.empty(n) if gathered is None else gathered  # the other block per label
    beta = np.exp(log_beta)
    sig, work, own = np.empty(n), np.empty(n), np.empty(n)

    def first(a: int, b: int) -> list[np.ndarray]:  # gradient, curvature, Q at theta
        if gathered is None:  # else: the previous step's gather is reused
            source, index = (beta, fit.tasks) if workers else (alpha, fit.workers)
            np.take(source, index[a:b], out=other[a:b], mode="wrap")
        xs, ss, ps = x[a:b], sig[a:b], right[a:b]
        slope = other[a:b] if workers else xs  # dx / d theta
        np.subtract(xs, soft[a:b], out=ss)
        np.exp(ss, out=ss)  # sigma(x) = e^{x - softplus(x)}
        g = np.subtract(ps, ss)
        g *= slope
        ws = np.subtract(1.0, ss, out=work[a:b])
        ss *= ws
        ss *= slope
        ss *= slope
        q = np.multiply(ps, xs, out=ws)
        q -= soft[a:b]
        return [g, ss, q]

    sum_g, sum_h, sum_q = fit.sums(not workers, 3, first)
    grad = sum_g - (theta - mean)
    step = grad / (sum_h + 1.0)
    old = sum_q - 0.5 * (theta - mean) ** 2
    new_theta = theta.copy()
    pending = np.abs(step) > 1e-13 * (1.0 + np.abs(theta))
    first_try = True
    tx = np.empty(n)
    while pending.any():
        trial = np.where(pending, theta + step, new_theta)
        scale = trial if workers else np.exp(trial)

        def again(a: int, b: int, scale: np.ndarray = scale) -> list[np.ndarray]:  # Q there
            xs = tx[a:b]
            np.take(scale, (fit.workers if workers else fit.tasks)[a:b], out=own[a:b],
                    mode="wrap")
            np.multiply(own[a:b], other[a:b], out=xs)
            ss = softplus(xs, out=sig[a:b])
            q = np.multiply(right[a:b], xs, out=work[a:b])
            q -= ss
            return [q]

        new = fit.sums(not workers, 1, again)[0] - 0.5 * (trial - mean) ** 2
        better = pending & (new >= old - ROUNDING * (1.0 + np.abs(old)))
        new_theta[better] = trial[better]
        pending &= ~better
        if first_try and not pending.any():
            # every step taken at once, the usual case: ``own`` holds the new block per label
            return new_theta, tx, sig, grad, own
        first_try = False
        step *= 0.5
        pending &= np.abs(step) > 1e-13 * (1.0 + np.abs(theta))
    x = (new_theta if workers else np.exp(new_theta))[fit.workers if workers else fit.tasks]
    x *= other
    return new_theta, x, softplus(x, out=sig), grad, None

