"""A worker model is one class: :class:`WorkerModel`, its facts, its options, its behaviour and
its words; and :class:`World`, the hidden world of one replicate that a model draws.

A model's **facts** are typed class variables every consumer asks instead of branching on the
model's name (labels or scores, headline metric, default method, its table, whether the block
engine draws its answers, whether ``[workers.dynamics]`` applies). Its **options** are its
``Options`` table (``[workers.<table>]``): every key, default, range and description declared
once; the scenario's ``[workers]`` is a union over the models' options
(:mod:`marketsim.scenario.crowd_specs`). An instance is a model *with* its options: it draws a
world, answers tasks in it, draws gold items and measures an estimate. Its **words**
(:meth:`WorkerModel.describe`, :attr:`WorkerModel.summary`) are what ``report.md``'s Setup,
``marketsim list`` and the docs say about it.

The behaviour reads what it needs of the scenario besides its own options as a :class:`Crowd`:
the ``[tasks]`` and ``[workers]`` tables and the ``[budget]`` (the labels an initial graph and
the policy's view read), never the whole scenario. Their keys are declared here as protocols
that the scenario's specs satisfy structurally (mypy checks it where
:attr:`~marketsim.scenario.specs.Scenario.crowd` builds the crowd): the components sit below
the scenario, which imports them for its registry, validation and union.

Drawn once per replicate and shared by every arm (common random numbers), so differences
between arms are the policies' and the estimators' own. Every class-label worker model is
stored as per-worker confusion matrices ``confusion[j, c, l] = P(worker j says l | true class
c)``; the one-coin model is the special case with ``p_j`` on the diagonal.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

import numpy as np

from marketsim.aggregation.registry import CLASS_METHODS, SCORE_METHODS
from marketsim.data.compact_labels import compact_class_dtype, compact_id_dtype
from marketsim.data.labels import LabelSet
from marketsim.policies.base import MarketState
from marketsim.record.curves import CurvePoint
from marketsim.tables import Table


class FeaturesView(Protocol):
    """``[tasks.features]`` as a world draw reads it."""

    @property
    def count(self) -> int: ...  # noqa: D102
    @property
    def informativeness(self) -> float: ...  # noqa: D102
    @property
    def probabilities(self) -> tuple[tuple[float, ...], ...] | None: ...  # noqa: D102


class MeansView(Protocol):
    """``[tasks.means]`` (true task means of a score market)."""

    @property
    def alpha(self) -> float: ...  # noqa: D102
    @property
    def beta(self) -> float: ...  # noqa: D102
    @property
    def mean(self) -> float: ...  # noqa: D102


class TasksView(Protocol):
    """``[tasks]``, resolved."""

    @property
    def count(self) -> int: ...  # noqa: D102
    @property
    def classes(self) -> int: ...  # noqa: D102
    @property
    def prior(self) -> tuple[float, ...]: ...  # noqa: D102
    @property
    def features(self) -> FeaturesView | None: ...  # noqa: D102
    @property
    def means(self) -> MeansView | None: ...  # noqa: D102


class AbilityView(Protocol):
    """``[workers.ability]``: accuracy ``p = low + (1 - low) Beta(alpha, beta)``."""

    @property
    def alpha(self) -> float: ...  # noqa: D102
    @property
    def beta(self) -> float: ...  # noqa: D102
    @property
    def low(self) -> float: ...  # noqa: D102


class ArrivalsView(Protocol):
    """``[workers.arrivals]``: who arrives (an initial graph's labels follow the weights)."""

    @property
    def weights(self) -> tuple[float, ...] | None: ...  # noqa: D102
    @property
    def order(self) -> str: ...  # noqa: D102


class WorkersView(Protocol):
    """``[workers]``'s keys every model shares, resolved."""

    @property
    def count(self) -> int: ...  # noqa: D102
    @property
    def ability(self) -> AbilityView: ...  # noqa: D102
    @property
    def arrivals(self) -> ArrivalsView: ...  # noqa: D102
    @property
    def worker_model(self) -> WorkerModel: ...  # noqa: D102


class BudgetView(Protocol):
    """``[budget]``: what an initial graph and the policy's view read."""

    @property
    def edges(self) -> int: ...  # noqa: D102
    @property
    def initial(self) -> str: ...  # noqa: D102
    @property
    def initial_probability(self) -> float: ...  # noqa: D102


@dataclass(frozen=True)
class Crowd:
    """What a worker model reads besides its own options: the tasks, the workers (with their
    model) and the budget of labels (an initial graph's size, the policy's view). Built
    from a scenario (:attr:`~marketsim.scenario.specs.Scenario.crowd`), so a model is given
    these three tables, not the whole scenario."""

    tasks: TasksView
    workers: WorkersView
    budget: BudgetView


class AnswerModel(Protocol):
    """A worker model's per-label answer: what the market records when a worker submits."""

    def answer(self, task: int, worker: int) -> tuple[int, float | None]:
        """The class label ``worker`` gives ``task``, and its score (``None`` without scores)."""


class NoOptions(Table):
    """The model takes no options of its own (no ``[workers.<table>]``)."""


class WorkerModel(ABC):
    """A worker model: its facts (class variables), its options (``Options``, held by an
    instance as ``options``), its behaviour (draw a world, answer, draw gold items, measure)
    and its words. A module of :mod:`marketsim.workers` that declares a subclass with a
    ``name`` registers it (:mod:`marketsim.workers.registry`)."""

    #: ``workers.model``: the name a scenario selects it by.
    name: ClassVar[str]
    #: One line for ``marketsim list`` and the docs.
    summary: ClassVar[str]
    #: What a label is: a class, or a score in [0, 1].
    labels: ClassVar[Literal["classes", "scores"]]
    #: The headline error column of ``curves.csv``.
    metric: ClassVar[Literal["error_rate", "rmse"]]
    #: The inference method an arm without one runs.
    default_method: ClassVar[str]
    #: The ``[workers.<table>]`` of its options (``None``: it takes none).
    table: ClassVar[str | None] = None
    #: Its options table (every key, default, range, description).
    Options: ClassVar[type[Table]] = NoOptions
    #: The model of a ``[workers]`` table without ``model`` (exactly one model says so).
    default: ClassVar[bool] = False
    #: The block engine draws its answers a block at a time (``answer_block``).
    answers_in_blocks: ClassVar[bool] = False
    #: ``[workers.dynamics]`` (learning, fatigue, drift) shifts its answers.
    allows_dynamics: ClassVar[bool] = False
    #: A valid table of its options where the defaults are not one (a key is required), for
    #: the contract tests over the registry.
    example: ClassVar[Mapping[str, Any]] = {}
    #: What ``report.md``'s Setup says the inference service re-estimates after each batch.
    refit_words: ClassVar[str]
    #: What ``report.md``'s Setup says the headline error is.
    error_words: ClassVar[str]

    #: Derived from ``labels``: labels are scores in [0, 1] (score methods, no classes).
    scores: ClassVar[bool] = False
    #: Derived from ``labels``: the inference methods that fit this model's labels.
    methods: ClassVar[tuple[str, ...]] = CLASS_METHODS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "labels" in cls.__dict__:
            cls.scores = cls.labels == "scores"
            cls.methods = SCORE_METHODS if cls.scores else CLASS_METHODS

    def __init__(self, options: Table | None = None) -> None:
        self.options: Any = self.Options() if options is None else options

    # --- rules the scenario asks of the model -------------------------------------------------
    def ability_unread(self) -> str | None:
        """Why ``[workers.ability]`` is not read by this model with these options (the
        scenario refuses the table then, and leaves it out of what it writes), else ``None``."""
        return None

    def crowd_problem(self, n_classes: int, n_workers: int) -> tuple[str, str] | None:
        """(key below ``workers``, sentence) of an option whose shape does not fit the crowd
        (K = ``n_classes``, ``n_workers`` workers), else ``None``."""
        return None

    def block_problem(self) -> tuple[str, str] | None:
        """(key below ``workers``, what) the block engine cannot simulate with these options
        (beyond :attr:`answers_in_blocks`), else ``None``."""
        return None

    # --- behaviour -------------------------------------------------------------------------
    @abstractmethod
    def draw(self, crowd: Crowd, rng: np.random.Generator, initial: str,
             initial_rng: np.random.Generator | None) -> World:
        """A replicate's world with the initial graph ``initial``, drawn from ``initial_rng``
        when given (else from ``rng``, after the world)."""

    @abstractmethod
    def answers(self, world: World, n_classes: int, rng: np.random.Generator) -> AnswerModel:
        """The per-label answers of ``world``'s workers, drawn from ``rng``."""

    @abstractmethod
    def items(self, crowd: Crowd, world: World, truth: np.ndarray,
              rng: np.random.Generator) -> World:
        """``world``'s workers facing other items of classes ``truth`` (gold questions): each
        item's own per-task effects (difficulty, look-alike class, type, mean), drawn from
        ``rng`` from the distributions the tasks' are drawn from; nothing is drawn for a model
        without per-task effects. Its ``answers`` then answer item ``q`` as the item it is,
        never as real task ``q``."""

    def task_difficulty(self, world: World) -> np.ndarray | None:
        """Each task's difficulty for the humans of ``world`` (n_tasks,; larger is harder, any
        monotone scale), or ``None`` when the model gives every task the same difficulty:
        what a machine annotator's errors correlate with (:mod:`marketsim.machines`)."""
        return None

    @abstractmethod
    def measure(self, crowd: Crowd, world: World, est: Any, labels: LabelSet,
                now: float) -> tuple[CurvePoint, MarketState]:
        """The curve point of the fitted estimator ``est`` at simulated time ``now`` and the
        policy's view of the market."""

    # --- words -------------------------------------------------------------------------------
    @abstractmethod
    def describe(self, tasks: str, workers: str, classes: int, prior: tuple[float, ...],
                 ability: AbilityView, means: MeansView | None) -> str:
        """The world each replicate draws, in words for ``report.md``'s Setup, with the
        options' numbers (``tasks`` and ``workers``: the counts as the report prints them)."""


@dataclass(frozen=True)
class World:
    """True classes (n_tasks,), confusion matrices (n_workers, K, K), accuracy (n_workers,)
    under the class prior, the initial (task, worker, label) triples of one initial graph, and
    the worker model that drew it (the market asks it for answers and measurements)."""

    truth: np.ndarray
    confusion: np.ndarray
    ability: np.ndarray
    initial_tasks: np.ndarray
    initial_workers: np.ndarray
    initial_labels: np.ndarray
    model: WorkerModel
    #: The initial labels' scores when the model's labels are scores, else ``None``.
    initial_scores: np.ndarray | None = None
    #: The model's own hidden parameters beyond classes and confusion (e.g. task means).
    params: Any = None
    #: Task features (n_tasks, count) of 0.0/1.0 and their class-conditional probabilities.
    features: np.ndarray | None = None
    feature_proba: np.ndarray | None = None

    def __post_init__(self) -> None:
        """Hold the initial triples in the label log's compact types (int32 ids and int8
        classes when their values fit): a big world's initial graph is 9 bytes a label, not
        24, for the whole run (issue #30). The values, so every draw and result, are
        unchanged."""
        put = object.__setattr__  # frozen
        put(self, "initial_tasks", _narrowed(self.initial_tasks, compact_id_dtype))
        put(self, "initial_workers", _narrowed(self.initial_workers, compact_id_dtype))
        put(self, "initial_labels", _narrowed(self.initial_labels, compact_class_dtype))


def _narrowed(codes: np.ndarray, dtype_for: Any) -> np.ndarray:
    """Integer ``codes`` in ``dtype_for(max + 1)`` when they are non-negative (else as
    they are)."""
    codes = np.asarray(codes)
    if codes.size == 0 or codes.dtype.kind not in "iu" or int(codes.min()) < 0:
        return codes
    dtype = dtype_for(int(codes.max()) + 1)
    return codes if codes.dtype == dtype else codes.astype(dtype)
