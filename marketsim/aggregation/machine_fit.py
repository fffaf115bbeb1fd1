"""A model annotator fitted to its answers in a mixed label file (``marketsim calibrate``): the
options of a ``[[machines]]`` table of the ``classifier`` kind (:mod:`marketsim.machines.
classifier`) by maximum likelihood under the classifier's own generative model, the humans'
world fitted first on the humans' labels alone.

The classifier, at temperature 0 and without a family, answers task ``i`` right when its
hardness ``h_i = ρ·u_i + √(1−ρ²)·e_i`` is below ``t = Φ⁻¹(accuracy)``, ``u_i`` the humans'
task difficulty as a normal score; its confidence reads the signal ``S_i = h_i + σ·η_i``
(``σ² = 1/r² − 1``, ``r = insight``) through ``q = Φ((t − r²S)/√(1−r²))``, sharpened to
``c = expit((1 + o)·logit q)`` (``o = overconfidence``). Inverting ``c`` gives ``S``, so one
answer with its confidence has the likelihood

    P(y, c) = |dS/dc| Σ_{class, u} P(class, u | humans) N(S; ρu, 1/r² − ρ²)
              × [1(y = class) P(right | S, u) + 1(y ≠ class) (1 − P(right | S, u)) / (K − 1)]

(``(h, S)`` given ``u`` is bivariate normal, so ``P(right | S, u)`` is a normal CDF; an
answer without a confidence drops ``S``). ``P(class, u | humans)`` is the humans' posterior
under their fitted world (:mod:`~marketsim.aggregation.confusion_fit`: each task's class and
inverse difficulty ``log β = −σ_h u`` given its human labels, the class one-hot where the truth
is known, else from the class prior), on Gauss–Hermite nodes of ``u``. So without a truth the
model's accuracy is not counted against the humans' majority or Dawid–Skene answer (which would
charge it with the humans' own errors): each answer is weighed by how likely each class is, and
that posterior's error is integrated over, not ignored. The four numbers (``accuracy``,
``rho``, ``insight``, ``overconfidence``) are fitted together (L-BFGS); without confidences
only the first two; without a humans' difficulty (``σ_h = 0``) ``rho`` is not identified and
stays 0. Family and shared errors, a confusion matrix and the temperature keep their defaults
(each model's first answer per task is fitted).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_ndtr, logit, logsumexp, ndtr, ndtri

from marketsim.aggregation._threads import one_blas_thread
from marketsim.aggregation.confusion_fit import ConfusionFit, answer_matrix
from marketsim.aggregation.source_accuracy import share_right
from marketsim.data.mixed_labels import ModelAnswers

#: Gauss–Hermite nodes the humans' difficulty is integrated on.
NODES = 16
#: Equal-width confidence bins of the expected calibration error (ECE) read from answers.
ECE_BINS = 10
#: The confidences read: kept this far from 0 and 1 (a stated 1.0 is a logit of 28).
CLIP = 1e-12
#: The options' ranges (those of ``[[machines]]``, kept off their edges for the search).
RHO_MAX, INSIGHT_RANGE, OVERCONFIDENCE_RANGE = 0.995, (0.01, 0.99), (-0.9, 10.0)


@dataclass(frozen=True)
class MachineFit:
    """One model's fitted options and what they were fitted from: its answers (first per
    task), those with a confidence, the answers dropped as repeats and the tasks whose repeats
    disagreed; its accuracy and ECE measured on its answers (against the truth, else against
    the humans' posterior) and the calibration error its fitted options imply."""

    name: str
    accuracy: float
    rho: float
    insight: float
    overconfidence: float
    answers: int
    with_confidence: int
    repeats: int
    changed: int
    log_likelihood: float
    measured_accuracy: float
    measured_ece: float | None
    against: str

    @property
    def implied_ece(self) -> float | None:
        """The calibration error its fitted options imply (None without confidences)."""
        if not self.with_confidence:
            return None
        return implied_calibration_error(self.accuracy, self.insight, self.overconfidence)

    def table(self) -> dict[str, Any]:
        """Its ``[[machines]]`` table (kind ``classifier``; the call's price, latency and
        rate limit are not in a label file: their defaults)."""
        return {"name": self.name, "kind": "classifier",
                "accuracy": round(self.accuracy, 6), "rho": round(self.rho, 6),
                "insight": round(self.insight, 6),
                "overconfidence": round(self.overconfidence, 6)}


def humans_posterior(world: ConfusionFit, tasks: np.ndarray, workers: np.ndarray,
                     labels: np.ndarray, class_weights: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Each task's posterior over (class, node of the humans' difficulty ``u``) given its
    human labels under the fitted ``world`` (tasks, K, NODES), and the nodes. ``class_weights``
    (tasks, K): one-hot where the truth is known, else the class prior."""
    n, k = class_weights.shape
    node, weight = np.polynomial.hermite_e.hermegauss(NODES)
    beta = np.exp(-world.sigma * node)  # log β = −σ u: harder tasks have smaller β
    log_pi = np.log(world.confusion)  # (m, S, Y)
    m = log_pi.shape[0]
    scaled = beta[None, None, :, None] * log_pi[:, :, None, :]  # (m, S, Q, Y)
    scaled = scaled - logsumexp(scaled, axis=3, keepdims=True)
    table = scaled.transpose(0, 3, 1, 2).reshape(m * k, k * NODES)  # row j * K + y
    per_task = np.asarray(answer_matrix(tasks, workers, labels, n, m, k) @ table)
    per_task = per_task.reshape(n, k, NODES)
    seen = np.exp(per_task - per_task.max(axis=(1, 2), keepdims=True))  # (n, S, Q)
    joint = np.einsum("ic,cs,isq->icq", class_weights, world.lookalike, seen) * weight
    return joint / joint.sum(axis=(1, 2), keepdims=True), node


def _probit_of(confidence: np.ndarray, overconfidence: float) -> np.ndarray:
    """``Φ⁻¹(q)`` of the calibrated ``q`` behind each stated confidence (accurate near 0
    and 1)."""
    x = logit(np.clip(confidence, CLIP, 1.0 - CLIP)) / (1.0 + overconfidence)
    return np.where(x > 0, -ndtri(expit(-x)), ndtri(expit(x)))


def _neg_log_likelihood(x: np.ndarray, right: np.ndarray, wrong: np.ndarray,
                        conf: np.ndarray, has_conf: np.ndarray, u: np.ndarray,
                        free_rho: bool, k: int) -> float:
    """Minus the log-likelihood of one model's answers at the packed options ``x`` (``right``
    and ``wrong``: each answer's posterior mass (answers, nodes) on its class and the others)."""
    t, rho = x[0], np.tanh(x[1]) if free_rho else 0.0
    off = np.sqrt(1.0 - rho ** 2)
    total = 0.0
    plain = ~has_conf
    if plain.any():
        p = ndtr((t - rho * u) / off)
        lik = right[plain] @ p + wrong[plain] @ (1.0 - p) / (k - 1)
        total += float(np.log(np.maximum(lik, 1e-300)).sum())
    if has_conf.any():
        r, o = expit(x[2]), np.exp(x[3]) - 1.0
        g = _probit_of(conf[has_conf], o)
        s = (t - g * np.sqrt(1.0 - r ** 2)) / r ** 2  # the signal behind each confidence
        var_s = 1.0 / r ** 2 - rho ** 2
        gap = s[:, None] - rho * u[None, :]
        log_dens = -0.5 * np.log(2 * np.pi * var_s) - gap ** 2 / (2 * var_s)
        mean = rho * u[None, :] + (1.0 - rho ** 2) / var_s * gap
        var = (1.0 - rho ** 2) * (1.0 - (1.0 - rho ** 2) / var_s)
        p = ndtr((t - mean) / np.sqrt(var))
        inner = right[has_conf] * p + wrong[has_conf] * (1.0 - p) / (k - 1)
        log_jac = (0.5 * np.log(1.0 - r ** 2) - 2 * np.log(r) + 0.5 * g ** 2
                   + log_ndtr(g) + log_ndtr(-g) - np.log(1.0 + o))
        terms = log_dens + np.log(np.maximum(inner, 1e-300))
        top = terms.max(axis=1)
        total += float((top + np.log(np.exp(terms - top[:, None]).sum(axis=1))
                        + log_jac).sum())
    return -total


def calibration_error(confidence: np.ndarray, right: np.ndarray, bins: int = ECE_BINS
                      ) -> float | None:
    """Expected calibration error: over ``bins`` equal-width confidence bins, the share of
    answers in a bin times the gap between their mean confidence and their mean rightness
    (``right`` may be a probability); None without a confidence."""
    ok = np.isfinite(confidence)
    if not ok.any():
        return None
    c, y = confidence[ok], right[ok]
    b = np.minimum((c * bins).astype(np.int64), bins - 1)
    n = np.bincount(b, minlength=bins)
    gap = np.abs(np.bincount(b, c, bins) - np.bincount(b, y, bins))
    return float(gap.sum() / n.sum())


def implied_calibration_error(accuracy: float, insight: float, overconfidence: float) -> float:
    """The calibration error a classifier's options imply: ``E|c − P(right | c)|`` over its
    answers (bins of width 0), by Gauss–Hermite quadrature over the signal ``S ~ N(0, 1/r²)``
    (its reliability curve is ``P(right | c) = q``)."""
    node, weight = np.polynomial.hermite_e.hermegauss(64)
    r2 = insight ** 2
    q = ndtr((ndtri(accuracy) - r2 * node / insight) / np.sqrt(1.0 - r2))
    with np.errstate(divide="ignore"):
        c = expit((1.0 + overconfidence) * logit(q))
    return float(weight @ np.abs(c - q) / weight.sum())


def fit_machine(right: np.ndarray, wrong: np.ndarray, confidence: np.ndarray,
                u: np.ndarray, free_rho: bool, k: int) -> tuple[np.ndarray, float]:
    """One model's options by maximum likelihood, (accuracy, rho, insight, overconfidence)
    within the ranges ``[[machines]]`` accepts, and the log-likelihood."""
    has_conf = np.isfinite(confidence)
    share = float(np.clip(right.sum() / max(right.shape[0], 1), 0.01, 0.99))
    x0 = np.array([ndtri(share), 0.0, logit(0.7), 0.0])
    bounds = [(-6.0, 6.0), (-np.arctanh(RHO_MAX), np.arctanh(RHO_MAX)),
              tuple(logit(np.array(INSIGHT_RANGE))), tuple(np.log1p(OVERCONFIDENCE_RANGE))]
    n_free = 4 if has_conf.any() else 2
    conf = np.where(has_conf, confidence, 0.5)

    def objective(free: np.ndarray) -> float:
        return _neg_log_likelihood(np.concatenate([free, x0[n_free:]]), right, wrong, conf,
                                   has_conf, u, free_rho, k)

    with one_blas_thread():  # four numbers: threads would only wait for each other
        result = minimize(objective, x0[:n_free], method="L-BFGS-B", bounds=bounds[:n_free])
    x = np.concatenate([result.x, x0[n_free:]])
    options = np.array([ndtr(x[0]), np.tanh(x[1]) if free_rho else 0.0, expit(x[2]),
                        np.clip(np.exp(x[3]) - 1.0, *OVERCONFIDENCE_RANGE)])
    return options, -float(result.fun)


def fit_machines(answers: ModelAnswers, world: ConfusionFit, tasks: np.ndarray,
                 workers: np.ndarray, labels: np.ndarray, class_weights: np.ndarray,
                 reference: np.ndarray, against: str) -> tuple[MachineFit, ...]:
    """Every model of ``answers`` (re-indexed onto the humans' tasks and classes) fitted
    against the humans' ``world`` fitted to ``labels`` of ``workers`` on ``tasks``
    (``class_weights``: :func:`humans_posterior`'s), and its accuracy and ECE measured
    against each task's ``reference`` class (``against`` says what it is: the truth, or the
    humans' Dawid–Skene answer). A model left without answers (all on tasks no human
    labelled) is left out."""
    k = class_weights.shape[1]
    post, u = humans_posterior(world, tasks, workers, labels, class_weights)
    mass = post[answers.task]  # (answers, K, Q)
    on_label = np.take_along_axis(mass, np.maximum(answers.label, 0)[:, None, None], axis=1)
    right = np.where(answers.label[:, None] >= 0, on_label[:, 0, :], 0.0)
    wrong = mass.sum(axis=1) - right
    ref = reference[answers.task]
    measured = share_right(answers.model, answers.label, ref, len(answers.names))
    fits = []
    for m, name in enumerate(answers.names):  # a few models: one search each
        rows = answers.model == m
        if not rows.any():  # every answer on a task no human labelled: nothing to fit
            continue
        conf = answers.confidence[rows]
        options, loglik = fit_machine(right[rows], wrong[rows], conf, u, world.sigma > 0, k)
        known = ref[rows] >= 0
        ece = calibration_error(conf[known], (answers.label[rows] == ref[rows])[known]
                                .astype(np.float64))
        accuracy, rho, insight, overconfidence = (float(v) for v in options)
        fits.append(MachineFit(
            name, accuracy, rho, insight, overconfidence, answers=int(rows.sum()),
            with_confidence=int(np.isfinite(conf).sum()), repeats=int(answers.repeats[m]),
            changed=int(answers.changed[m]), log_likelihood=loglik,
            measured_accuracy=float(measured[m]), measured_ece=ece, against=against))
    return tuple(fits)
