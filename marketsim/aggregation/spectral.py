"""Spectral initialisers of Zhang, Chen, Zhou & Jordan (2014), "Spectral Methods meet EM".

- :func:`spectral_confusion` — Algorithm 1 (Opt-D&S stage 1): per-worker confusion matrices from
  the second and third moments of three worker groups, by whitening and the robust tensor power
  method (Anandkumar et al. 2014)..
- :func:`one_coin_spectral_skill` — the one-coin variant (Section 6 / Algorithm 2): worker
  accuracies from pairwise agreement rates..

Both return ``None`` with a :class:`RuntimeWarning` when the moments do not determine the
parameters (too few workers, singular moment matrices, non-finite values); callers then start EM
from majority vote.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import scipy.sparse as sp

from marketsim.aggregation._numeric import check_choice
from marketsim.data.labels import LabelSet

#: Condition-number limit beyond which a moment matrix is treated as singular.
MAX_COND = 1e10
#: How far one more power step may still move a unit eigenvector for the equivariant rule to
#: accept it as converged.
CONVERGE_TOL = 1e-6

#: Most worker-pair cells (``n_workers**2``) the one-coin spectral start forms (dense worker by
#: worker overlaps and agreements, about 80 bytes per cell in all); beyond, it falls back to
#: majority vote with a RuntimeWarning, so memory stays bounded.
MAX_PAIR_CELLS = 10_000_000
#: Most (worker, reference pair) combinations the one-coin spectral start searches: the search
#: is O(workers x informative pairs); past this (e.g. 2,000 workers who all labelled one task,
#: 2 million pairs) it would take minutes, so the start falls back to majority vote.
MAX_REFERENCE_WORK = 300_000_000

_FALLBACK = "spectral initialiser fell back to majority vote: "

#: Opt-D&S stage-1 variants: "equivariant" (default; results do not depend on how workers,
#: tasks or classes are numbered) or "authors" (Zhang et al.'s released code: groups by worker
#: index mod 3, random power-method starts, first free class on a collision).
SPECTRAL_RULES = ("equivariant", "authors")


class SpectralFallbackWarning(RuntimeWarning):
    """The spectral initialiser could not run and EM starts from majority vote instead."""


class _Degenerate(Exception):
    """Internal signal: the moments do not determine the parameters."""


def _warn(reason: str) -> None:
    warnings.warn(_FALLBACK + reason, SpectralFallbackWarning, stacklevel=3)


def _check_finite(*arrays: np.ndarray, what: str) -> None:
    for arr in arrays:
        if not np.all(np.isfinite(arr)):
            raise _Degenerate(f"non-finite values in {what}")


def _solve_right(a: np.ndarray, b: np.ndarray, what: str) -> np.ndarray:
    """``a @ inv(b)`` for a well-conditioned square ``b`` (raises :class:`_Degenerate` else)."""
    _check_finite(a, b, what=what)
    if np.linalg.cond(b) > MAX_COND:
        raise _Degenerate(f"{what} is singular or ill-conditioned")
    return np.linalg.solve(b.T, a.T).T


def _group_sums(data: LabelSet, groups: np.ndarray) -> np.ndarray:
    """``Z[g]`` = (K, n) sums of one-hot labels of group ``g``'s workers, for g = 0, 1, 2."""
    k, n = data.n_classes, data.n_tasks
    g = groups[data.workers]
    flat = np.bincount(
        (g * n + data.tasks) * k + data.labels, minlength=3 * n * k
    ).astype(np.float64)
    return flat.reshape(3, n, k).transpose(0, 2, 1)


def _symmetrise3(t: np.ndarray) -> np.ndarray:
    """Average of a third-order tensor over the 6 permutations of its axes."""
    total = np.zeros_like(t)
    for p in itertools.permutations(range(3)):
        total = total + t.transpose(p)
    return total / 6.0


def robust_tensor_power(
    tensor: np.ndarray,
    *,
    rng: np.random.Generator | None = None,
    n_starts: int = 100,
    n_iter: int = 100,
    starts: np.ndarray | None = None,
    converge_tol: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Eigenpairs of a (K, K, K) tensor by the robust tensor power method.

    For each of K components, the columns of ``starts`` (a (K, S) array; by default
    ``n_starts`` random unit vectors drawn from ``rng``) are iterated (as one batch)
    ``v <- T(I, v, v) / ||T(I, v, v)||`` for ``n_iter`` steps; the start with the largest
    ``lambda = T(v, v, v)`` wins (the first such start on an exact tie) and is deflated,
    ``T <- T - lambda v⊗v⊗v``. The last two axes are contracted, as in the authors'
    ``RobustPowerMethod``: the whitened empirical M3 is only approximately symmetric.
    Returns eigenvalues (K,) and eigenvectors as columns (K, K). With ``converge_tol``, a winning
    vector that one more step still moves by more than ``converge_tol`` (the iteration has not
    converged, so rounding alone could pick another end point) is an error (``_Degenerate``).
    """
    k = tensor.shape[0]
    t = tensor.copy()
    lams = np.zeros(k)
    vecs = np.zeros((k, k))
    if starts is None and rng is None:
        raise ValueError("robust_tensor_power needs starts or an rng to draw them")
    for h in range(k):
        if starts is None:
            assert rng is not None  # checked above
            v = rng.standard_normal((k, max(int(n_starts), 1)))
        else:
            v = np.array(starts, dtype=np.float64)
        v /= np.linalg.norm(v, axis=0, keepdims=True)
        for _ in range(max(int(n_iter), 0)):
            w = np.einsum("ijk,js,ks->is", t, v, v)
            norm = np.linalg.norm(w, axis=0, keepdims=True)
            v = np.where(norm > 0, w / np.where(norm > 0, norm, 1.0), v)
        lam = np.einsum("ijk,is,js,ks->s", t, v, v, v)
        best = int(np.argmax(lam))
        if converge_tol is not None:
            step = t @ v[:, best] @ v[:, best]  # T(I, v, v) for the winner
            size = max(float(np.linalg.norm(step)), 1e-300)
            moved = float(np.linalg.norm(step / size - v[:, best]))
            if not moved <= converge_tol:
                raise _Degenerate(f"the tensor power method did not converge (component {h}, "
                                  f"last step moved {moved:.1e})")
        lams[h], vecs[:, h] = lam[best], v[:, best]
        t = t - lams[h] * np.einsum("i,j,k->ijk", vecs[:, h], vecs[:, h], vecs[:, h])
    return lams, vecs


def _group_confusion(
    xa: np.ndarray,
    xb: np.ndarray,
    xc: np.ndarray,
    *,
    rng: np.random.Generator,
    n_starts: int,
    n_iter: int,
    symmetrise: bool = False,
    rule: str = "equivariant",
) -> tuple[np.ndarray, np.ndarray]:
    """Averaged (column = true class) confusion of group c and class weights, from three views.

    ``rule="equivariant"``: the power method starts from the whitened class directions
    ``W^T e_c`` (no randomness; they move with the classes when classes are renamed), and
    components, taken in the order found (largest eigenvalue first), each claim the free class
    with their largest entry. ``rule="authors"``: ``n_starts`` random starts and, on a
    collision, the first free class by index (the authors' code).

    M2 and M3 are the empirical moments of Zhang et al. eqs. (2c)-(2d), used as they are, as the
    authors' ``SolveCFG`` does. ``symmetrise=True`` (an ablation only) replaces them by
    ``(M2 + M2^T)/2`` and the average of M3 over its axis permutations; on the Web data that
    costs 1.4 pt after 10 EM iterations (docs/explanation/reproductions/zhang-2014.md).
    """
    k, n = xc.shape
    # Map views a and b into view c's space (the paper's "symmetrisation" step).
    xa_t = _solve_right(xc @ xb.T / n, xa @ xb.T / n, "X_a X_b^T") @ xa
    xb_t = _solve_right(xc @ xa.T / n, xb @ xa.T / n, "X_b X_a^T") @ xb
    m2 = xa_t @ xb_t.T / n
    m3 = np.einsum("in,jn,kn->ijk", xa_t, xb_t, xc) / n
    if symmetrise:
        m2 = 0.5 * (m2 + m2.T)
        m3 = _symmetrise3(m3)
    _check_finite(m2, m3, what="moments")
    # Whitening.
    u, s, _ = np.linalg.svd(m2)
    if s[0] <= 0 or s[-1] <= s[0] / MAX_COND:
        raise _Degenerate("second moment M2 is singular")
    w = u / np.sqrt(s)[None, :]
    t = np.einsum("abc,ai,bj,ck->ijk", m3, w, w, w)
    starts = w.T if rule == "equivariant" else None  # column c: W^T e_c
    # The equivariant rule must not let rounding choose: a power iteration that has not
    # converged falls back to the majority-vote start (the authors' code takes it as it is).
    lams, vecs = robust_tensor_power(t, rng=rng, n_starts=n_starts, n_iter=n_iter, starts=starts,
                                     converge_tol=CONVERGE_TOL if rule == "equivariant" else None)
    _check_finite(lams, vecs, what="tensor eigenpairs")
    if np.any(lams <= 0):
        raise _Degenerate("non-positive tensor eigenvalue")
    mus = np.linalg.pinv(w.T) @ vecs * lams[None, :]  # columns mu_h = lambda_h (W^T)^+ v_h
    weights = 1.0 / lams**2
    # Column-to-class assignment: largest entry; on a collision, the largest free entry
    # (equivariant) or the first free class by index (authors). Identical for K = 2.
    conf = np.zeros((k, k))
    prior = np.zeros(k)
    taken = np.zeros(k, dtype=bool)
    for h in range(k):
        c = int(np.argmax(mus[:, h]))
        if taken[c]:
            free = np.flatnonzero(~taken)
            c = int(free[np.argmax(mus[free, h])] if rule == "equivariant" else free[0])
        taken[c] = True
        conf[:, c] = mus[:, h]
        prior[c] = weights[h]
    return conf, prior


def canonical_worker_order(data: LabelSet) -> np.ndarray:
    """Workers in an order that renaming tasks, workers or classes does not change.

    Sorted by counts that do not depend on names: most labels first, then most agreements with
    co-workers (sum over their labels of the other workers giving the same label to the same
    task), then most co-worker overlaps, then the sum of squared agreement counts. Workers equal
    on all four are ordered by their labels, ``(task index, class index)`` pairs in order (so
    identical workers, whose order cannot matter, are the only ones left to the index).
    """
    m = data.n_workers
    same = data.vote_counts()[data.tasks, data.labels] - 1.0  # co-workers agreeing per label
    others = data.task_degree[data.tasks] - 1.0
    keys = [np.bincount(data.workers, weights=x, minlength=m) for x in (same**2, others, same)]
    keys.append(data.worker_degree.astype(np.float64))
    order = np.lexsort([-key for key in keys])  # last key is the primary one
    sorted_keys = np.stack([key[order] for key in keys], axis=1)
    new_run = np.r_[True, np.any(sorted_keys[1:] != sorted_keys[:-1], axis=1)]
    starts = np.flatnonzero(new_run)
    ends = np.r_[starts[1:], m]
    tied = [(a, b) for a, b in zip(starts, ends, strict=True) if b - a > 1]
    if tied:
        by_worker = np.argsort(data.workers, kind="stable")
        pairs = (data.tasks * data.n_classes + data.labels)[by_worker]
        bounds = np.searchsorted(data.workers[by_worker], np.arange(m + 1))
        for a, b in tied:
            members = order[a:b]
            content = [tuple(np.sort(pairs[bounds[j]:bounds[j + 1]]).tolist()) for j in members]
            order[a:b] = members[sorted(range(b - a), key=lambda i: (content[i], members[i]))]
    return order


def spectral_confusion(
    data: LabelSet,
    *,
    rng: np.random.Generator,
    delta: float = 1e-6,
    n_starts: int = 100,
    n_power_iter: int = 100,
    symmetrise: bool = False,
    rule: str = "equivariant",
) -> tuple[np.ndarray, np.ndarray] | None:
    """Opt-D&S stage 1 (Zhang et al. 2014, Algorithm 1): spectral confusion matrices.

    Workers are split into three groups by position mod 3, in the order of
    :func:`canonical_worker_order` (``rule="equivariant"``: renaming workers, tasks or classes
    does not change the groups) or of their indices (``rule="authors"``, the authors' code,
    which also draws random power-method starts; see :func:`_group_confusion`). Returns
    ``(confusion, prior)`` with ``confusion[j, c, l] = P(worker j says l | true class c)``
    (rows sum to 1 after flooring at ``delta``) and the class prior, or ``None`` (with a
    RuntimeWarning) when the moments are singular or degenerate, in which case the caller
    should start from majority vote.
    The moments are used unsymmetrised, as in the paper and the authors' code; ``symmetrise``
    is an ablation switch (see :func:`_group_confusion`).
    """
    k, n, m = data.n_classes, data.n_tasks, data.n_workers
    if k < 2 or n == 0 or data.n_labels == 0:
        _warn(f"nothing to estimate (K={k}, {n} tasks, {data.n_labels} labels)")
        return None
    check_choice("rule", rule, SPECTRAL_RULES)
    groups = np.empty(m, dtype=np.int64)
    order = canonical_worker_order(data) if rule == "equivariant" else np.arange(m)
    groups[order] = np.arange(m) % 3
    present = np.bincount(groups[np.unique(data.workers)], minlength=3)
    if np.any(present == 0):
        _warn("needs labels from workers in each of the three groups (at least 3 workers)")
        return None
    z = _group_sums(data, groups)  # (3, K, n)
    try:
        with np.errstate(all="ignore"):
            confs = np.zeros((3, k, k))
            weights = np.zeros((3, k))
            for c in range(3):
                a, b = (c + 1) % 3, (c + 2) % 3
                confs[c], weights[c] = _group_confusion(
                    z[a], z[b], z[c], rng=rng, n_starts=n_starts, n_iter=n_power_iter,
                    symmetrise=symmetrise, rule=rule,
                )
            # Per-worker confusion via the other two groups (Zhang et al. eq. 5).
            z_total = z.sum(axis=0)
            conf_total, weight_total = confs.sum(axis=0), weights.sum(axis=0)
            inc_t = data.incidence_t  # (m*K, n)
            result = np.zeros((m, k, k))  # [j, l, c] before the transpose
            for g in range(3):
                members = np.flatnonzero(groups == g)
                z_alt = (z_total - z[g]).T  # (n, K)
                cross = (inc_t @ z_alt).reshape(m, k, k)[members] / n  # [j, l, l']
                conf_alt = conf_total - confs[g]
                w_alt = (weight_total - weights[g]) / 2.0
                d = w_alt[:, None] * conf_alt.T  # diag(w_alt) C_alt^T
                result[members] = _solve_right(
                    cross.reshape(-1, k), d, "weighted group confusion diag(w) C_alt^T"
                ).reshape(-1, k, k)
            _check_finite(result, what="per-worker confusion")
    except _Degenerate as exc:
        _warn(str(exc))
        return None
    except np.linalg.LinAlgError as exc:
        _warn(f"linear algebra failure ({exc})")
        return None
    conf = np.maximum(result, delta)
    conf /= conf.sum(axis=1, keepdims=True)  # columns (true class) sum to 1
    conf = conf.transpose(0, 2, 1)  # -> [j, c, l]
    prior = np.maximum(weights.sum(axis=0), delta)
    prior /= prior.sum()
    return conf, prior


def _pair_statistics(data: LabelSet) -> tuple[np.ndarray, np.ndarray]:
    """Overlap counts and agreement counts between every pair of workers, (m, m) each."""
    m, k = data.n_workers, data.n_classes
    # Deduplicate (task, worker) pairs: keep one label per pair (the last one given).
    key = data.tasks * m + data.workers
    _, last = np.unique(key[::-1], return_index=True)
    idx = data.n_labels - 1 - last
    t, w, lab = data.tasks[idx], data.workers[idx], data.labels[idx]
    ones = np.ones(t.shape[0])
    g = sp.csr_matrix((ones, (t, w)), shape=(data.n_tasks, m))
    overlap = (g.T @ g).toarray()
    # Agreements: one indicator matrix per (task, class) row.
    b = sp.csr_matrix((ones, (t * k + lab, w)), shape=(data.n_tasks * k, m))
    agree = (b.T @ b).toarray()
    return overlap, agree


def one_coin_spectral_skill(data: LabelSet) -> np.ndarray | None:
    """One-coin spectral estimate of worker accuracies (Zhang et al. 2014, Algorithm 2).

    ``N_ab = (K agree_ab - 1)/(K - 1)`` estimates ``c_a c_b`` with centred skill
    ``c = (K nu - 1)/(K - 1)``. For worker i, the pair (a, b) (both != i, both overlapping i) with
    the largest ``|N_ab|`` gives ``c_i = sign(N_ia + N_ib) sqrt(N_ia N_ib / N_ab)`` (the sign
    of the reference worker that agrees more, whichever is named first); when several pairs
    are equally strong, ``c_i`` is the mean of their estimates, so the result does not depend
    on how workers are numbered. Returns accuracies in (0, 1), or ``None`` with a
    RuntimeWarning when no worker is estimable, when every estimate is exactly ``1/K`` (no
    information: EM would keep uniform posteriors and the labels would come from the argmax tie
    rule), or when there are so many workers that the (m, m) statistics would pass
    :data:`MAX_PAIR_CELLS` or the reference-pair search :data:`MAX_REFERENCE_WORK`.
    """
    m, k = data.n_workers, data.n_classes
    if k < 2 or m < 3 or data.n_labels == 0:
        _warn(f"one-coin spectral needs >= 3 workers and K >= 2 (m={m}, K={k})")
        return None
    if m * m > MAX_PAIR_CELLS:
        _warn(f"{m} workers: the worker-by-worker statistics would exceed {MAX_PAIR_CELLS:,} "
              "cells")
        return None
    overlap, agree = _pair_statistics(data)
    np.fill_diagonal(overlap, 0.0)
    defined = overlap > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        nstat = np.where(defined, (k * agree / np.where(defined, overlap, 1.0) - 1.0) / (k - 1), 0)
    pa, pb = np.nonzero(np.triu(defined & (np.abs(nstat) > 1e-12), k=1))
    if pa.size == 0:
        _warn("no pair of workers with an informative overlap")
        return None
    if m * pa.size > MAX_REFERENCE_WORK:
        _warn(f"{m} workers x {pa.size:,} informative worker pairs: the reference-pair search "
              f"would exceed {MAX_REFERENCE_WORK:,} combinations")
        return None
    strength = np.abs(nstat[pa, pb])
    centred = np.full(m, np.nan)
    chunk = max(1, int(5e6 // max(pa.size, 1)))
    n_ab = nstat[pa, pb]
    for start in range(0, m, chunk):  # chunks bound the (workers x pairs) memory
        rows = np.arange(start, min(start + chunk, m))
        ok = defined[rows][:, pa] & defined[rows][:, pb]
        ok &= (pa[None, :] != rows[:, None]) & (pb[None, :] != rows[:, None])
        score = np.where(ok, strength[None, :], -1.0)
        best = score.max(axis=1, initial=-1.0)
        tied = ok & (score == best[:, None])  # every pair as strong as the strongest
        n_ia, n_ib = nstat[rows][:, pa], nstat[rows][:, pb]
        with np.errstate(divide="ignore", invalid="ignore"):
            val = np.sign(n_ia + n_ib) * np.sqrt(np.maximum(n_ia * n_ib / n_ab, 0.0))
            mean = np.where(tied, val, 0.0).sum(axis=1) / tied.sum(axis=1)
        centred[rows] = np.where(best > 0, mean, np.nan)
    estimable = np.isfinite(centred)
    if not estimable.any():
        _warn("no worker has an estimable pair")
        return None
    if np.all(np.abs(centred[estimable]) <= 1e-12):
        # Every accuracy would be exactly 1/K: EM would stay at uniform posteriors, and the
        # labels would come from the argmax tie rule (lowest class index), not from the data.
        _warn("every estimated accuracy is 1/K (no information)")
        return None
    nu = 1.0 / k + (k - 1) * centred / k
    nu = np.where(estimable, nu, np.median(nu[estimable]))
    if nu.mean() < 1.0 / k:
        nu = 2.0 / k - nu
    eps = 1e-6
    return np.clip(nu, eps, 1.0 - eps)
