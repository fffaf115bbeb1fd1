"""Look-alike tasks and task difficulty on top of per-worker confusion matrices
(``[workers.confusion]`` and ``[workers.communities]`` keys ``lookalike`` and ``sigma``,
declared once here by :class:`TaskEffects`): what
makes real errors shared.

Task ``i`` of true class ``c_i`` looks like class ``s_i ~ lookalike[c_i]`` to every worker, and
has inverse difficulty ``beta_i`` (``log beta_i ~ N(0, sigma^2)``); worker ``j`` answers ``l``
with probability ``softmax(beta_i * log pi_j[s_i])[l]``, i.e. ``pi_j[s_i, l]^beta_i``
normalised. Both are drawn once per replicate, after the matrices (shared by every arm); task types
(:mod:`~marketsim.workers.task_types`) then choose which of the worker's matrices
``pi_j`` a task is answered from. The world's ``confusion`` is what a worker does on average
over the tasks, ``sum_s lookalike[c, s] E_beta[softmax(beta * log pi_j[s])]`` (averaged over
the types of class ``c``; what the recorder compares estimates with).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

import numpy as np
from pydantic import model_validator
from scipy.special import ndtri, softmax

from marketsim.options import F
from marketsim.tables import FloatRows, KeyProblem, Table
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

    @model_validator(mode="after")
    def _lookalike_rows(self) -> Self:
        if self.lookalike is not None:
            check_stochastic("lookalike", self.lookalike)
        return self

    @property
    def has_effects(self) -> bool:
        """Difficulty or look-alikes are asked for (else answers come from the rows as they
        are, with the random draws of the plain model)."""
        return self.sigma > 0 or self.lookalike is not None

    def lookalike_problem(self, k: int) -> tuple[str, str] | None:
        """(key, sentence) when ``lookalike`` is not K×K (K = ``k``, tasks.classes)."""
        rows = self.lookalike
        if rows is not None and (len(rows) != k or any(len(r) != k for r in rows)):
            return "lookalike", f"must be {k}×{k} (tasks.classes rows of {k} numbers)"
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
        if self.sigma:
            out += (f" Tasks differ in difficulty: each task's β is drawn once with log β ~ "
                    f"N(0, sigma²), sigma = {self.sigma:g}, and a worker answers l with "
                    "probability proportional to their matrix entry to the power β (β near "
                    "0: a guess).")
        return out


#: Quantile points of the difficulty distribution a worker's mean matrix averages over.
QUANTILES = 64
#: Probabilities are kept this far above 0 before their logarithm is tempered.
FLOOR = 1e-12


@dataclass(frozen=True)
class EffectParams:
    """A world's task effects: the class each task looks like (n_tasks,), its inverse
    difficulty (n_tasks,), the workers' own matrices per task type (types, n_workers, K, K;
    one type without task types) and each task's type (n_tasks,)."""

    looks: np.ndarray
    beta: np.ndarray
    matrices: np.ndarray
    types: np.ndarray


def lookalike_matrix(spec: TaskEffects, k: int) -> np.ndarray:
    """The look-alike matrix (the identity when none is given)."""
    return np.eye(k) if spec.lookalike is None else np.asarray(spec.lookalike, dtype=np.float64)


def tempered(matrices: np.ndarray, beta: np.ndarray | float) -> np.ndarray:
    """``softmax(beta * log matrices)`` over the last axis (``beta`` broadcast over rows)."""
    logs = np.log(np.maximum(matrices, FLOOR))
    return np.asarray(softmax(np.asarray(beta)[..., None] * logs, axis=-1))


def mean_confusion(matrices: np.ndarray, spec: TaskEffects) -> np.ndarray:
    """Each worker's answer probabilities averaged over look-alikes and difficulty,
    (n_workers, K, K)."""
    k = matrices.shape[1]
    u = (np.arange(QUANTILES) + 0.5) / QUANTILES
    beta = np.exp(spec.sigma * ndtri(u)) if spec.sigma > 0 else np.ones(1)
    over_beta = np.mean([tempered(matrices, b) for b in beta], axis=0)  # (m, S, L)
    return np.einsum("cs,msl->mcl", lookalike_matrix(spec, k), over_beta)


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
    return EffectParams(looks, beta, params.matrices, types)


class EffectAnswers:
    """Per-label answers with task effects: one uniform draw inverted through the worker's
    row of the task's look-alike class, tempered by the task's difficulty."""

    def __init__(self, params: EffectParams, rng: np.random.Generator,
                 truth: np.ndarray) -> None:
        self.truth = truth
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
        logs = self.logs[self.types[tasks], workers, self.looks[tasks]]
        rows = np.asarray(softmax(self.beta[tasks][:, None] * logs, axis=-1))
        u = self.rng.random((tasks.size, 1))
        k = rows.shape[1]
        return np.minimum((np.cumsum(rows, axis=1) <= u).sum(axis=1), k - 1).astype(np.int64)

    def _probs(self, task: int, worker: int) -> np.ndarray:
        row = self.beta[task] * self.logs[self.types[task], worker, self.looks[task]]
        p = np.exp(row - row.max())
        return p / p.sum()

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
    drawn = features_then_graph(crowd, truth, rng, initial, initial_rng)
    tasks, workers = drawn.tasks, drawn.workers
    rows = tempered(stack[types[tasks], workers, looks[tasks]], beta[tasks])
    u = drawn.rng.random((tasks.size, 1))
    labels = np.minimum((np.cumsum(rows, axis=1) <= u).sum(axis=1), k - 1).astype(np.int64)
    return World(truth, mean, accuracy(mean, prior), tasks, workers, labels, model,
                 params=EffectParams(looks, beta, stack, types), features=drawn.features,
                 feature_proba=drawn.feature_proba)
