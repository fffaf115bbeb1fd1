"""Small numeric helpers shared by every estimator: floored logs, log-space normalisation,
deterministic argmax, starting posteriors and seeding. No estimator logic lives here."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from marketsim.aggregation._ones import csr_rows, matvec, transposed_matvecs, transposed_rows
from marketsim.aggregation._threads import row_blocks, run_parallel
from marketsim.data.labels import LabelSet

#: Floor applied to probabilities before taking logs, so that no kernel ever produces -inf.
PROB_FLOOR = 1e-12

#: Rows a kernel's per-row temporaries cover at a time (512 KiB of float64 each): a big fit's
#: E-step holds a few of these, not a few arrays of every task (issue #30).
CHUNK_ROWS = 1 << 16


def as_generator(random_state: Any) -> np.random.Generator:
    """Turn ``None``, an int seed, a SeedSequence or a Generator into a Generator (never global)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def safe_log(x: np.ndarray) -> np.ndarray:
    """Logarithm with a floor at :data:`PROB_FLOOR`, so results stay finite."""
    return np.log(np.maximum(x, PROB_FLOOR))


def log_prior(prior: np.ndarray) -> np.ndarray:
    """Log of a class prior: floored like :func:`safe_log`, but exactly 0 stays ``-inf`` (a
    class with prior 0 gets posterior 0)."""
    prior = np.asarray(prior, dtype=np.float64)
    if (prior > 0).all():  # the usual case, without the masked form's overhead (every E-step)
        return np.log(np.maximum(prior, PROB_FLOOR))
    with np.errstate(divide="ignore"):
        return np.where(prior > 0, np.log(np.maximum(prior, PROB_FLOOR)), -np.inf)


def normalise_log(
    log_joint: np.ndarray, out: np.ndarray | None = None, n_threads: int = 1,
    fill: Callable[[int, int], None] | None = None,
) -> tuple[np.ndarray, float]:
    """Row-normalise an (n, K) log joint in log space; return posteriors and the log-likelihood.

    ``out`` (may be ``log_joint`` itself) receives the posteriors, saving two allocations per EM
    iteration. ``n_threads`` > 1 splits the rows into that many blocks run at once; each row's
    arithmetic is the same and the log-likelihood is one sum over all rows after the blocks,
    so the result is bit for bit the single-threaded one. ``fill(a, b)``, if given, first
    writes rows ``a:b`` of ``log_joint`` in the same block (:func:`log_posterior`).
    """
    if log_joint.shape[0] == 0:
        return np.zeros_like(log_joint), 0.0
    proba = np.empty_like(log_joint) if out is None else out
    if log_joint.shape[1] == 2:
        return _normalise_log_two(log_joint, proba, n_threads, fill)
    # Hand-rolled log-sum-exp. Reductions along a short last axis (K = 2..5) are slow in
    # numpy, so the row max and the row sum fold over the K columns; this runs once per EM
    # iteration, thousands of times per simulated market.
    n, k = log_joint.shape
    shift, total = np.empty(n), np.empty(n)

    def rows(a: int, b: int) -> None:
        if fill is not None:
            fill(a, b)
        np.copyto(shift[a:b], log_joint[a:b, 0])
        for c in range(1, k):
            np.maximum(shift[a:b], log_joint[a:b, c], out=shift[a:b])
        block = np.subtract(log_joint[a:b], shift[a:b, None], out=proba[a:b])
        np.exp(block, out=block)
        np.copyto(total[a:b], block[:, 0])
        for c in range(1, k):
            total[a:b] += block[:, c]
        block /= total[a:b, None]
        np.log(total[a:b], out=total[a:b])

    run_parallel([functools.partial(rows, a, b) for a, b in row_blocks(n, n_threads)],
                 n_threads)
    return proba, float(shift.sum() + total.sum())


def column_products(mat: Any, x: np.ndarray, n_threads: int = 1) -> np.ndarray:
    """``mat @ x`` for a sparse ``mat`` and a dense ``(n, K)`` ``x``, one sparse mat-vec per
    column, returned as an ``(rows, K)`` view of a class-major ``(K, rows)`` array.

    Bitwise the same numbers as ``mat @ x`` (each column is summed in the same order), but a
    single-vector product streams the matrix once per class without scipy's multi-vector inner
    loop, about twice as fast for K = 2; and the columns of the result are contiguous, which is
    what the next product and the row normalisation want. ``n_threads`` > 1 (CSR ``mat``)
    splits the rows into blocks, each summed by scipy's own kernel on its row pointers: every
    row's sum is untouched.
    """
    k = x.shape[1]
    if n_threads <= 1 or not _plain_csr(mat, x):
        out = np.empty((k, mat.shape[0]))
        for c in range(k):
            out[c] = matvec(mat, np.ascontiguousarray(x[:, c]))
        return out.T
    out, fill = _row_products(mat, x)
    run_parallel([functools.partial(fill, a, b) for a, b in row_blocks(mat.shape[0], n_threads)],
                 n_threads)
    return out.T


def _row_products(
    mat: Any, x: np.ndarray, add: np.ndarray | None = None
) -> tuple[np.ndarray, Callable[[int, int], None]]:
    """A class-major ``(K, rows)`` array and the function that fills its rows ``a:b`` with
    ``mat @ x`` (plus ``add[c]`` in column ``c``), by scipy's own kernel on that slice of the
    row pointers: every row's sum is the one ``mat @ x`` gives."""
    k = x.shape[1]
    out = np.zeros((k, mat.shape[0]))  # scipy's kernel adds each row's sum to what is there
    columns = [np.ascontiguousarray(x[:, c]) for c in range(k)]

    def fill(a: int, b: int) -> None:
        for c in range(k):
            csr_rows(mat, a, b, columns[c], out[c, a:b])
            if add is not None:
                out[c, a:b] += add[c]

    return out, fill


def log_posterior(
    mat: Any, emission: np.ndarray, log_class_prior: np.ndarray, n_threads: int = 1
) -> tuple[np.ndarray, float]:
    """The E-step: posteriors and log-likelihood of ``mat @ emission + log_class_prior``
    (:func:`column_products`, then :func:`normalise_log`). On several threads each row block
    is multiplied, shifted and normalised by one hand-off (each costs 0.15-0.35 ms on this
    machine); the same bits either way."""
    if n_threads <= 1 or not _plain_csr(mat, emission):
        log_joint = column_products(mat, emission)
        log_joint += log_class_prior[None, :]
        return normalise_log(log_joint, out=log_joint)
    out, fill = _row_products(mat, emission, log_class_prior)
    return normalise_log(out.T, out=out.T, n_threads=n_threads, fill=fill)


def log_odds_posterior(
    mat: Any, log_odds: np.ndarray, offset: float, n_threads: int = 1
) -> tuple[np.ndarray, float]:
    """The two-class E-step in log-odds form: posteriors ``[1 - sigma(s), sigma(s)]`` of
    ``s = mat @ log_odds + offset`` (the log-odds of class 1 against class 0), and
    ``sum_i log(1 + exp(s_i))``, the log-likelihood of the joint ``[L0, L0 + s]`` less
    ``sum(L0)`` (which the caller knows without a pass over the rows).

    One sparse mat-vec instead of one per class, and one ``exp`` per row, of ``-|s|`` (stable
    for any ``s``): the larger share is ``1 / (1 + e)``, the smaller ``e / (1 + e)``. The
    ``log(1 + e)`` terms are summed as logs of products of 1,000 rows (each factor is in
    [1, 2], so a block's product stays below 2**1000): 1,000 times fewer logs, the costliest
    call here, for a relative error of about 1e-13 per block. The rows are split into blocks
    on ``n_threads`` threads, each summed by scipy's own kernel; the sums are taken over the
    whole arrays afterwards, so the bits do not depend on ``n_threads``. ``mat`` is a
    float64 CSR matrix.
    """
    n = mat.shape[0]
    odds = np.ascontiguousarray(log_odds, dtype=np.float64)
    out = np.empty((2, n))  # class-major: the M-step reads column 1 contiguously
    out[1] = 0.0  # the mat-vec adds into it; row 0 is written whole
    total, positive = np.empty(n), np.empty(n)

    def rows(a: int, b: int) -> None:
        # in chunks of at most CHUNK_ROWS rows, so the per-row temporaries of a big fit stay
        # small (each row's arithmetic is the same whatever the chunks)
        for lo in range(a, b, CHUNK_ROWS):
            chunk(lo, min(lo + CHUNK_ROWS, b))

    def chunk(a: int, b: int) -> None:
        s = out[1, a:b]
        csr_rows(mat, a, b, odds, s)
        s += offset
        np.maximum(s, 0.0, out=positive[a:b])
        e = np.abs(s)
        np.negative(e, out=e)
        np.exp(e, out=e)
        np.add(e, 1.0, out=total[a:b])
        # class 1 wins where s >= 0 (a tie gives both 1/2): swap the two shares through the
        # bits where s < 0, without a data-dependent masked copy (several times slower)
        larger, smaller = out[0, a:b], out[1, a:b]
        sign = np.right_shift(s.view(np.int64), 63)  # all ones where s < 0, read before s goes
        np.divide(1.0, total[a:b], out=larger)
        np.multiply(e, larger, out=smaller)
        swap = np.bitwise_xor(larger.view(np.int64), smaller.view(np.int64))
        np.bitwise_and(swap, np.bitwise_not(sign, out=sign), out=swap)
        np.bitwise_xor(larger.view(np.int64), swap, out=larger.view(np.int64))
        np.bitwise_xor(smaller.view(np.int64), swap, out=smaller.view(np.int64))

    if n == 0:
        return out.T, 0.0
    run_parallel([functools.partial(rows, a, b) for a, b in row_blocks(n, n_threads)],
                 n_threads)
    whole = n - n % 1000
    logs = np.log(total[:whole].reshape(-1, 1000).prod(axis=1)).sum()
    logs += np.log(total[whole:].prod())
    return out.T, float(positive.sum() + logs)


def transposed_products(mat: Any, x: np.ndarray, n_threads: int = 1) -> np.ndarray:
    """``mat.T @ x`` as a C-ordered ``(mat columns, K)`` array (the M-step's counts).

    One multi-vector product on one thread (faster there than one product per class, which
    scatters K times). ``n_threads`` > 1 (CSR ``mat``) runs one single-vector product per
    class, the classes shared among the threads: every entry still adds its terms in task
    order from zero, so the numbers are bit for bit those of the multi-vector product.
    """
    k = x.shape[1]
    if n_threads <= 1 or not _plain_csr(mat, x):
        return transposed_matvecs(mat, np.ascontiguousarray(x))
    out = np.zeros((k, mat.shape[1]))
    columns = [np.ascontiguousarray(x[:, c]) for c in range(k)]

    def one_class(c: int) -> None:
        transposed_rows(mat, columns[c], out[c])

    run_parallel([functools.partial(one_class, c) for c in range(k)], n_threads)
    return np.ascontiguousarray(out.T)


def transposed_product(mat: Any, x: np.ndarray) -> np.ndarray:
    """``mat.T @ x`` for one vector, by scipy's own kernel (so the same bits) called on the
    CSR arrays directly: building the transposed matrix object costs more than the product on
    a market refresh's few thousand labels, and this runs every M-step."""
    x = np.ascontiguousarray(x)
    if not _plain_csr(mat, x):
        return np.asarray(mat.T @ x)
    out = np.zeros(mat.shape[1])
    transposed_rows(mat, x, out)
    return out


def _plain_csr(mat: Any, x: np.ndarray) -> bool:
    """Whether ``mat`` is a float64 CSR matrix and ``x`` float64: what the threaded kernels
    hand to scipy's compiled mat-vecs directly."""
    return bool(getattr(mat, "format", None) == "csr" and mat.data.dtype == np.float64
                and x.dtype == np.float64)


def column_sums(x: np.ndarray) -> np.ndarray:
    """Column sums of an ``(n, K)`` array, added row after row whatever its memory layout
    (the order ``x.sum(axis=0)`` uses for a C-ordered array, so the same bits). One thread:
    split by class it saved less than a hand-off costs."""
    if x.shape[0] == 0:
        return np.zeros(x.shape[1])
    return np.array([np.add.accumulate(x[:, c])[-1] for c in range(x.shape[1])])


def _normalise_log_two(
    log_joint: np.ndarray, out: np.ndarray, n_threads: int,
    fill: Callable[[int, int], None] | None,
) -> tuple[np.ndarray, float]:
    """:func:`normalise_log` for K = 2, bit for bit: the larger entry of a row minus the row
    maximum is 0 and its exponential exactly 1, so only the smaller one needs ``exp`` (half
    the exponentials, the costliest step of a K = 2 iteration). Three passes over row blocks:
    the sums of the row maxima and of the log totals are taken between them, before their
    buffers are reused."""
    n = log_joint.shape[0]
    first, second = log_joint[:, 0], log_joint[:, 1]
    first_wins = np.empty(n, dtype=bool)
    shift, small = np.empty(n), np.empty(n)
    parts = row_blocks(n, n_threads)

    def shifts(a: int, b: int) -> None:
        if fill is not None:
            fill(a, b)
        np.greater_equal(first[a:b], second[a:b], out=first_wins[a:b])
        np.maximum(first[a:b], second[a:b], out=shift[a:b])
        np.minimum(first[a:b], second[a:b], out=small[a:b])
        small[a:b] -= shift[a:b]

    def shares(a: int, b: int) -> None:
        sm = small[a:b]
        np.exp(sm, out=sm)
        total = np.add(sm, 1.0, out=shift[a:b])  # the buffers are reused: fewer fresh pages
        np.divide(sm, total, out=sm)
        np.divide(1.0, total, out=out[a:b, 1])  # the larger share; the input has been read
        np.log(total, out=total)

    def pick(a: int, b: int) -> None:
        # Each row takes the larger share (in column 1 now) in its winning column and
        # ``small`` in the other, picked through the bits with no fresh array (a masked
        # copyto or np.where takes several times longer on a data-dependent mask): with
        # x = larger ^ small and m all ones where the first column wins, column 0 is
        # larger ^ (x & ~m) and column 1 is larger ^ (x & m).
        larger = out[a:b, 1]
        x, chosen = small[a:b].view(np.int64), shift[a:b].view(np.int64)
        np.bitwise_xor(x, larger.view(np.int64), out=x)
        np.negative(first_wins[a:b].view(np.int8), dtype=np.int64, out=chosen)  # m
        np.bitwise_and(x, chosen, out=chosen)  # x & m
        np.bitwise_xor(x, chosen, out=x)  # x & ~m
        np.bitwise_xor(larger.view(np.int64), x, out=out[a:b, 0].view(np.int64))
        np.bitwise_xor(larger.view(np.int64), chosen, out=larger.view(np.int64))

    run_parallel([functools.partial(shifts, a, b) for a, b in parts], n_threads)
    shift_sum = shift.sum()
    run_parallel([functools.partial(shares, a, b) for a, b in parts], n_threads)
    loglik = float(shift_sum + shift.sum())  # before ``pick`` reuses ``shift`` as scratch
    run_parallel([functools.partial(pick, a, b) for a, b in parts], n_threads)
    return out, loglik


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 (wrapping): a well-mixed hash of each entry."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def hash_uniform(seed: int, *keys: np.ndarray) -> np.ndarray:
    """Uniform numbers in [0, 1), one per entry of the broadcast ``keys``, from their hash."""
    h = np.full(np.broadcast_shapes(*(np.shape(k) for k in keys)), seed, dtype=np.uint64)
    for key in keys:
        h = _mix(h ^ np.asarray(key).astype(np.uint64))
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53


def majority_posterior(data: LabelSet, prior: np.ndarray | None = None) -> np.ndarray:
    """Soft majority vote: per-task vote shares; unlabelled tasks get the prior (or uniform)."""
    proba = data.vote_counts()
    totals = np.maximum(data.task_degree.astype(np.float64), 1.0)  # = counts.sum(axis=1)
    # one column at a time: a (n, K) / (n, 1) broadcast runs numpy's inner loop once per row
    for column in proba.T:
        column /= totals
    empty = np.flatnonzero(data.task_degree == 0)
    if empty.size:
        proba[empty] = (
            np.full(data.n_classes, 1.0 / data.n_classes) if prior is None else np.asarray(prior)
        )
    return proba


def random_posterior(data: LabelSet, rng: np.random.Generator) -> np.ndarray:
    """Uniformly random posteriors (a flat Dirichlet per task), as Maginnis & Gupta's code
    started EM."""
    return rng.dirichlet(np.ones(data.n_classes), size=data.n_tasks)


def check_choice(name: str, value: Any, allowed: Sequence[Any]) -> None:
    """Raise the one-line ``ValueError`` of an option outside ``allowed``.

    >>> check_choice("init", "spectral", ("majority", "spectral"))
    >>> check_choice("init", "best", ("majority", "spectral"))
    Traceback (most recent call last):
    ValueError: init must be one of majority, spectral; got 'best'
    """
    if value not in allowed:
        shown = ", ".join(a if isinstance(a, str) else repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {shown}; got {value!r}")
