"""Confusion-matrix workers (``workers.model = "confusion"``): worker ``j`` answers ``l`` on a
task of true class ``c`` with probability ``confusion[j, c, l]``. The matrices are
``diagonal-uniform`` (diagonal ``U[low, high]``, the rest spread evenly), ``dirichlet`` (rows
``Dirichlet(concentration * (1 + diagonal_weight * e_c))``), ``crowd`` (rows
``Dirichlet(crowd_concentration * crowd_matrix[c])``: workers around a crowd that confuses
classes in pairs or blocks, the hierarchical Dawid–Skene world of Paun et al. 2018) or
``per-worker`` (given, as ``marketsim calibrate`` writes them). With look-alike tasks or difficulty
(:mod:`~marketsim.workers.task_effects`) the answers go through those."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Literal, Self

import numpy as np
from pydantic import model_validator

from marketsim.options import F
from marketsim.tables import FloatMatrices, FloatMatrixSets, FloatRows, KeyProblem, Table
from marketsim.workers.base import AbilityView, AnswerModel, Crowd, World
from marketsim.workers.classes import ClassWorkers
from marketsim.workers.dynamics import shifted
from marketsim.workers.task_effects import (
    EffectAnswers,
    EffectParams,
    TaskEffects,
    check_stochastic,
    draw_effect_world,
    draw_item_effects,
)
from marketsim.workers.task_types import TaskTypes, mean_over_types, task_types
from marketsim.workers.words import mean_diagonal, pct

CONFUSION_DESIGNS = ("diagonal-uniform", "dirichlet", "crowd", "per-worker")
#: Keys of ``[workers.confusion]`` that only one design reads.
CONFUSION_DESIGN_KEYS = {"diagonal-uniform": ("low", "high"),
                         "dirichlet": ("concentration", "diagonal_weight"),
                         "crowd": ("crowd_matrix", "crowd_concentration"),
                         "per-worker": ("matrices", "type_shares", "type_matrices")}

class ConfusionSpec(TaskEffects):
    """``[workers.confusion]`` (`model = "confusion"` only)

    Per-worker K×K confusion matrices. ``diagonal-uniform``: each diagonal entry uniform on
    [low, high], the rest of the row spread evenly (Zhang et al.'s synthetic design; for K = 2
    exactly their setup). ``dirichlet``: row c drawn from Dirichlet(concentration·(1 +
    diagonal_weight·e_c)). ``crowd``: row c drawn from Dirichlet(crowd_concentration ·
    crowd_matrix[c]), every worker around one crowd-level matrix (hierarchical Dawid–Skene,
    Paun et al. 2018). ``per-worker``: every worker's matrix given (``matrices``, as
    `marketsim calibrate` writes it). Any design may add look-alike tasks and task
    difficulty (``lookalike``, ``sigma``)."""

    design: Literal[CONFUSION_DESIGNS] = F(  # type: ignore[valid-type]
        "diagonal-uniform", "diagonal uniform on [low, high] with the rest of the row spread "
        "evenly (Zhang et al.), Dirichlet rows, rows around a crowd matrix, or given per "
        "worker")
    low: float = F(0.3, "`diagonal-uniform`: lower end of the diagonal", ge=0, le=1)
    high: float = F(0.9, "`diagonal-uniform`: upper end of the diagonal (≥ low)", ge=0, le=1)
    concentration: float = F(1.0, "`dirichlet`: row c ~ Dirichlet(concentration·(1 + "
                             "diagonal_weight·e_c))", gt=0, le=1e6)
    diagonal_weight: float = F(4.0, "`dirichlet`: weight of the diagonal", ge=0, le=1e6)
    crowd_matrix: FloatRows | None = F(
        None, "`crowd`: K×K rows summing to 1, the crowd's confusion matrix (row c: the "
        "crowd's answers on a task of class c); each worker's row c ~ "
        "Dirichlet(crowd_concentration·crowd_matrix[c])", shown="required with `crowd`")
    crowd_concentration: float = F(10.0, "`crowd`: how close workers are to the crowd (the "
                                   "labels' worth of it each worker's row holds)",
                                   gt=0, le=1e6)
    matrices: FloatMatrices | None = F(
        None, "`per-worker`: one K×K matrix per worker (workers.count of them), row c the "
        "worker's answer probabilities on a task of class c", shown="required with "
        "`per-worker` (unless type_matrices)")
    type_shares: FloatRows | None = F(
        None, "`per-worker` task types: a task of class c has type z with probability "
        "type_shares[c][z] (K rows, one per class) or type_shares[0][z] (one row for every "
        "class); drawn once per replicate", shown="one type of task")
    type_matrices: FloatMatrixSets | None = F(
        None, "`per-worker` with type_shares, instead of matrices: one set of workers.count "
        "K×K matrices per task type; worker j answers a type-z task of class c from row c of "
        "type_matrices[z][j]", shown="required with type_shares")

    @model_validator(mode="after")
    def _design_keys(self) -> Self:
        for design, keys in CONFUSION_DESIGN_KEYS.items():
            wrong = [k for k in keys if k in self.model_fields_set and self.design != design]
            if wrong:
                raise KeyProblem(wrong[0], f"applies only to design '{design}', not "
                                 f"{self.design!r}")
        if self.high < self.low:
            raise KeyProblem("high", f"must be >= workers.confusion.low ({self.low:g})")
        if self.design == "per-worker":
            self._per_worker_keys()
        if self.design == "crowd":
            if self.crowd_matrix is None:
                raise KeyProblem("crowd_matrix", "is required with design = 'crowd'")
            check_stochastic("crowd_matrix", self.crowd_matrix)
        return self

    def _per_worker_keys(self) -> None:
        """``matrices``, or ``type_shares`` with ``type_matrices``, stochastic and matching."""
        if (self.type_shares is None) != (self.type_matrices is None):
            given, missing = (("type_shares", "type_matrices") if self.type_matrices is None
                              else ("type_matrices", "type_shares"))
            raise KeyProblem(missing, f"is required with {given} (task types need both)")
        if self.type_matrices is not None and self.matrices is not None:
            raise KeyProblem("type_matrices", "replaces matrices (one set per task type); give "
                             "one of them")
        if self.matrices is None and self.type_matrices is None:
            raise KeyProblem("matrices", "is required with design = 'per-worker'")
        for matrix in self.matrices or ():
            check_stochastic("matrices", matrix)
        if self.type_shares is None or self.type_matrices is None:
            return
        check_stochastic("type_shares", self.type_shares)
        n_types = len(self.type_matrices)
        if any(len(row) != n_types for row in self.type_shares):
            raise KeyProblem("type_shares", f"rows must have one share per task type "
                             f"({n_types}, the sets of type_matrices)")
        for matrices in self.type_matrices:
            for matrix in matrices:
                check_stochastic("type_matrices", matrix)

    @property
    def has_effects(self) -> bool:
        """Difficulty, look-alikes or task types are asked for."""
        return super().has_effects or self.type_shares is not None

    def as_written(self) -> dict[str, Any]:
        """The design and the keys that design reads."""
        unread = {k for d, keys in CONFUSION_DESIGN_KEYS.items() if d != self.design
                  for k in keys}
        return {k: v for k, v in super().as_written().items() if k not in unread}


def pooled_matrices(spec: ConfusionSpec, k: int) -> np.ndarray:
    """What each worker does on average on a class-c task of ``per-worker`` task types,
    (workers, K, K) (the plain ``matrices`` when there are no types)."""
    types = task_types(spec.type_shares, spec.type_matrices, k)
    if types is None:
        return np.asarray(spec.matrices, dtype=np.float64)
    return mean_over_types(types, types.matrices)


def draw_confusion_matrices(spec: ConfusionSpec, crowd: Crowd,
                            rng: np.random.Generator) -> np.ndarray:
    """Per-worker confusion matrices (n_workers, K, K) of the table's confusion design."""
    m, k = crowd.workers.count, crowd.tasks.classes
    if spec.design == "per-worker":
        return pooled_matrices(spec, k)
    if spec.design == "diagonal-uniform":
        diag = rng.uniform(spec.low, spec.high, size=(m, k))
        conf = np.repeat(((1.0 - diag) / (k - 1))[:, :, None], k, axis=2)
        idx = np.arange(k)
        conf[:, idx, idx] = diag
        return conf
    if spec.design == "crowd":
        return draw_crowd_matrices(np.asarray(spec.crowd_matrix, dtype=np.float64),
                                   spec.crowd_concentration, m, rng)
    alpha = spec.concentration * (1.0 + spec.diagonal_weight * np.eye(k))
    return np.stack([rng.dirichlet(alpha[c], size=m) for c in range(k)], axis=1)


def draw_crowd_matrices(crowd: np.ndarray, concentration: float, n_workers: int,
                        rng: np.random.Generator) -> np.ndarray:
    """``n_workers`` matrices (workers, K, K), row ``c`` of each ``Dirichlet(concentration *
    crowd[c])`` (normalised gamma draws, all rows at once); a row whose draws all underflow
    to 0 (a tiny concentration) is the crowd's own row."""
    draws = rng.standard_gamma(np.broadcast_to(concentration * crowd, (n_workers, *crowd.shape)))
    total = draws.sum(axis=2, keepdims=True)
    return np.where(total > 0, draws / np.where(total > 0, total, 1.0), crowd[None])


def draw_labels(
    truth: np.ndarray, confusion: np.ndarray, workers: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Answers of ``workers`` on tasks with true classes ``truth`` (vectorised)."""
    if truth.size == 0:
        return np.zeros(0, dtype=np.int64)
    rows = confusion[workers, truth]  # (n, K)
    u = rng.random((truth.shape[0], 1))
    labels = (np.cumsum(rows, axis=1) <= u).sum(axis=1)
    return np.minimum(labels, confusion.shape[2] - 1).astype(np.int64)


class ConfusionAnswers:
    """Per-label answers from confusion matrices: one uniform draw inverted through the
    cumulative row of (worker, true class)."""

    def __init__(self, truth: np.ndarray, confusion: np.ndarray, rng: np.random.Generator) -> None:
        self.truth = truth
        self.confusion = confusion
        self.cumulative = np.cumsum(confusion, axis=2)
        self.rng = rng

    def answer(self, task: int, worker: int) -> tuple[int, float | None]:
        """The worker's label for ``task`` (no score)."""
        row = self.cumulative[worker, int(self.truth[task])]
        label = min(int(np.searchsorted(row, self.rng.random(), side="right")), len(row) - 1)
        return label, None

    def answer_block(self, tasks: np.ndarray, workers: np.ndarray) -> np.ndarray:
        """The labels of a block of hand-outs at once (the block engine; :func:`draw_labels`)."""
        return draw_labels(self.truth[tasks], self.confusion, workers, self.rng)

    def answer_shifted(self, task: int, worker: int, shift: float) -> tuple[int, float | None]:
        """The label with the logit of the right class's probability shifted by ``shift``, the
        wrong classes scaled to keep their proportions (the same draw as :meth:`answer`)."""
        truth = int(self.truth[task])
        row = self.cumulative[worker, truth]
        probs = self.confusion[worker, truth]
        p0 = float(probs[truth])
        p = shifted(p0, shift)
        if p != p0:
            scaled = probs * ((1.0 - p) / (1.0 - p0))
            scaled[truth] = p
            row = np.cumsum(scaled)
        label = min(int(np.searchsorted(row, self.rng.random(), side="right")), len(row) - 1)
        return label, None


class ConfusionWorkers(ClassWorkers):
    """The confusion worker model: full per-worker confusion matrices (also a replayed crowd's
    measured matrices, which answer its gold questions)."""

    name: ClassVar[str] = "confusion"
    summary: ClassVar[str] = (
        "per-worker K x K confusion matrices: diagonal uniform on [low, high] (Zhang et al.), "
        "Dirichlet rows or given per worker; optional look-alike tasks and task difficulty")
    table: ClassVar[str | None] = "confusion"
    Options: ClassVar[type[Table]] = ConfusionSpec
    answers_in_blocks: ClassVar[bool] = True

    def draw_confusion(self, crowd: Crowd, rng: np.random.Generator) -> np.ndarray:
        """The table's confusion design (:func:`draw_confusion_matrices`)."""
        return draw_confusion_matrices(self.options, crowd, rng)

    def task_effects(self) -> TaskEffects:
        """The options holding this model's ``lookalike`` and ``sigma``."""
        effects: TaskEffects = self.options
        return effects

    def task_types(self, k: int) -> TaskTypes | None:
        """The ``per-worker`` design's task types, if given."""
        return task_types(self.options.type_shares, self.options.type_matrices, k)

    def initial_answers(self, truth: np.ndarray, confusion: np.ndarray, workers: np.ndarray,
                        n_classes: int, rng: np.random.Generator) -> np.ndarray:
        """Answers drawn through each worker's row (:func:`draw_labels`)."""
        return draw_labels(truth, confusion, workers, rng)

    def draw(self, crowd: Crowd, rng: np.random.Generator, initial: str,
             initial_rng: np.random.Generator | None) -> World:
        """The shared class-model draw; with task effects, the matrices then the effects
        (:func:`~marketsim.workers.task_effects.draw_effect_world`), with the task types when
        given."""
        spec = self.task_effects()
        if not spec.has_effects:
            return super().draw(crowd, rng, initial, initial_rng)
        prior = np.asarray(crowd.tasks.prior)
        truth = rng.choice(crowd.tasks.classes, size=crowd.tasks.count,
                           p=prior).astype(np.int64)
        matrices = self.draw_confusion(crowd, rng)
        return draw_effect_world(self, crowd, spec, matrices, truth, rng, initial,
                                 initial_rng, self.task_types(crowd.tasks.classes))

    def items(self, crowd: Crowd, world: World, truth: np.ndarray,
              rng: np.random.Generator) -> World:
        """``world`` with items of classes ``truth``; with task effects, each item's own
        look-alike class, difficulty and type (:func:`~marketsim.workers.task_effects.
        draw_item_effects`, the tasks' distributions)."""
        items = super().items(crowd, world, truth, rng)
        if not isinstance(world.params, EffectParams):
            return items
        k = crowd.tasks.classes
        return replace(items, params=draw_item_effects(
            world.params, self.task_effects(), self.task_types(k), truth, k, rng))

    def task_difficulty(self, world: World) -> np.ndarray | None:
        """``-log beta_i`` of the task effects' inverse difficulty (``None`` without
        ``sigma``: every task is as hard)."""
        if isinstance(world.params, EffectParams) and self.task_effects().sigma > 0:
            return -np.log(world.params.beta)
        return None

    def answers(self, world: World, n_classes: int, rng: np.random.Generator) -> AnswerModel:
        """Per-label answers from the confusion matrices (:class:`ConfusionAnswers`), or
        through the task effects (:class:`~marketsim.workers.task_effects.EffectAnswers`)."""
        if isinstance(world.params, EffectParams):
            return EffectAnswers(world.params, rng, world.truth)
        return ConfusionAnswers(world.truth, world.confusion, rng)

    def block_problem(self) -> tuple[str, str] | None:
        """Task effects draw each answer through its task: not in blocks."""
        if self.task_effects().has_effects:
            return self.table or "", "with sigma, lookalike or task types (task effects)"
        return None

    def crowd_problem(self, n_classes: int, n_workers: int) -> tuple[str, str] | None:
        """Look-alikes K×K; ``per-worker`` matrices one K×K per worker; task types' shares
        1 or K rows and per type one K×K matrix per worker."""
        k, spec = n_classes, self.options
        problem = self.task_effects().lookalike_problem(k)
        if problem is not None:
            return f"{self.table}.{problem[0]}", problem[1]
        if spec.type_shares is not None and spec.type_matrices is not None:
            if len(spec.type_shares) not in (1, k):
                return ("confusion.type_shares", f"must have 1 row (every class) or "
                        f"tasks.classes = {k} rows (one per class), got {len(spec.type_shares)}")
            for z, mats in enumerate(spec.type_matrices):
                wrong = _matrices_problem(mats, k, n_workers)
                if wrong is not None:
                    return "confusion.type_matrices", f"type {z}: {wrong}"
        rows = spec.crowd_matrix
        if rows is not None and (len(rows) != k or any(len(r) != k for r in rows)):
            return "confusion.crowd_matrix", f"must be {k}×{k} (tasks.classes rows of {k} numbers)"
        if spec.matrices is not None:
            wrong = _matrices_problem(spec.matrices, k, n_workers)
            if wrong is not None:
                return "confusion.matrices", wrong
        return None

    def answer_words(self, classes: int, ability: AbilityView) -> str:
        """Per-worker K×K matrices of the table's design, with task types, look-alike tasks and
        difficulty when asked for."""
        spec = self.options
        if spec.design == "diagonal-uniform":
            how = (f"drawn once per replicate (diagonal-uniform design, Zhang et al.): the "
                   f"chance of the true class uniform on [{spec.low:g}, {spec.high:g}], the rest "
                   "of the row spread evenly over the wrong classes")
        elif spec.design == "dirichlet":
            conc, weight = spec.concentration, spec.diagonal_weight
            how = (f"drawn once per replicate (dirichlet design): row c ~ Dirichlet({conc:g} · "
                   f"(1 + {weight:g} · e_c)), the diagonal weighted {weight:g}")
        elif spec.design == "crowd":
            crowd = np.asarray(spec.crowd_matrix)
            how = (f"drawn once per replicate around the crowd's matrix (crowd design, "
                   f"hierarchical Dawid-Skene, Paun et al. 2018): row c ~ Dirichlet("
                   f"{spec.crowd_concentration:g} · crowd_matrix[c]), the crowd's chance of the "
                   f"true class {', '.join(f'{v:.3f}' for v in np.diag(crowd))} by class")
        else:
            mean = mean_diagonal(spec.matrices)
            how = "given per worker in the scenario (per-worker design)" + (
                f", mean chance of the true class {mean:.3f}" if mean is not None else "")
        return (f"each worker has a K × K confusion matrix, the chance of each answer given the "
                f"true class, {how}.{_types_text(spec)}{spec.words()}")


def _matrices_problem(mats: Any, k: int, n_workers: int) -> str | None:
    """Why ``mats`` are not one K×K matrix per worker (``None`` when they are)."""
    if len(mats) != n_workers:
        return (f"must have workers.count = {n_workers} matrices (one per worker), got "
                f"{len(mats)}")
    if any(len(m) != k or any(len(r) != k for r in m) for m in mats):
        return f"must hold {k}×{k} matrices (tasks.classes = {k})"
    return None


def _types_text(spec: ConfusionSpec) -> str:
    """Task types of a ``per-worker`` confusion crowd (Welinder et al. 2010), or ""."""
    shares, sets = spec.type_shares, spec.type_matrices
    if not shares or not sets:
        return ""
    n = len(sets)
    rows = [", ".join(pct(s) for s in row) for row in shares]
    share_txt = (f"{rows[0]} for every class" if len(rows) == 1 else
                 "; ".join(f"class {c + 1}: {r}" for c, r in enumerate(rows)))
    diag = [mean_diagonal(m) for m in sets]
    diag_txt = ", ".join(f"type {z + 1} {d:.3f}" for z, d in enumerate(diag) if d is not None)
    return (f" Tasks come in {n} types (Welinder et al. 2010), drawn once per replicate: the "
            f"shares of types 1 to {n} are {share_txt}; each worker has one matrix per type and "
            f"answers a task from the matrix of its type (mean chance of the true class: "
            f"{diag_txt}).")
