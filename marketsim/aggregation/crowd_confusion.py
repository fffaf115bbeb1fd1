"""The crowd's own confusion structure (``marketsim calibrate``'s hierarchical world): every
worker's confusion matrix drawn around one crowd-level matrix.

Row ``c`` of worker ``j``'s matrix is ``pi_j[c] ~ Dirichlet(s * crowd[c])``: the crowd matrix
says which classes the crowd confuses (pairs or blocks of classes, each class's own accuracy:
a class whose tasks are harder as a whole has a lower diagonal), the concentration ``s`` how
far workers differ from it (large: every worker is the crowd; small: each worker is their own
matrix). It is the hierarchical Dawid–Skene model (Paun et al. 2018, "Comparing Bayesian
Models of Annotation", TACL 6, its HierD&S, with a Dirichlet rather than a logistic-normal
population) and the worker part of community-based Bayesian classifier combination (Venanzi
et al. 2014, WWW) with one community.

Given each task's class distribution the answers a worker gave on class-``c`` tasks are
Dirichlet-multinomial, so the crowd matrix and ``s`` are fitted by empirical Bayes: the
marginal log-likelihood (the worker matrices integrated out)

    M = sum_{j,c} [lgamma(s) - lgamma(s + n_jc) + sum_l (lgamma(s a_cl + n_jcl) - lgamma(s a_cl))]

of the (fractional) counts ``n_jcl`` is maximised over ``a_c = softmax(eta_c)`` and ``log s``
by L-BFGS with its exact gradient (digamma sums over the counts array: no loop over workers).
Each worker's matrix is then its posterior mean ``(s a_c + n_jc.) / (s + n_jc)``: a worker
with few labels is the crowd, one with many is themselves.

Posterior means are narrower than the population they estimate: the deviation of worker
``j``'s mean from the crowd is ``w (p_j - a)`` with ``w = n / (s + n)`` and ``p_j`` the
worker's own proportions, whose variance across workers is ``w`` times the population's
``a (1 - a) / (s + 1)``. A twin built from them has a crowd more alike than the real one, and
Dawid–Skene, which profits from telling workers apart, gains less from it at a few labels per
task. :meth:`CrowdPrior.spread` restores the population's spread, as constrained Bayes
estimates do (Louis 1984, JASA 79:393; Ghosh 1992): each deviation scaled by ``1 / sqrt(w)``,
i.e. ``a + sqrt(w) (p_j - a)``, a mix of the crowd and the worker's own proportions (always a
probability row), whose variance across workers is the population's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import digamma, gammaln, softmax

#: Standard deviation of the N(0, s^2) prior on the crowd matrix's logits (as the worlds').
LOGIT_PRIOR_SD = 3.0
#: The range of the concentration ``s`` the fit considers.
MIN_CONCENTRATION, MAX_CONCENTRATION = 1e-2, 1e5


@dataclass(frozen=True)
class CrowdPrior:
    """The fitted population: the crowd matrix (K, K), the concentration and the marginal
    log-likelihood of the counts (the worker matrices integrated out)."""

    matrix: np.ndarray
    concentration: float
    log_marginal: float

    @property
    def pseudo_counts(self) -> np.ndarray:
        """``s * crowd``: the labels' worth of the crowd each worker's matrix starts from."""
        return self.concentration * self.matrix

    def shrunk(self, counts: np.ndarray) -> np.ndarray:
        """Each worker's posterior-mean matrix (workers, K, K) given their ``counts``."""
        total = self.pseudo_counts[None] + counts
        return total / total.sum(axis=2, keepdims=True)

    def spread(self, matrices: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """``matrices`` (workers, K, K; posterior means or modes around the crowd, fitted on
        ``counts``) with the population's spread restored: each row's deviation from the crowd
        scaled by ``sqrt((s + n) / n)`` for the row's ``n`` labels (module docstring; a row
        without labels stays the crowd's), clipped to probabilities and renormalised."""
        n = counts.sum(axis=2, keepdims=True)
        scale = np.sqrt((self.concentration + n) / np.maximum(n, 1e-12))
        scale = np.where(n > 0, scale, 1.0)
        rows = np.clip(self.matrix[None] + scale * (matrices - self.matrix[None]), 1e-6, None)
        return rows / rows.sum(axis=2, keepdims=True)


def answer_counts(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                  weights: np.ndarray, n_workers: int) -> np.ndarray:
    """``n[j, c, l]``: worker ``j``'s answers ``l`` on tasks of class ``c``, each task's class
    distributed as ``weights`` (tasks, K) (fractional counts without a truth)."""
    k = weights.shape[1]
    by_answer = np.zeros((n_workers, k, k))  # (worker, answer, class)
    np.add.at(by_answer, (workers, labels), weights[tasks])
    return by_answer.transpose(0, 2, 1)


def _negative_marginal(x: np.ndarray, counts: np.ndarray) -> tuple[float, np.ndarray, float]:
    """Minus the log posterior of (eta, log s), its gradient, and the marginal alone."""
    m, k, _ = counts.shape
    eta, s = x[:-1].reshape(k, k), float(np.exp(x[-1]))
    crowd = softmax(eta, axis=1)
    alpha = s * crowd
    row_n = counts.sum(axis=2)  # (m, K)
    seen = row_n > 0
    marginal = float((gammaln(s) - gammaln(s + row_n))[seen].sum()
                     + (gammaln(alpha[None] + counts) - gammaln(alpha)[None]).sum())
    g_alpha = (digamma(alpha[None] + counts) - digamma(alpha)[None]).sum(axis=0)  # (K, K)
    g_eta = alpha * (g_alpha - (crowd * g_alpha).sum(axis=1, keepdims=True))
    g_row = (digamma(s) - digamma(s + row_n))[seen].sum()
    g_log_s = s * (g_row + float((crowd * g_alpha).sum()))
    var = LOGIT_PRIOR_SD ** 2
    value = -marginal + 0.5 * float((eta ** 2).sum()) / var
    grad = np.concatenate([(-g_eta + eta / var).ravel(), [-g_log_s]])
    return value, grad, marginal


def fit_crowd_prior(counts: np.ndarray) -> CrowdPrior:
    """The crowd matrix and concentration of the workers' answer ``counts`` (workers, K, K)
    by maximum marginal likelihood, started from the pooled counts."""
    k = counts.shape[1]
    pooled = counts.sum(axis=0) + 0.5
    x0 = np.concatenate([np.log(pooled / pooled.sum(axis=1, keepdims=True)).ravel(),
                         [np.log(10.0)]])
    bounds = [(-30.0, 30.0)] * (k * k) + [(np.log(MIN_CONCENTRATION),
                                           np.log(MAX_CONCENTRATION))]

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad, _ = _negative_marginal(x, counts)
        return value, grad

    result = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                      options={"maxiter": 1000})
    _, _, marginal = _negative_marginal(result.x, counts)
    return CrowdPrior(softmax(result.x[:-1].reshape(k, k), axis=1), float(np.exp(result.x[-1])),
                      marginal)

