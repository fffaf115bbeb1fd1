"""Ambiguous tasks that pull the crowd toward one wrong class (``[workers.confusion]`` keys
``pull``, ``pull_strengths``, ``pull_weights``: :mod:`~marketsim.workers.task_effects`),
fitted to a label file for ``marketsim calibrate``.

Why: shuffling each worker's real labels among its tasks of the same class (every worker keeps
its confusion counts, its errors become independent; ``benchmarks/label_permutations.py``)
makes Dawid–Skene worse at 3 labels a task (RTE 16.3 → 17.6 %, Dog 23.0 → 25.8 %) and far
better at full overlap (7.25 → 2.1 %, 15.7 → 6.5 %) — the too-steep curve of every twin so
far: the real crowds' errors are concentrated on a share of the tasks where many workers give
the *same* wrong class, and elsewhere the workers are right more often than their overall
rows say. A look-alike task (every worker answers from its row of the
wrong class) makes a task's errors all-or-nothing; difficulty (GLAD) makes them undirected.
Here a task of class ``c`` is, with probability ``pull[c][s]``, ambiguous toward ``s != c``,
with a strength ``a`` of its own: every worker answers ``s`` with probability ``a``, else from
their own row ``c`` — the perceived-class (latent item class) structure of Tian & Zhu
(2015, "Uncovering the latent structures of crowd labeling"), with Dawid & Skene's (1979)
per-worker matrices for the rest. The strengths are a fixed grid (:data:`STRENGTHS`) whose
weights are fitted (a nonparametric mixing distribution), so the whole per-task profile of
each task's labels, not its tail alone, sets how ambiguity is spread.

**The fit.** EM on the labels given each task's reference class (one-hot from a truth file,
else Dawid–Skene's posterior, as the other worlds): per task the responsibilities of "no
pull" and of each (class pulled toward, strength); each label's share drawn from its worker's
row (not the pull) gives the rows' expected counts, shrunk toward the crowd's pooled matrix
by :data:`PSEUDO_LABELS` labels' worth. A label's terms depend only on its worker and answer,
so each task's log-likelihood per component is one sparse product with a (worker, answer)
table (:func:`~marketsim.aggregation.confusion_fit.answer_matrix`): no loop over labels,
tasks or workers (a loop over the K classes in the M-step).

**Its size and strength on the design curve.** Like task difficulty
(:mod:`~marketsim.aggregation.curve_difficulty`), the likelihood underrates the errors a
task's labels share (a worker's row fitted on a few labels absorbs them): the pulls' share
is scaled by each factor of :data:`SCALES` (rows stay probabilities) and each task's chance
to escape its pull, ``1 - a``, divided by each factor of :data:`SHARPEN` (a stronger pull on
the same tasks: the errors that fall on the tasks independent errors already lose, which a
larger share alone spreads over more tasks), each world replayed on the file's own pairs.
The as-collected constraint applies to each (:func:`~marketsim.aggregation.curve_choice.collected_z`
on the pairs' full data, the real file's own pairs), and the :data:`SHORTLIST` eligible ones
nearest the real curve are ``calibrate``'s candidates (where none is eligible, the nearest):
the twin market differs from the pairs (who labels what; RTE's twin is about one spread more
optimistic as collected than its pairs), so the choice among them, and the constraint again,
is made on each one's twin like every other candidate's, whatever the number of task types.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from marketsim.aggregation._threads import row_blocks, run_parallel, threads_for
from marketsim.aggregation.confusion_fit import ConfusionFit, answer_matrix
from marketsim.aggregation.crowd_confusion import CrowdPrior, fit_crowd_prior
from marketsim.aggregation.curve_choice import (
    COLLECTED_Z,
    collected_z,
    curve_distance,
    replay_runs,
)
from marketsim.aggregation.design_curve import DesignCurve
from marketsim.aggregation.mapping import Mapper, mapped
from marketsim.aggregation.world_replay import pairs_curve
from marketsim.data.labels import LabelSet

#: The pull strengths a task may have (the chance every worker answers the pulled class).
STRENGTHS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.97)
#: Labels' worth of the crowd's pooled row each worker's row starts from.
PSEUDO_LABELS = 1.0
#: EM iterations at most, and the relative change of the log-likelihood that stops it.
MAX_ITERATIONS, TOLERANCE = 300, 1e-6
#: Largest ambiguous share of a class the fit allows.
MAX_SHARE = 0.9
#: Factors of the fitted pull share tried on the design curve (1: as the likelihood fits it;
#: ×2 was never nearest on RTE, Dog, Web or Bluebird's pairs, with or without sharpening,
#: and 0.8 is: a stronger pull on fewer tasks).
SCALES = (0.8, 1.0, 1.15, 1.3, 1.5, 1.75)
#: Factors dividing each strength's chance to escape the pull, ``1 - a`` (1: as fitted; 3
#: takes RTE's fitted 0.4–0.5 to 0.8–0.83, beyond which the pairs' curves stop changing:
#: the grid's strongest pulls already take nearly every label).
SHARPEN = (1.0, 1.5, 2.0, 3.0)
#: The worlds nearest the curve on the pairs that ``calibrate`` judges on their twins: the
#: twin market's curve differs from the pairs' by about a point (RTE, Dog), so the pairs
#: shortlist and the twins choose; three keeps the candidates judged on the design curve
#: (each three replicates of a twin, more for the finalists) a third more on RTE.
SHORTLIST = 3
#: Worlds within the as-collected constraint replayed on the whole curve at most: each is
#: ``REPLICATES × (1 + DRAWS × designs)`` Dawid–Skene fits (Web: about a second), the
#: screen as collected one a replicate; the grid's 48 on the whole curve took 43 CPU s on Web.
MAX_CURVES = 8
#: Draws of the world's answers on the real pairs per factor, and of k labels per draw.
REPLICATES, DRAWS = 3, 2
#: Tasks × classes² × strengths above which the world is not fitted (its arrays' size).
MAX_CELLS = 40_000_000
#: The world's name.
NAME = "per-worker confusion, ambiguous tasks pulling toward one class"


@dataclass(frozen=True)
class PullFit:
    """The fitted world: each worker's own rows (workers, K, K), the pull matrix (K, K; the
    diagonal the share of tasks without a pull), the strengths' weights, the
    log-likelihood and the EM iterations run."""

    rows: np.ndarray
    pull: np.ndarray
    weights: np.ndarray
    log_likelihood: float
    iterations: int
    #: The workers' expected answer counts per class drawn from their rows (workers, K, K).
    counts: np.ndarray
    #: The crowd's population of rows the rows were shrunk toward (:func:`crowd_shrunk_pulls`),
    #: or None: :data:`PSEUDO_LABELS` of the pooled rows.
    crowd: CrowdPrior | None = None


def _responsibilities(answers: Any, rows: np.ndarray, pull: np.ndarray,
                      weights: np.ndarray, classes: np.ndarray,
                      strengths: tuple[float, ...] = STRENGTHS,
                      parts: list[tuple[int, int, Any]] | None = None
                      ) -> tuple[np.ndarray, np.ndarray, float]:
    """E-step: per task the responsibility of "no pull" (tasks, K: by class) and of each
    (class, pulled class, strength of ``strengths``, weighted by ``weights``) (tasks, K, K,
    Q), and the log-likelihood. ``parts``: ``(start, stop, answers[start:stop])`` blocks of
    tasks run on threads (:func:`task_parts`); each task's numbers and the one sum of the
    log-likelihood over all tasks are those of a single block, bit for bit."""
    m, k = rows.shape[0], rows.shape[1]
    n = answers.shape[0]
    a = np.asarray(strengths, dtype=np.float64)
    eye = np.eye(k)
    log_rows = np.log(rows).transpose(0, 2, 1).reshape(m * k, k)
    by_answer = rows.transpose(0, 2, 1)[:, :, :, None, None]  # (j, y, c, 1, 1)
    table = np.log(a * eye[None, :, None, :, None] + (1.0 - a) * by_answer).reshape(
        m * k, k * k * a.size)
    share = np.clip(1.0 - np.diag(pull), 1e-12, 1.0)
    toward = np.where(eye > 0, 1e-300, pull) / share[:, None]
    log_share = np.log(share)[None, :, None, None]
    log_toward = np.log(np.maximum(toward, 1e-300))[None, :, :, None]
    clean_share = np.log(np.diag(pull))
    log_weights = np.log(np.maximum(weights, 1e-300))[None, None, None, :]
    p0, p1 = np.empty((n, k)), np.empty((n, k, k, a.size))
    per_task = np.empty(n)

    def block(start: int, stop: int, part: Any) -> None:
        clean = part @ log_rows  # (tasks, c)
        pulled = (part @ table).reshape(-1, k, k, a.size)
        log_class = np.log(np.maximum(classes[start:stop], 1e-300))
        log0 = log_class + clean_share + clean
        log1 = log_class[:, :, None, None] + log_share + log_toward + log_weights + pulled
        log1[:, eye > 0, :] = -np.inf
        top = np.maximum(log0.max(axis=1), log1.reshape(log1.shape[0], -1).max(axis=1))
        e0 = np.exp(log0 - top[:, None])
        e1 = np.exp(log1 - top[:, None, None, None])
        total = e0.sum(axis=1) + e1.reshape(e1.shape[0], -1).sum(axis=1)
        p0[start:stop] = e0 / total[:, None]
        p1[start:stop] = e1 / total[:, None, None, None]
        per_task[start:stop] = np.log(total) + top

    parts = parts or [(0, n, answers)]
    run_parallel([partial(block, *part) for part in parts], len(parts))
    return p0, p1, float(per_task.sum())


def task_parts(matrix: Any, n_labels: int) -> list[tuple[int, int, Any]]:
    """``(start, stop, matrix[start:stop])``: the row blocks a fit on ``n_labels`` labels
    splits a CSR ``matrix`` into for its threads (one block below
    :data:`~marketsim.aggregation._threads.MIN_LABELS`), each sliced once for every
    iteration; a row's product is the same in any block."""
    return [(start, stop, matrix[start:stop])
            for start, stop in row_blocks(matrix.shape[0], threads_for(n_labels))]


def _pair_sums(parts: list[tuple[int, int, Any]], x: np.ndarray) -> np.ndarray:
    """``by_pair @ x`` by the row blocks ``parts`` of ``by_pair`` (:func:`task_parts`), on
    threads: each row's sum is the same as the whole product's."""
    out = np.empty((parts[-1][1], x.shape[1]))

    def block(start: int, stop: int, part: Any) -> None:
        out[start:stop] = part @ x

    run_parallel([partial(block, *part) for part in parts], len(parts))
    return out


def fit_pulls(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
              classes: np.ndarray, n_workers: int, crowd: CrowdPrior | None = None
              ) -> PullFit:
    """The world with ambiguous tasks fitted by EM to the labels (task ``i``'s class
    distributed as ``classes[i]``, tasks × K; module docstring). On a large file the tasks'
    E-step and the (worker, answer) sums run on threads
    (:mod:`~marketsim.aggregation._threads`), with the same numbers."""
    n, k = classes.shape
    answers = answer_matrix(tasks, workers, labels, n, n_workers, k)
    by_pair = answers.T.tocsr()  # (worker, answer) × tasks: sums over each pair's labels
    parts, pair_parts = task_parts(answers, tasks.size), task_parts(by_pair, tasks.size)
    a = np.asarray(STRENGTHS)
    counts = _row_counts(_pair_sums(pair_parts, classes), np.zeros((n_workers * k, k)))
    rows = _shrunk(counts, crowd)
    pull = np.full((k, k), 0.1 / max(k - 1, 1))
    np.fill_diagonal(pull, 0.9)
    weights = np.full(a.size, 1.0 / a.size)
    previous, iterations = -np.inf, 0
    is_answer = np.eye(k)[None, :, None, :, None]  # (1, y, 1, s, 1)
    while iterations < MAX_ITERATIONS:
        iterations += 1
        clean, pulled, loglik = _responsibilities(answers, rows, pull, weights, classes,
                                                  parts=parts)
        per_class = clean.sum(axis=0) + pulled.sum(axis=(0, 2, 3))
        toward = pulled.sum(axis=(0, 3))
        share = np.minimum(toward.sum(axis=1) / np.maximum(per_class, 1e-300), MAX_SHARE)
        pull = np.diag(1.0 - share) + share[:, None] * toward / np.maximum(
            toward.sum(axis=1, keepdims=True), 1e-300)
        weights = pulled.sum(axis=(0, 1, 2)) + 1e-9
        weights /= weights.sum()
        # each label's chance to come from its worker's row (not the pull) depends on its
        # (worker, answer) only: one sparse product sums the tasks' responsibilities per pair
        own = rows.transpose(0, 2, 1)[:, :, :, None, None]  # (j, y, c, 1, 1)
        from_row = ((1.0 - a) * own / (a * is_answer + (1.0 - a) * own)).reshape(
            n_workers * k, k, k, a.size)
        per_pair = _pair_sums(pair_parts, pulled.reshape(n, -1)).reshape(
            n_workers * k, k, k, a.size)
        counts = _row_counts(_pair_sums(pair_parts, clean), (per_pair * from_row).sum(axis=(2, 3)))
        rows = _shrunk(counts, crowd)
        if loglik - previous <= TOLERANCE * abs(loglik):
            break
        previous = loglik
    return PullFit(rows, pull, weights, loglik, iterations, counts, crowd)


def crowd_shrunk_pulls(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                       classes: np.ndarray, n_workers: int, first: PullFit) -> PullFit:
    """The pulls refitted with each worker's rows the posterior mean of a fitted population
    instead of :data:`PSEUDO_LABELS` of the pooled rows: the crowd's Dirichlet population
    (:func:`~marketsim.aggregation.crowd_confusion.fit_crowd_prior`, empirical Bayes, as the
    crowd-shrunk worlds) of ``first``'s expected counts, then the EM again with it (two-stage
    empirical Bayes). Rows fitted on a few labels each spread the crowd wider than it is, and
    Dawid–Skene profits from telling them apart: Dog's twin at 5 and 7 labels per task 1.5–2
    points better than the real crowd with one label's worth of shrinkage."""
    prior = fit_crowd_prior(first.counts)
    return fit_pulls(tasks, workers, labels, classes, n_workers, prior)


def _row_counts(clean: np.ndarray, pulled: np.ndarray) -> np.ndarray:
    """(workers, K, K): each (worker, answer)'s expected row draws per class (rows ``j * K +
    y``, columns ``c``; without and with a pull) as each worker's row ``c`` at answer ``y``."""
    counts = np.asarray(clean + pulled)
    m = counts.shape[0] // counts.shape[1]
    return np.asarray(counts.reshape(m, counts.shape[1], -1).transpose(0, 2, 1))


def _shrunk(counts: np.ndarray, crowd: CrowdPrior | None = None) -> np.ndarray:
    """Each worker's rows from its expected counts and :data:`PSEUDO_LABELS` of the crowd's
    pooled rows, or (``crowd``) the posterior mean of the crowd's population."""
    if crowd is not None:
        return crowd.shrunk(counts)
    pooled = counts.sum(axis=0) + 1e-3
    pooled /= pooled.sum(axis=1, keepdims=True)
    rows = counts + PSEUDO_LABELS * pooled[None]
    return np.asarray(rows / rows.sum(axis=2, keepdims=True))


def scaled_pull(pull: np.ndarray, scale: float) -> np.ndarray:
    """The pull matrix with each class's ambiguous share times ``scale`` (at most
    :data:`MAX_SHARE`)."""
    k = pull.shape[0]
    share = 1.0 - np.diag(pull)
    scaled = np.minimum(share * scale, MAX_SHARE)
    toward = pull * (1.0 - np.eye(k)) / np.maximum(share, 1e-300)[:, None]
    return np.asarray(np.diag(1.0 - scaled) + scaled[:, None] * toward)


def world_name(fit: PullFit) -> str:
    """:data:`NAME`, or for rows shrunk toward the crowd's population its own name."""
    if fit.crowd is None:
        return NAME
    return (f"crowd-shrunk confusion (concentration {fit.crowd.concentration:.3g}), "
            "ambiguous tasks pulling toward one class")


def sharpened(strengths: np.ndarray, factor: float) -> np.ndarray:
    """The pull strengths with each one's chance to escape the pull, ``1 - a``, divided by
    ``factor`` (1: as they are)."""
    return np.asarray(1.0 - (1.0 - np.asarray(strengths, dtype=np.float64)) / factor)


def as_world(fit: PullFit, pull: np.ndarray, n_labels: int, name: str,
             sharpen: float = 1.0) -> ConfusionFit:
    """The fitted rows and ``pull`` as a one-matrix world (its BIC with every worker's
    K × (K - 1) free numbers, the pull matrix's and the strengths' weights), the strengths
    :func:`sharpened` by ``sharpen``."""
    k, m = pull.shape[0], fit.rows.shape[0]
    n_params = (m + 1) * k * (k - 1) + len(STRENGTHS) - 1
    bic = -2.0 * fit.log_likelihood + n_params * np.log(max(n_labels, 1))
    kept = fit.weights > 1e-4  # strengths practically never drawn are left out
    strengths = tuple(float(v) for v in sharpened(np.asarray(STRENGTHS)[kept], sharpen))
    weights = tuple(float(v) for v in fit.weights[kept] / fit.weights[kept].sum())
    return ConfusionFit(fit.rows, np.eye(k), 0.0, fit.log_likelihood, n_params, float(bic),
                        name, on_curve=True, pull=pull, pull_strengths=strengths,
                        pull_weights=weights)


def pull_worlds(data: LabelSet, weights: np.ndarray, classes: np.ndarray, known: np.ndarray,
                real: DesignCurve, seed: int = 0, advance: Callable[[], object] | None = None,
                mapper: Mapper | None = None) -> tuple[ConfusionFit, ...]:
    """``calibrate``'s candidates: the world of :func:`fit_pulls`, task ``i`` of class
    ``classes[i]``, with its share scaled and its strengths sharpened on the file's pairs —
    the :data:`SHORTLIST` nearest the real curve of those that reproduce the as-collected
    Dawid–Skene error, else the nearest (module docstring); none where the file is too large
    for the fit's arrays (:data:`MAX_CELLS`) or the fit finds no ambiguous task.
    ``advance``: called once; ``mapper``: the replays' (:func:`shortlist`)."""
    k = weights.shape[1]
    worlds: tuple[ConfusionFit, ...] = ()
    if data.n_tasks * k * k * len(STRENGTHS) <= MAX_CELLS:
        fit = fit_pulls(data.tasks, data.workers, data.labels, weights, data.n_workers)
        if not np.allclose(np.diag(fit.pull), 1.0, atol=1e-6):
            shrunk = crowd_shrunk_pulls(data.tasks, data.workers, data.labels, weights,
                                        data.n_workers, fit)
            answers = answer_matrix(data.tasks, data.workers, data.labels, data.n_tasks,
                                    data.n_workers, k)
            worlds = tuple(with_own_likelihood(world, answers, weights, data.n_labels)
                           for world in shortlist((fit, shrunk), data, classes, known, real,
                                                  seed, mapper))
    if advance is not None:
        advance()
    return worlds


def _collected(world: ConfusionFit, data: LabelSet, classes: np.ndarray,
               judged: np.ndarray | None, real: DesignCurve, replicates: int, seed: int,
               n_judged: int) -> float:
    """``|z|`` of ``world``'s Dawid–Skene error as collected, replayed on ``data``'s pairs."""
    return abs(collected_z(real, pairs_curve(world, data, classes, judged, (), replicates, 1,
                                             seed), n_judged))


def _distance(world: ConfusionFit, data: LabelSet, classes: np.ndarray,
              judged: np.ndarray | None, real: DesignCurve, replicates: int, draws: int,
              seed: int) -> float:
    """``world``'s distance to ``real``, replayed on ``data``'s pairs."""
    return curve_distance(real, pairs_curve(world, data, classes, judged, real.ks, replicates,
                                            draws, seed))


def shortlist(fits: tuple[PullFit, ...], data: LabelSet, classes: np.ndarray,
              known: np.ndarray, real: DesignCurve, seed: int = 0,
              mapper: Mapper | None = None) -> tuple[ConfusionFit, ...]:
    """The worlds of :func:`pull_worlds` from the fits: every (fit, scale, sharpening) of
    :data:`SCALES` × :data:`SHARPEN` replayed on the pairs as collected (one Dawid–Skene fit a
    replicate); of those within the as-collected constraint, the :data:`MAX_CURVES` nearest
    as collected (then nearest the fit as it is: without a truth every one is) replayed on the
    whole curve, and the :data:`SHORTLIST` nearest it kept, nearest first; where none is
    within the constraint, the one nearest as collected (as ``calibrate``'s choice falls
    back). Each replay is one call of ``mapper`` (each seeded by ``seed`` alone: the same
    values in any process)."""
    judged = known if real.against == "truth" else None
    n_judged = data.n_tasks if judged is None else int(judged.sum())
    replicates, draws = replay_runs(n_judged, REPLICATES, DRAWS)
    grid = sorted(((fit, s, f) for fit in fits for s in SCALES for f in SHARPEN),
                  key=lambda c: abs(np.log(c[1])) + abs(np.log(c[2])))
    worlds = [as_world(fit, scaled_pull(fit.pull, s), data.n_labels,
                       f"{world_name(fit)}, share x{s:g} and strength x{f:g} on the design "
                       "curve", f) for fit, s, f in grid]
    collected = np.asarray(mapped(mapper, _collected, [
        (world, data, classes, judged, real, replicates, seed, n_judged) for world in worlds]))
    order = np.argsort(collected, kind="stable")
    eligible = [int(i) for i in order if collected[i] <= COLLECTED_Z][:MAX_CURVES]
    if not eligible:
        return (worlds[int(order[0])],)
    distances = mapped(mapper, _distance, [
        (worlds[i], data, classes, judged, real, replicates, draws, seed) for i in eligible])
    return tuple(worlds[eligible[int(j)]]
                 for j in np.argsort(distances, kind="stable")[:SHORTLIST])


def with_own_likelihood(world: ConfusionFit, answers: np.ndarray, classes: np.ndarray,
                        n_labels: int) -> ConfusionFit:
    """``world`` with the log-likelihood (and BIC) of its own scaled share and sharpened
    strengths, not the unscaled fit's: the scenario header and ``.fit.json`` list every
    candidate's, and worlds scaled differently are different worlds. ``answers``: the file's
    (task, worker-answer) matrix; task ``i``'s class distributed as ``classes[i]``."""
    if world.pull is None:
        raise ValueError(f"{world.name!r} has no pull matrix")
    log_lik = _responsibilities(answers, world.confusion, world.pull,
                                np.asarray(world.pull_weights), classes,
                                tuple(world.pull_strengths))[2]
    bic = -2.0 * log_lik + world.n_params * np.log(max(n_labels, 1))
    return replace(world, log_likelihood=log_lik, bic=float(bic))
