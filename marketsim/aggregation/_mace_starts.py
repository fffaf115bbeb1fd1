"""MACE's random starts: how each is drawn (:func:`random_start`), and how, with two classes,
they run together, the starts one more array axis (:func:`run_batched`).

Each start is drawn from the seed and what each worker did (see :func:`random_start`), not
from the worker's index, so renaming workers, tasks or classes only renames the answer.

Each EM iteration of R starts costs two sparse products with the label incidence: the E-step's
``incidence @ log_odds`` and the M-step's ``incidence.T @ q(1)``. Run one start after the other
and the 1M-nonzero matrix is streamed 2R times per iteration; here each product takes the R
starts as R columns of one dense operand (scipy's multi-vector kernels ``csr_matvecs`` and
``csc_matvecs``), so the matrix is streamed twice, and every per-task and per-worker pass is
one numpy call over an ``(R, ...)`` array instead of R calls.

Bit for bit the numbers of separate runs (:func:`marketsim.aggregation.base.run_em` per start,
``tests/aggregation/test_mace.py`` checks it): the multi-vector kernels add each entry's terms
in the same order from zero as the single-vector ones; every other operation is elementwise,
or a sum over one start's own contiguous row, taken per start as before. A start stops when its
own objective changes by at most ``tol`` per label, exactly where its separate run stopped; the
others go on without it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
from scipy.sparse import _sparsetools  # the compiled mat-vecs scipy itself calls

from marketsim.aggregation._numeric import hash_uniform, safe_log
from marketsim.aggregation._threads import blocks, row_blocks, run_parallel, threads_for
from marketsim.aggregation.base import EMTrace
from marketsim.data.labels import LabelSet

Params = dict[str, np.ndarray]
#: What one start's run returns: its posteriors, parameters and trace (as ``run_em``).
Run = tuple[np.ndarray, Params, EMTrace]
#: Tasks per chunk of the E-step's per-task passes (R columns each): the chunk's arrays stay
#: in the cache between the passes.
CHUNK = 2048
#: Most starts run together in one group (``MACE`` splits more into several groups): the
#: sparse products gain little beyond ten columns, and each start of a group holds about six
#: task-sized arrays.
GROUP = 10
#: The sign bit of a float64, as an int64: ``x | SIGN`` is ``-|x|``.
SIGN = np.int64(-(2**63))


def random_start(data: LabelSet, seed: int, noise: float) -> Params:
    """A random start: ``(spam, know)`` and ``xi_j`` proportional to numbers drawn uniformly
    from ``[1, 1 + noise]``, keyed by what each worker did (see the module docstring)."""
    counts = data.worker_label_counts
    degree = data.worker_degree[:, None]
    shape = (counts ** 2).sum(axis=1, keepdims=True)  # invariant to renaming classes
    pair = 1.0 + noise * hash_uniform(seed, degree, shape, np.arange(2)[None, :])
    xi = 1.0 + noise * hash_uniform(seed ^ 0x5DEECE66D, degree, shape, counts,
                                counts.sum(axis=0)[None, :])
    pair /= pair.sum(axis=1, keepdims=True)
    return {"spam": pair[:, 0], "know": pair[:, 1],
            "strategy": xi / xi.sum(axis=1, keepdims=True)}


def supported(data: LabelSet) -> bool:
    """Whether :func:`run_batched` applies: two classes, labels, a float64 CSR incidence."""
    if data.n_classes != 2 or data.n_tasks == 0 or data.n_labels == 0:
        return False
    mat = data.incidence
    return bool(getattr(mat, "format", None) == "csr" and mat.data.dtype == np.float64)


def _stack(starts: list[Params]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The starts' ``spam`` and ``know`` as ``(R, W)``, ``strategy`` as ``(R, W, 2)``."""
    return (np.stack([p["spam"] for p in starts]), np.stack([p["know"] for p in starts]),
            np.stack([p["strategy"] for p in starts]))


class Posteriors:
    """The R starts' E-step results, task-major ``(n_tasks, R)`` (a start a column): the
    log-odds ``s`` of class 1, ``e = exp(-|s|)``, ``total = 1 + e`` and ``q1``, the posterior
    of class 1, which the M-step reads. Class 0's column is made only for a start that ends
    (:meth:`proba`), from the same numbers and by the same operations as the single-start
    kernel (:func:`marketsim.aggregation._numeric.log_odds_posterior`)."""

    def __init__(self, n: int, r: int) -> None:
        self.s, self.e, self.total = np.zeros((n, r)), np.empty((n, r)), np.empty((n, r))
        self.q1 = np.empty((n, r))

    def take(self, keep: list[int]) -> None:
        """Keep only the starts (columns) ``keep``."""
        self.s, self.e, self.total, self.q1 = (x[:, keep] for x in
                                               (self.s, self.e, self.total, self.q1))

    def proba(self, i: int) -> np.ndarray:
        """Start ``i``'s posteriors, ``(n_tasks, 2)`` (a transposed class-major array, as the
        single-start kernel returns them)."""
        out = np.empty((2, self.s.shape[0]))
        s, e = self.s[:, i], self.e[:, i]
        larger, smaller = out[0], out[1]
        np.divide(1.0, self.total[:, i], out=larger)
        np.multiply(e, larger, out=smaller)
        sign = np.right_shift(np.ascontiguousarray(s).view(np.int64), 63)
        swap = np.bitwise_xor(larger.view(np.int64), smaller.view(np.int64))
        np.bitwise_and(swap, np.bitwise_not(sign, out=sign), out=swap)
        np.bitwise_xor(larger.view(np.int64), swap, out=larger.view(np.int64))
        np.bitwise_xor(smaller.view(np.int64), swap, out=smaller.view(np.int64))
        return out.T


def e_step(data: LabelSet, spam: np.ndarray, know: np.ndarray,
           strategy: np.ndarray) -> tuple[Posteriors, np.ndarray]:
    """:func:`marketsim.aggregation.mace.e_step` for R starts at once: their posteriors and
    their R data log-likelihoods."""
    mat = data.incidence
    n, m = mat.shape
    r = spam.shape[0]
    spam_xi = spam[:, :, None] * strategy
    other = safe_log(spam_xi)  # the answer is not the true class
    same = safe_log(spam_xi + know[:, :, None])  # it is
    odds = np.empty_like(spam_xi)  # per (worker, label) log P(l | 1) - log P(l | 0)
    np.subtract(other[:, :, 0], same[:, :, 0], out=odds[:, :, 0])
    np.subtract(same[:, :, 1], other[:, :, 1], out=odds[:, :, 1])
    columns = np.ascontiguousarray(odds.reshape(r, m).T).ravel()  # (2W, R): a start a column
    zero = np.empty_like(odds)  # log P(l | 0)
    zero[:, :, 0], zero[:, :, 1] = same[:, :, 0], other[:, :, 1]

    post = Posteriors(n, r)  # ``s`` zeroed: the kernel adds each row's sums to what is there
    positive = np.empty((n, r))
    threads = threads_for(data.n_labels)

    def rows(a: int, b: int) -> None:
        # the operations of _numeric.log_odds_posterior on R columns at once, in chunks of
        # tasks small enough for the cache
        _sparsetools.csr_matvecs(b - a, m, r, mat.indptr[a:b + 1], mat.indices, mat.data,
                                 columns, post.s[a:b].ravel())
        for c0 in range(a, b, CHUNK):
            c1 = min(c0 + CHUNK, b)
            s = post.s[c0:c1]  # (the single-start kernel's ``s += 0.0`` turns -0.0 into
            # 0.0; either gives the same shares, 1/2 each, and the same sums)
            np.maximum(s, 0.0, out=positive[c0:c1])
            e = post.e[c0:c1]
            np.bitwise_or(s.view(np.int64), SIGN, out=e.view(np.int64))  # -|s|, in one pass
            np.exp(e, out=e)
            total = np.add(e, 1.0, out=post.total[c0:c1])
            larger = np.divide(1.0, total)
            smaller = np.multiply(e, larger, out=post.q1[c0:c1])
            sign = np.right_shift(s.view(np.int64), 63)  # all ones where s < 0
            swap = np.bitwise_xor(larger.view(np.int64), smaller.view(np.int64))
            np.bitwise_and(swap, np.bitwise_not(sign, out=sign), out=swap)
            np.bitwise_xor(smaller.view(np.int64), swap, out=smaller.view(np.int64))

    run_parallel([partial(rows, a, b) for a, b in row_blocks(n, threads)], threads)
    whole = n - n % 1000
    base = n * -np.log(2) + np.array([float(data.worker_label_counts.ravel() @ zero[i].ravel())
                                      for i in range(r)])
    loglik = np.empty(r)
    for i in range(r):  # per start, over its own column: the single-start sums, term by term
        # in the same order (a 1-D reduction adds or multiplies along the array whatever its
        # stride; no copy of the columns)
        total = post.total[:, i]
        logs = np.log(total[:whole].reshape(-1, 1000).prod(axis=1)).sum()
        logs += np.log(total[whole:].prod())
        loglik[i] = float(positive[:, i].sum() + logs)
    return post, base + loglik


def own_class_mass(data: LabelSet, q1: np.ndarray) -> np.ndarray:
    """:func:`marketsim.aggregation.mace.own_class_mass` for R starts, ``(R, W, 2)`` from the
    task-major ``(n_tasks, R)`` posteriors of class 1: one multi-vector product per group of
    starts (the groups on separate threads; each entry's sum is the single-start kernel's)."""
    mat = data.incidence
    n, m = mat.shape
    r = q1.shape[1]
    one = np.empty((r, m))
    threads = threads_for(data.n_labels)
    groups = blocks(r, min(threads, r))

    def group(a: int, b: int) -> None:
        task_major = q1 if len(groups) == 1 else np.ascontiguousarray(q1[:, a:b])
        worker_major = np.zeros((m, b - a))
        _sparsetools.csc_matvecs(m, n, b - a, mat.indptr, mat.indices, mat.data,
                                 task_major.ravel(), worker_major.ravel())
        one[a:b] = worker_major.T

    run_parallel([partial(group, a, b) for a, b in groups], threads)
    counts = data.worker_label_counts
    mass = np.empty((r, data.n_workers, 2))
    np.subtract(counts[:, 0], one[:, 0::2], out=mass[:, :, 0])
    mass[:, :, 1] = one[:, 1::2]
    return mass


def expected_counts(data: LabelSet, q1: np.ndarray, spam: np.ndarray, know: np.ndarray,
                    strategy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`marketsim.aggregation.mace.expected_counts` for R starts: ``(R, W, 4)`` counts
    and the ``(R, W, 2)`` spam labels per class."""
    k = know[:, :, None]
    w = k / np.maximum(spam[:, :, None] * strategy + k, 1e-300)
    knowing = own_class_mass(data, q1) * w
    out = np.empty((spam.shape[0], data.n_workers, 4))
    spam_counts = np.subtract(data.worker_label_counts, knowing, out=out[:, :, 2:])
    np.maximum(spam_counts, 0.0, out=spam_counts)
    spam_counts.sum(axis=2, out=out[:, :, 0])
    knowing.sum(axis=2, out=out[:, :, 1])
    return out, spam_counts


def run_batched(
    data: LabelSet, starts: list[Params],
    update: Callable[[np.ndarray, np.ndarray], Params],
    log_param_prior: Callable[[Params], float], *, max_iter: int, tol: float,
) -> list[Run]:
    """``run_em`` for every start of ``starts`` at once (see the module docstring):
    ``update(counts, spam_counts)`` is the M-step's row-wise map from one row of expected
    counts per worker (``(N, 4)`` and ``(N, 2)``) to the parameters, run on the R starts'
    rows stacked; ``log_param_prior`` adds a start's parameter prior to its objective.
    Returns one ``(posteriors, parameters, trace)`` per start, in order."""
    spam, know, strategy = _stack(starts)
    proba, _ = e_step(data, spam, know, strategy)
    r = len(starts)
    active = list(range(r))  # the starts still running, by their rows
    history: list[list[float]] = [[] for _ in range(r)]
    runs: list[Run | None] = [None] * r
    scale = max(data.n_labels, 1)

    def finish(i: int, row: int, n_iter: int, converged: bool) -> None:
        params = {"spam": spam[row], "know": know[row], "strategy": strategy[row]}
        runs[i] = (proba.proba(row), params, EMTrace(history[i], n_iter, converged))

    for n_iter in range(1, int(max_iter) + 1):
        counts, spam_counts = expected_counts(data, proba.q1, spam, know, strategy)
        new = update(counts.reshape(-1, 4), spam_counts.reshape(-1, 2))
        shape = spam.shape
        spam, know = new["spam"].reshape(shape), new["know"].reshape(shape)
        strategy = new["strategy"].reshape(*shape, 2)
        proba, loglik = e_step(data, spam, know, strategy)
        keep = []
        for row, i in enumerate(active):
            params = {"spam": spam[row], "know": know[row], "strategy": strategy[row]}
            h = history[i]
            h.append(float(loglik[row]) + log_param_prior(params))
            if len(h) > 1 and abs(h[-1] - h[-2]) <= tol * scale:
                finish(i, row, n_iter, True)
            elif n_iter == int(max_iter):
                finish(i, row, n_iter, False)
            else:
                keep.append(row)
        if len(keep) < len(active):
            if not keep:
                break
            active = [active[row] for row in keep]
            spam, know, strategy = spam[keep], know[keep], strategy[keep]
            proba.take(keep)
    return [run for run in runs if run is not None]
