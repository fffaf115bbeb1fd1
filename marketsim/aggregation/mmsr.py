"""M-MSR, Ma & Olshevsky, "Adversarial crowdsourcing through robust rank-one matrix
completion" (NeurIPS 2020), as crowd-kit's ``MMSR`` runs it; binary tasks only.

For K = 2 classes coded ±1, the worker–worker matrix ``C[i, j] = (K/(K-1)) agree_ij - 1/(K-1)``
(``agree_ij`` the share of their common tasks on which i and j agree) has expectation
``s_i s_j`` off the diagonal, with ``s_i = (K p_i - 1)/(K - 1)`` and ``p_i`` worker i's
accuracy. M-MSR completes this rank-one matrix robustly from its observed entries (pairs with a
common task): with ``X = |C|`` it alternates, for every worker at once,

``v_j <- mean of the reduced {X_ij / u_i : (i, j) observed}``, then the same for ``u`` with
the new ``v``,

where "reduced" is the mean-subsequence reduction of MSR consensus: drop the F largest values
above the current ``v_j`` (all of them when fewer than F are) and the F smallest below it,
``F = floor(d/2) - 1`` with d the fewest partners any worker has (the number of adversaries the
iteration tolerates). ``u`` and ``v`` start from the same uniform draw (``random_state``, each
worker's number keyed by its label counts, not its index, so renaming cannot move it); the
loop stops when ``||u v^T - u' v'^T||_F <= tol`` or after ``n_iter`` rounds. Then
``|s| = u / sqrt(|u|/|v|)``; the signs come from the two-colouring of the signed graph of C
(an edge for each negative entry, a two-edge path through a new node for each positive one: the
eigenvector of the smallest eigenvalue of the random-walk matrix), oriented so that most
workers are positive; ``s`` is clipped to ``[-1/(K-1) + 1/sqrt(n), 1 - 1/sqrt(n)]`` (n tasks),
``p = s (K-1)/K + 1/K``, and the tasks are decided by a weighted vote with the log-odds
weights ``w_i = log((K-1) p_i / (1 - p_i))``.

Connected parts. Workers who share no task with the others carry no information about them:
C has no entry between two parts, the rank-one model holds within each part, and one global
eigenvector cannot orient them (issue #38: two workers on three other tasks flipped a whole
crowd from 18 % to 86 % error). So every step runs per connected part of the co-labelling
graph (``scipy.sparse.csgraph.connected_components``): d, F, n, the scale of ``u`` and ``v``
and the stopping norm (over the parts' diagonal blocks) are the part's own (vectorised: F and
n as per-column arrays), and each part of the signed graph is two-coloured and oriented on
its own (most of its workers positive, on a tie its summed skill). A worker the data say
nothing about (alone on their tasks, or in a part whose orientation ties both ways) gets the
neutral skill ``1/sqrt(n)`` of the whole data, a small positive weight, so their tasks go by
their own votes; weight 0 left those tasks to the tie rule's last resort. Ties of the vote go
by the estimators' one rule (:mod:`._ties`).

Vectorised: each half-step sorts the (workers × workers) matrix column-wise once; no Python
loop over workers, tasks or labels (the sign step loops over the connected parts). Where this
differs from crowd-kit 1.4.2: (1) F is at least 0 (crowd-kit's F = -1, when some worker shares
tasks with at most one other, keeps only the largest value), and each part has its own; (2)
the sign graph uses the observed pairs only (crowd-kit also reads the unobserved pairs and the
diagonal, both -1/(K-1), as negative edges); (3) a reduced mean of 0 becomes ``1/sqrt(n)``
(crowd-kit does so for a single kept 0 only; a 0 divides by zero next); (4) repeated labels of
one worker on one task count by the sign of their sum (crowd-kit keeps the last); (5) parts
and neutral workers, above (crowd-kit orients the whole crowd at once).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import connected_components

from marketsim.aggregation._binary import threshold_matrix
from marketsim.aggregation._numeric import as_generator, hash_uniform
from marketsim.aggregation._threads import one_blas_thread
from marketsim.aggregation._weighted_vote import WeightedVote
from marketsim.aggregation.estimator import ConvergenceWarning
from marketsim.aggregation.options import Params, param, random_state_param
from marketsim.data.labels import LabelSet

#: Sign graphs with at most this many nodes are decomposed densely.
DENSE_NODES = 1000
#: M-MSR works on the dense workers × workers agreement matrix (several float arrays of that
#: shape): at most this many workers (128 MB an array), refused in one line beyond.
MAX_WORKERS = 4000


def covariation(data: LabelSet) -> tuple[np.ndarray, np.ndarray]:
    """``C`` (workers × workers) for K = 2 and the mask of observed off-diagonal pairs."""
    votes = threshold_matrix(data, 1).T.tocsr()  # workers × tasks, ±1 (0: a tied repeat)
    common = (abs(votes) @ abs(votes).T).toarray()
    np.fill_diagonal(common, 0.0)
    observed = common > 0
    agree = (votes @ votes.T).toarray()
    c = np.where(observed, agree / np.where(observed, common, 1.0), -1.0)
    np.fill_diagonal(c, -1.0)
    return c, observed


def reduced_means(x: np.ndarray, observed: np.ndarray, other: np.ndarray, own: np.ndarray,
                  f: np.ndarray, zero: np.ndarray | float) -> np.ndarray:
    """One M-MSR half-step: for each column j the MSR-reduced mean of ``x[i, j] / other[i]``
    over observed i, relative to ``own[j]``, dropping ``f[j]`` values on each side (``f`` is
    per column: each connected part of the crowd has its own); columns with nothing observed
    keep ``own``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(observed, x / other[:, None], 0.0)
    count = observed.sum(axis=0)
    total = r.sum(axis=0)
    below, above = observed & (r < own), observed & (r > own)
    n_below, n_above = below.sum(axis=0), above.sum(axis=0)
    ascending = np.sort(np.where(observed, r, np.inf), axis=0)
    prefix = np.vstack([np.zeros(r.shape[1]), np.cumsum(np.where(np.isfinite(ascending),
                                                                 ascending, 0.0), axis=0)])
    cols = np.arange(r.shape[1])
    smallest = prefix[np.minimum(f, r.shape[0]), cols]
    largest = total - prefix[np.clip(count - f, 0, r.shape[0]), cols]
    low = np.where(n_below < f, (r * below).sum(axis=0), smallest)
    high = np.where(n_above < f, (r * above).sum(axis=0), largest)
    kept = count - np.where(n_below < f, n_below, f) - np.where(n_above < f, n_above, f)
    mean = (total - low - high) / np.maximum(kept, 1)
    mean = np.where(mean == 0.0, zero, mean)
    return np.where(kept > 0, mean, own)


def _two_colouring(signed: np.ndarray) -> np.ndarray:
    """±1 per node of one connected signed graph (no isolated node): the eigenvector of the
    smallest eigenvalue of its random-walk matrix (an edge per negative entry, a two-edge path
    through a new node per positive one)."""
    k = signed.shape[0]
    neg = sp.csr_matrix(np.triu(signed < 0, 1).astype(np.float64))
    pi, pj = np.nonzero(np.triu(signed > 0, 1))
    mid = sp.csr_matrix((np.ones(2 * pi.size), (np.repeat(np.arange(pi.size), 2),
                                                np.column_stack([pi, pj]).ravel())),
                        shape=(pi.size, k))
    adj = sp.bmat([[neg + neg.T, mid.T], [mid, None]], format="csr")
    degree = np.asarray(adj.sum(axis=1)).ravel()
    scale = sp.diags(1.0 / np.sqrt(degree))
    sym = scale @ adj @ scale  # eigenvalues of D^-1 A; -1 for a bipartite graph
    if sym.shape[0] <= DENSE_NODES:
        with one_blas_thread():
            vec = np.linalg.eigh(sym.toarray())[1][:, 0]
    else:
        start = np.random.default_rng(0).random(sym.shape[0])
        vec = spla.eigsh(sp.identity(sym.shape[0]) - sym, k=1, which="LA", v0=start)[1][:, 0]
    return np.sign(vec[:k])


def sign_vector(c: np.ndarray, observed: np.ndarray, size: np.ndarray) -> np.ndarray:
    """±1 per worker, each connected part of the signed graph of ``c`` (its nonzero observed
    entries) on its own: the part's two-colouring, oriented so that most of its workers are
    better than chance (M-MSR's premise: the adversaries are a minority), on a tie in numbers
    so that its summed skill ``size`` is positive. 0 for a worker without information: no
    nonzero observed entry, or in a part whose two sides tie in number and in summed skill
    (within rounding: nothing in the data says which side is right)."""
    signed = np.where(observed, np.sign(c), 0.0)
    valid = np.abs(signed).sum(axis=1) > 0
    out = np.zeros(c.shape[0])
    parts = connected_components(sp.csr_matrix(signed != 0), directed=False)[1]
    # one decomposition per connected part with information (a loop over parts; most crowds
    # have one)
    for part in np.unique(parts[valid]):
        members = np.flatnonzero(valid & (parts == part))
        out[members] = _two_colouring(signed[np.ix_(members, members)])
    n_parts = int(parts.max(initial=-1)) + 1
    count = np.bincount(parts, weights=out, minlength=n_parts)
    skill = np.bincount(parts, weights=out * size, minlength=n_parts)
    scale = np.bincount(parts, weights=np.abs(out * size), minlength=n_parts)
    skill = np.where(np.abs(skill) > 1e-9 * scale, skill, 0.0)
    flip = np.where(count != 0, np.sign(count), np.sign(skill))
    return out * flip[parts]


class MMSR(WeightedVote):
    """M-MSR (Ma & Olshevsky 2020): robust rank-one completion of the worker agreement matrix,
    then a log-odds weighted vote. Binary tasks only (K > 2 is refused).

    Parameters: :class:`MMSR.Options` (``random_state`` seeds the uniform start of ``u`` =
    ``v``; ``tol = 0`` stops only at an exact fixed point).

    Fitted attributes: ``skills_`` (n_workers,) the log-odds weights (crowd-kit's
    ``skills_``); ``skill_`` the accuracies ``p_i``; ``scores_`` (n_tasks, 2) the summed
    weights per class; ``proba_`` their softmax, the posterior of the one-coin model with
    accuracies ``p`` and a uniform prior (crowd-kit reports only the scores); ``labels_``;
    ``loss_history_``; ``n_iter_``; ``converged_``.
    """

    #: Defined for two classes only: ``fit`` refuses K > 2 with a one-line ValueError (the
    #: shared property tests read this, as the policies' ``BINARY_ONLY``).
    BINARY_ONLY = True
    #: Workers beyond which the dense pairwise matrices are refused (see :data:`MAX_WORKERS`).
    MAX_WORKERS = MAX_WORKERS

    method = "mmsr"
    description = ("M-MSR (Ma & Olshevsky 2020): robust rank-one completion of worker "
                   "agreement, log-odds weighted vote; binary only")

    class Options(Params):
        """Parameters of M-MSR."""

        n_iter: int = param(10_000, "M-MSR rounds at most", ge=1, le=1_000_000)
        tol: float = param(1e-10, "stop when ||u v^T|| moves by at most tol in a round", ge=0)
        random_state: Any = random_state_param(0)

    n_iter: int
    tol: float
    random_state: Any

    def _proba(self, scores: np.ndarray) -> np.ndarray:
        shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
        return shifted / shifted.sum(axis=1, keepdims=True)

    def _fit_weights(self, data: LabelSet) -> np.ndarray:
        if data.n_classes > 2:
            raise ValueError(f"mmsr supports binary tasks only (2 classes), got "
                             f"{data.n_classes} classes")
        m = data.n_workers
        if m > self.MAX_WORKERS:
            raise ValueError(f"mmsr works on the dense worker-by-worker agreement matrix: "
                             f"{m:,} workers need {m * m:,} entries per matrix (at most "
                             f"{self.MAX_WORKERS:,} workers); use another method")
        # the uniform start, drawn per worker from the seed and what the worker did (labels,
        # labels per class, symmetric in the classes), not from its index: with the MSR
        # trimming the end point can depend on the start, and renaming must not move it
        seed = int(as_generator(self.random_state).integers(0, 2**63))
        counts = data.worker_label_counts
        u = hash_uniform(seed, data.worker_degree, (counts.astype(np.int64) ** 2).sum(axis=1))
        c, observed = covariation(data) if data.n_classes == 2 else (np.zeros((m, m)),) * 2
        observed = observed.astype(bool)
        # each connected part of the co-labelling graph is its own rank-one problem: its own F
        # (from the fewest partners in it), scale and sign (a worker alone is a part)
        parts = connected_components(sp.csr_matrix(observed), directed=False)[1]
        n_parts = int(parts.max(initial=-1)) + 1
        partners = observed.sum(axis=0)
        fewest = np.full(n_parts, m, dtype=np.int64)
        np.minimum.at(fewest, parts, partners)
        f = np.maximum(fewest // 2 - 1, 0)[parts]
        # n, the part's own number of tasks: the floor 1/sqrt(n) of a reduced mean and the
        # clip of the skills
        task_part = np.full(data.n_tasks, -1, dtype=np.int64)
        task_part[data.tasks] = parts[data.workers]  # a task's workers are all in one part
        n_part = np.bincount(task_part[task_part >= 0], minlength=n_parts)
        zero = 1.0 / np.sqrt(np.maximum(n_part, 1))[parts]
        x, v = np.abs(c), u.copy()

        def per_part(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return np.bincount(parts, weights=a * b, minlength=n_parts)
        self.loss_history_: list[float] = []
        self.converged_ = False
        diverged = False
        for _ in range(int(self.n_iter)):
            u_prev, v_prev = u, v
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                v = reduced_means(x, observed, u, v, f, zero)
                u = reduced_means(x, observed, v, u, f, zero)
                # ||u v^T - u' v'^T||_F over the parts' diagonal blocks
                sq = float(np.sum(per_part(u, u) * per_part(v, v)
                                  + per_part(u_prev, u_prev) * per_part(v_prev, v_prev)
                                  - 2.0 * per_part(u, u_prev) * per_part(v, v_prev)))
            if not (np.isfinite(sq) and np.isfinite(u).all() and np.isfinite(v).all()):
                # The iteration diverges on some degenerate crowds (too few shared tasks to
                # pin the rank-one estimate): keep the last finite one, and say so.
                u, v, diverged = u_prev, v_prev, True
                break
            self.loss_history_.append(float(np.sqrt(max(float(sq), 0.0))))
            if self.loss_history_[-1] <= float(self.tol):
                self.converged_ = True
                break
        self.n_iter_ = len(self.loss_history_)
        if diverged:
            warnings.warn(f"mmsr diverged after {self.n_iter_} iterations (too few shared "
                          "tasks to pin the skills); the last finite estimate is used",
                          ConvergenceWarning, stacklevel=3)
        elif not self.converged_ and float(self.tol) > 0:
            warnings.warn(f"mmsr did not converge in {self.n_iter} iterations",
                          ConvergenceWarning, stacklevel=3)
        nu, nv = np.sqrt(per_part(u, u))[parts], np.sqrt(per_part(v, v))[parts]
        with np.errstate(divide="ignore", invalid="ignore"):
            size = np.where((nu > 0) & (nv > 0), u / np.sqrt(nu / nv), u)
        sign = sign_vector(c, observed, size)
        # a worker the data say nothing about (alone, or in a part with no orientation) is
        # neutral: the whole data's least skill above chance, 1/sqrt(n), so their tasks go
        # by their own majority (weight 0 left them to the class spelled first)
        neutral = 1.0 / np.sqrt(max(int(n_part.sum()), 2))
        s = np.clip(sign * size, -1.0 + zero, 1.0 - zero)  # K = 2: -1/(K-1) = -1
        s = np.where(sign != 0, s, neutral)
        self.skill_ = (s + 1.0) / 2.0
        self.skills_ = np.log(self.skill_ / (1.0 - self.skill_))
        return self.skills_
