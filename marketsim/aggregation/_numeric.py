"""Small numeric helpers shared by every estimator: floored logs, log-space normalisation,
deterministic argmax, starting posteriors and seeding. No estimator logic lives here."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from marketsim.data.labels import LabelSet

#: Floor applied to probabilities before taking logs, so that no kernel ever produces -inf.
PROB_FLOOR = 1e-12


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
    with np.errstate(divide="ignore"):
        return np.where(prior > 0, np.log(np.maximum(prior, PROB_FLOOR)), -np.inf)


def normalise_log(
    log_joint: np.ndarray, out: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """Row-normalise an (n, K) log joint in log space; return posteriors and the log-likelihood.

    ``out`` (may be ``log_joint`` itself) receives the posteriors, saving two allocations per EM
    iteration.
    """
    if log_joint.shape[0] == 0:
        return np.zeros_like(log_joint), 0.0
    if log_joint.shape[1] == 2:
        return _normalise_log_two(log_joint, np.empty_like(log_joint) if out is None else out)
    # Hand-rolled log-sum-exp. Reductions along a short last axis (K = 2..5) are slow in
    # numpy, so the row max and the row sum fold over the K columns; this runs once per EM
    # iteration, thousands of times per simulated market.
    shift = functools.reduce(np.maximum, log_joint.T)
    proba = np.subtract(log_joint, shift[:, None], out=out)
    np.exp(proba, out=proba)
    total = proba[:, 0].copy()
    for c in range(1, proba.shape[1]):
        total += proba[:, c]
    proba /= total[:, None]
    return proba, float(shift.sum() + np.log(total).sum())


def column_products(mat: Any, x: np.ndarray) -> np.ndarray:
    """``mat @ x`` for a sparse ``mat`` and a dense ``(n, K)`` ``x``, one sparse mat-vec per
    column, returned as an ``(rows, K)`` view of a class-major ``(K, rows)`` array.

    Bitwise the same numbers as ``mat @ x`` (each column is summed in the same order), but a
    single-vector product streams the matrix once per class without scipy's multi-vector inner
    loop, about twice as fast for K = 2; and the columns of the result are contiguous, which is
    what the next product and the row normalisation want.
    """
    k = x.shape[1]
    out = np.empty((k, mat.shape[0]))
    for c in range(k):
        out[c] = mat @ np.ascontiguousarray(x[:, c])
    return out.T


def column_sums(x: np.ndarray) -> np.ndarray:
    """Column sums of an ``(n, K)`` array, added row after row whatever its memory layout
    (the order ``x.sum(axis=0)`` uses for a C-ordered array, so the same bits)."""
    if x.shape[0] == 0:
        return np.zeros(x.shape[1])
    return np.array([np.add.accumulate(x[:, c])[-1] for c in range(x.shape[1])])


def _normalise_log_two(log_joint: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, float]:
    """:func:`normalise_log` for K = 2, bit for bit: the larger entry of a row minus the row
    maximum is 0 and its exponential exactly 1, so only the smaller one needs ``exp`` (half
    the exponentials, the costliest step of a K = 2 iteration)."""
    first, second = log_joint[:, 0], log_joint[:, 1]
    first_wins = first >= second
    shift = np.maximum(first, second)
    small = np.minimum(first, second)
    small -= shift
    shift_sum = shift.sum()
    np.exp(small, out=small)
    total = np.add(small, 1.0, out=shift)  # the buffers are reused: fewer fresh pages
    np.divide(small, total, out=small)
    larger = np.divide(1.0, total, out=out[:, 1])  # the input columns have been read
    np.log(total, out=total)
    loglik = float(shift_sum + total.sum())
    # Each row takes ``larger`` in its winning column and ``small`` in the other, picked
    # through the bits with no fresh array (a masked copyto or np.where takes several times
    # longer on a data-dependent mask): with x = larger ^ small and m all ones where the
    # first column wins, column 0 is larger ^ (x & ~m) and column 1 is larger ^ (x & m).
    x, chosen = small.view(np.int64), total.view(np.int64)
    np.bitwise_xor(x, larger.view(np.int64), out=x)
    np.negative(first_wins.view(np.int8), dtype=np.int64, out=chosen)  # m: -1 = all ones
    np.bitwise_and(x, chosen, out=chosen)  # x & m
    np.bitwise_xor(x, chosen, out=x)  # x & ~m
    np.bitwise_xor(larger.view(np.int64), x, out=out[:, 0].view(np.int64))
    np.bitwise_xor(larger.view(np.int64), chosen, out=larger.view(np.int64))
    return out, loglik


def argmax_labels(proba: np.ndarray) -> np.ndarray:
    """Most probable class per task (lowest index on exact ties, deterministic)."""
    if proba.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return np.argmax(proba, axis=1).astype(np.int64)


def majority_posterior(data: LabelSet, prior: np.ndarray | None = None) -> np.ndarray:
    """Soft majority vote: per-task vote shares; unlabelled tasks get the prior (or uniform)."""
    counts = data.vote_counts()
    totals = data.task_degree.astype(np.float64)[:, None]  # = counts.sum(axis=1), exactly
    fallback = (
        np.full(data.n_classes, 1.0 / data.n_classes) if prior is None else np.asarray(prior)
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        proba = np.where(totals > 0, counts / np.maximum(totals, 1.0), fallback[None, :])
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
