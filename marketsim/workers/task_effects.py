"""Look-alike tasks and task difficulty on top of per-worker confusion matrices
(``[workers.confusion]`` and ``[workers.communities]`` keys ``lookalike`` and ``sigma``,
declared once here by :class:`TaskEffects`): what
makes real errors shared.

Task ``i`` of true class ``c_i`` looks like class ``s_i ~ lookalike[c_i]`` to every worker, and
has inverse difficulty ``beta_i`` (``log beta_i ~ N(0, sigma^2)``); worker ``j`` answers ``l``
with probability ``softmax(beta_i * log pi_j[s_i])[l]``, i.e. ``pi_j[s_i, l]^beta_i``
normalised. A task may also be *ambiguous* (``pull``): of true class ``c_i`` it pulls toward
class ``p_i ~ pull[c_i]`` with a strength ``a_i`` of its own (``pull_strengths``, drawn with
``pull_weights``), and every worker answers ``p_i`` with probability ``a_i``, else as above
(the perceived-class model: Tian & Zhu 2015's latent item classes, an item-level share of
the crowd seeing one wrong class). All are drawn once per replicate, after the matrices
(shared by every arm); task types
(:mod:`~marketsim.workers.task_types`) then choose which of the worker's matrices
``pi_j`` a task is answered from. The world's ``confusion`` is what a worker does on average
over the tasks, ``sum_s lookalike[c, s] E_beta[softmax(beta * log pi_j[s])]`` (averaged over
the types of class ``c``, and the pulls; what the recorder compares estimates with).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

import numpy as np
from pydantic import model_validator
from scipy.special import ndtri

from marketsim.options import F
from marketsim.tables import FloatRows, Floats, KeyProblem, Table
from marketsim.workers.base import Crowd, WorkerModel, World
from marketsim.workers.draws import accuracy, features_then_graph
from marketsim.workers.dynamics import shifted
from marketsim.workers.task_types import TaskTypes, draw_types, mean_over_types
from marketsim.workers.words import pct

#: How far a row of probabilities may sum from 1.
ROW_TOLERANCE = 1e-6


def check_stochastic(key: str, rows: tuple[tuple[float, ...], ...]) -> None:
    """Raise KeyProblem unless every row holds probabilities summing to 1."""
    for row in rows:
        if any(not 0.0 <= v <= 1.0 for v in row):
            raise KeyProblem(key, f"entries must be probabilities in [0, 1], got {list(row)}")
        if abs(sum(row) - 1.0) > ROW_TOLERANCE:
            raise KeyProblem(key, f"rows must sum to 1, got {list(row)} (sum {sum(row):.9g})")


class TaskEffects(Table):
    """What makes real errors shared, for the confusion-matrix models (declared once here,
    read by ``[workers.confusion]`` and ``[workers.communities]``): tasks that look like
    another class to the whole crowd, and tasks of different difficulty. Both are off by
    default (every task looks like its class and is equally hard)."""

    sigma: float = F(0.0, "task difficulty: log βᵢ ~ N(0, sigma²) and worker j answers l with "
                     "probability ∝ π_j[s, l]^βᵢ (βᵢ → 0 a guess); 0 = equally hard tasks",
                     ge=0, le=10)
    lookalike: FloatRows | None = F(
        None, "K×K rows summing to 1: a task of true class c looks like class s to every "
        "worker with probability lookalike[c][s] (workers answer from row s)",
        shown="the identity")
    lookalike_follow: float = F(
        1.0, "the chance each label of a look-alike task follows the class it looks like "
        "(else the worker answers from their row of the true class: errors partly shared, "
        "partly each worker's own); 1 = every label", gt=0, le=1)

    pull: FloatRows | None = F(
        None, "K×K rows summing to 1: a task of true class c pulls every worker toward class "
        "s ≠ c with probability pull[c][s] (the diagonal: no pull); each worker then answers s "
        "with the task's pull strength, else from their own row", shown="no pull")
    pull_strengths: Floats | None = F(
        None, "the pull strengths an ambiguous task draws from (each in (0, 1]: the chance "
        "every worker answers the pulled class)", shown="none")
    pull_weights: Floats | None = F(
        None, "the probability of each of pull_strengths (summing to 1)", shown="none")

    @model_validator(mode="after")
    def _lookalike_rows(self) -> Self:
        if self.lookalike is not None:
            check_stochastic("lookalike", self.lookalike)
        elif self.lookalike_follow < 1.0:
            raise KeyProblem("lookalike_follow", "must be given with lookalike (the classes "
                             "a label may follow)")
        strengths, weights = self.pull_strengths or (), self.pull_weights or ()
        if self.pull is not None:
            check_stochastic("pull", self.pull)
            if not strengths:
                raise KeyProblem("pull_strengths", "must be given with pull (e.g. [0.5])")
        elif strengths or weights:
            raise KeyProblem("pull", "must be given with pull_strengths and pull_weights")
        if len(weights) != len(strengths):
            raise KeyProblem("pull_weights", f"must have one weight per pull strength "
                             f"({len(strengths)}), got {len(weights)}")
        if any(not 0.0 < a <= 1.0 for a in strengths):
            raise KeyProblem("pull_strengths", f"must be in (0, 1], got {list(strengths)}")
        if weights:
            check_stochastic("pull_weights", (weights,))
        return self

    @property
    def has_effects(self) -> bool:
        """Difficulty, look-alikes or pulls are asked for (else answers come from the rows as
        they are, with the random draws of the plain model)."""
        return self.sigma > 0 or self.lookalike is not None or self.pull is not None

    def lookalike_problem(self, k: int) -> tuple[str, str] | None:
        """(key, sentence) when ``lookalike`` or ``pull`` is not K×K (K = ``k``,
        tasks.classes)."""
        for key, rows in (("lookalike", self.lookalike), ("pull", self.pull)):
            if rows is not None and (len(rows) != k or any(len(r) != k for r in rows)):
                return key, f"must be {k}×{k} (tasks.classes rows of {k} numbers)"
        return None

    def words(self) -> str:
        """Look-alike tasks and task difficulty in words for the Setup ("" when off)."""
        out = ""
        if self.lookalike:
            rows = "; ".join(f"class {c + 1} as " + ", ".join(
                f"class {s + 1} {pct(p)}" for s, p in enumerate(row) if p) for c, row in
                enumerate(self.lookalike))
            out += (" Look-alike tasks: a task of true class c looks like class s to every "
                    f"worker, who then answers from row s of their matrix, with probability "
                    f"({rows}).")
            if self.lookalike_follow < 1.0:
                out += (f" Each label follows the class the task looks like with probability "
                        f"{pct(self.lookalike_follow)}, else the worker's row of the true "
                        "class.")
        if self.sigma:
            out += (f" Tasks differ in difficulty: each task's β is drawn once with log β ~ "
                    f"N(0, sigma²), sigma = {self.sigma:g}, and a worker answers l with "
                    "probability proportional to their matrix entry to the power β (β near "
                    "0: a guess).")
        if self.pull:
            rows = "; ".join(f"class {c + 1} toward " + ", ".join(
                f"class {s + 1} {pct(p)}" for s, p in enumerate(row) if p and s != c)
                for c, row in enumerate(self.pull) if row[c] < 1.0)
            strengths = ", ".join(f"{a:g} ({pct(w)})" for a, w in zip(
                self.pull_strengths or (), self.pull_weights or (), strict=True))
            out += (f" Ambiguous tasks pull every worker toward one wrong class ({rows}); "
                    f"each worker answers it with the task's pull strength ({strengths}), "
                    "else from their own row.")
        return out


#: Quantile points of the difficulty distribution a worker's mean matrix averages over.
QUANTILES = 64
#: Probabilities are kept this far above 0 before their logarithm is tempered.
FLOOR = 1e-12


@dataclass(frozen=True)
class EffectParams:
    """A world's task effects: the class each task looks like (n_tasks,), its inverse
    difficulty (n_tasks,), the workers' own matrices per task type (types, n_workers, K, K;
    one type without task types), each task's type (n_tasks,), the class it pulls toward
    and the strength of the pull (n_tasks,; None without pulls), and, where a label follows
    the look-alike class only with probability ``follow`` < 1, each task's true class
    (``own``, n_tasks,: the row a label answers from otherwise)."""

    looks: np.ndarray
    beta: np.ndarray
    matrices: np.ndarray
    types: np.ndarray
    pulled: np.ndarray | None = None
    strength: np.ndarray | None = None
    own: np.ndarray | None = None
    follow: float = 1.0

    def rows(self, tasks: np.ndarray, workers: np.ndarray) -> np.ndarray:
        """The answer probabilities of the pairs (``tasks[l]``, ``workers[l]``): each worker's
        row of the task's look-alike class tempered by its difficulty (with probability
        ``follow``, else the row of its true class), mixed with the pulled class by the
        task's pull strength (labels, K)."""
        rows = tempered(self.matrices[self.types[tasks], workers, self.looks[tasks]],
                        self.beta[tasks])
        if self.own is not None and self.follow < 1.0:
            own = tempered(self.matrices[self.types[tasks], workers, self.own[tasks]],
                           self.beta[tasks])
            rows = self.follow * rows + (1.0 - self.follow) * own
        if self.pulled is None or self.strength is None:
            return rows
        a = self.strength[tasks][:, None]
        return np.asarray((1.0 - a) * rows + a * np.eye(rows.shape[1])[self.pulled[tasks]])


def lookalike_matrix(spec: TaskEffects, k: int) -> np.ndarray:
    """The look-alike matrix (the identity when none is given)."""
    return np.eye(k) if spec.lookalike is None else np.asarray(spec.lookalike, dtype=np.float64)


def tempered(matrices: np.ndarray, beta: np.ndarray | float) -> np.ndarray:
    """``softmax(beta * log matrices)`` over the last axis (``beta`` broadcast over rows)."""
    logs = np.log(np.maximum(matrices, FLOOR))
    return softmax_in_place(np.asarray(beta)[..., None] * logs)


def softmax_in_place(x: np.ndarray) -> np.ndarray:
    """``scipy.special.softmax(x, axis=-1)`` computed in ``x`` itself: the same operations
    in the same order (the same bits) without its three temporaries of ``x``'s size, which
    the exact-k sampler's million-label draws spent a third of their time allocating."""
    x -= x.max(axis=-1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=-1, keepdims=True)
    return x


def mean_confusion(matrices: np.ndarray, spec: TaskEffects) -> np.ndarray:
    """Each worker's answer probabilities averaged over look-alikes, difficulty and pulls,
    (n_workers, K, K)."""
    k = matrices.shape[1]
    u = (np.arange(QUANTILES) + 0.5) / QUANTILES
    beta = np.exp(spec.sigma * ndtri(u)) if spec.sigma > 0 else np.ones(1)
    over_beta = np.mean([tempered(matrices, b) for b in beta], axis=0)  # (m, S, L)
    look = lookalike_matrix(spec, k)  # a label follows it with probability lookalike_follow
    look = spec.lookalike_follow * look + (1.0 - spec.lookalike_follow) * np.eye(k)
    mean = np.einsum("cs,msl->mcl", look, over_beta)
    if spec.pull is None:
        return mean
    toward = np.asarray(spec.pull, dtype=np.float64) * (1.0 - np.eye(k))  # (c, s): s != c
    strength = float(np.dot(spec.pull_strengths or (), spec.pull_weights or ()))
    return np.asarray(mean * (1.0 - strength * toward.sum(axis=1))[None, :, None]
                      + strength * toward[None])


def draw_pulls(spec: TaskEffects, truth: np.ndarray, k: int, rng: np.random.Generator
               ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Each task's pulled class (its own class: no pull) and pull strength (0 where it pulls
    to its own class); None, None and no draw without ``pull``."""
    if spec.pull is None:
        return None, None
    cumulative = np.cumsum(np.asarray(spec.pull, dtype=np.float64)[truth], axis=1)
    pulled = np.minimum((cumulative <= rng.random((truth.size, 1))).sum(axis=1), k - 1)
    chosen = (np.cumsum(spec.pull_weights or ()) <= rng.random((truth.size, 1))).sum(axis=1)
    strengths = np.asarray(spec.pull_strengths or (), dtype=np.float64)
    strength = strengths[np.minimum(chosen, strengths.size - 1)]
    return pulled.astype(np.int64), np.where(pulled == truth, 0.0, strength)


def draw_effects(spec: TaskEffects, truth: np.ndarray, k: int, rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Each task's look-alike class and inverse difficulty (a draw only for the effects
    asked for)."""
    looks = truth.copy()
    if spec.lookalike is not None:
        cumulative = np.cumsum(lookalike_matrix(spec, k)[truth], axis=1)
        looks = (cumulative <= rng.random((truth.size, 1))).sum(axis=1)
        looks = np.minimum(looks, k - 1).astype(np.int64)
    beta = np.exp(spec.sigma * rng.standard_normal(truth.size)) if spec.sigma > 0 \
        else np.ones(truth.size)
    return looks, beta


def draw_item_effects(params: EffectParams, spec: TaskEffects, task_types: TaskTypes | None,
                      truth: np.ndarray, k: int, rng: np.random.Generator) -> EffectParams:
    """The effects of other items of classes ``truth`` (gold questions) in the world of
    ``params``: their own look-alike classes and difficulties, then their types, drawn as the
    tasks' are (:func:`draw_effects`, :func:`~marketsim.workers.task_types.
    draw_types`), answered from the same workers' matrices."""
    looks, beta = draw_effects(spec, truth, k, rng)
    types = (np.zeros(truth.size, dtype=np.int64) if task_types is None
             else draw_types(task_types, truth, rng))
    return EffectParams(looks, beta, params.matrices, types, *draw_pulls(spec, truth, k, rng),
                        own=truth, follow=spec.lookalike_follow)


class EffectAnswers:
    """Per-label answers with task effects: one uniform draw inverted through the worker's
    row of the task's look-alike class, tempered by the task's difficulty."""

    def __init__(self, params: EffectParams, rng: np.random.Generator,
                 truth: np.ndarray) -> None:
        self.truth = truth
        self.params = params
        self.logs = np.log(np.maximum(params.matrices, FLOOR))
        self.looks = params.looks
        self.beta = params.beta
        self.types = params.types
        self.rng = rng

    def answer(self, task: int, worker: int) -> tuple[int, float | None]:
        """The worker's label for ``task`` (no score)."""
        return self._draw(self._probs(task, worker))

    def answer_shifted(self, task: int, worker: int, shift: float) -> tuple[int, float | None]:
        """The label with the logit of the true class's probability shifted by ``shift``, the
        other classes scaled to keep their proportions (``[workers.dynamics]``; the same one
        draw as :meth:`answer`)."""
        probs = self._probs(task, worker)
        truth = int(self.truth[task])
        p0 = float(probs[truth])
        p = shifted(p0, shift)
        if p != p0:
            probs = probs * ((1.0 - p) / (1.0 - p0))
            probs[truth] = p
        return self._draw(probs)

    def answer_block(self, tasks: np.ndarray, workers: np.ndarray) -> np.ndarray:
        """The labels of many (task, worker) pairs at once, each one uniform draw inverted
        through its row (as :meth:`answer` draws one; the exact-k design sampler's path)."""
        if self.params.pulled is not None or self.params.follow < 1.0:
            rows = self.params.rows(tasks, workers)
        else:
            logs = self.logs[self.types[tasks], workers, self.looks[tasks]]
            rows = softmax_in_place(self.beta[tasks][:, None] * logs)
        u = self.rng.random((tasks.size, 1))
        k = rows.shape[1]
        return np.minimum((np.cumsum(rows, axis=1) <= u).sum(axis=1), k - 1).astype(np.int64)

    def _probs(self, task: int, worker: int) -> np.ndarray:
        if self.params.follow < 1.0:
            return np.asarray(self.params.rows(np.array([task]), np.array([worker]))[0])
        row = self.beta[task] * self.logs[self.types[task], worker, self.looks[task]]
        p = np.exp(row - row.max())
        p = p / p.sum()
        if self.params.pulled is not None and self.params.strength is not None:
            a = float(self.params.strength[task])
            p = (1.0 - a) * p
            p[int(self.params.pulled[task])] += a
        return p

    def _draw(self, probs: np.ndarray) -> tuple[int, float | None]:
        cumulative = np.cumsum(probs)
        label = min(int(np.searchsorted(cumulative, self.rng.random(), side="right")),
                    len(cumulative) - 1)
        return label, None


def draw_effect_world(model: WorkerModel, crowd: Crowd, spec: TaskEffects,
                      matrices: np.ndarray, truth: np.ndarray, rng: np.random.Generator,
                      initial: str, initial_rng: np.random.Generator | None,
                      task_types: TaskTypes | None = None) -> World:
    """The rest of a world whose classes and matrices are drawn: the task effects, the task
    types (``task_types``: their matrices replace ``matrices``), features, the initial graph
    and its answers (vectorised)."""
    k = crowd.tasks.classes
    prior = np.asarray(crowd.tasks.prior)
    looks, beta = draw_effects(spec, truth, k, rng)
    if task_types is None:
        stack, types = matrices[None], np.zeros(truth.size, dtype=np.int64)
        mean = mean_confusion(matrices, spec)
    else:
        stack, types = task_types.matrices, draw_types(task_types, truth, rng)
        mean = mean_over_types(task_types, np.stack([mean_confusion(m, spec) for m in stack]))
    pulled, strength = draw_pulls(spec, truth, k, rng)
    params = EffectParams(looks, beta, stack, types, pulled, strength, own=truth,
                          follow=spec.lookalike_follow)
    drawn = features_then_graph(crowd, truth, rng, initial, initial_rng)
    tasks, workers = drawn.tasks, drawn.workers
    rows = params.rows(tasks, workers)
    u = drawn.rng.random((tasks.size, 1))
    labels = np.minimum((np.cumsum(rows, axis=1) <= u).sum(axis=1), k - 1).astype(np.int64)
    return World(truth, mean, accuracy(mean, prior), tasks, workers, labels, model,
                 params=params, features=drawn.features, feature_proba=drawn.feature_proba)
