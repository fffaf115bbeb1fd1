"""The assignment-policy protocols.

A *ranking* policy (:class:`AssignmentPolicy`) ranks the tasks at every refresh of the inference
service; arriving workers then get the highest-ranked task of the round they have not labelled.
A *worker-aware* policy (:class:`WorkerAwarePolicy`) also has ``assign``: the market calls it
for every arriving worker, and it returns the task for that worker, :data:`GOLD` (give them a
control question) or ``None`` (decline them: no label, no cost, they leave until their next
arrival). Ranking-only policies keep working unchanged.

A round hands out ``batch`` labels to distinct tasks, so a policy that ranks tasks is exactly
Maginnis & Gupta's "assign one new worker to each of the top B tasks", and the
uniform policy's random permutation is its "B distinct tasks uniformly" baseline.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Final, Literal, Protocol, cast, runtime_checkable

import numpy as np
from pydantic import Field

from marketsim.data.labels import LabelSet
from marketsim.options import Configurable, Options, OptionsT

#: What ``assign`` returns to give the arriving worker a gold (control) question instead of a task.
GOLD: Final[int] = -1
#: What ``assign`` returns when every task is closed (a platform preset's overlap rule is met
#: everywhere): the requester stops buying, and the run ends under budget with the labels
#: already handed out. When those may be abandoned (``workers.service.abandon``) the market
#: first waits until none is outstanding, so an abandoned label is handed out again.
DONE: Final[int] = -2


@dataclass(frozen=True)
class WorkerStats:
    """The requester's live record of every worker (arrays of length ``n_workers``, read-only).

    Unlike the estimates of :class:`MarketState`, these are exact and up to date at every
    arrival: they are what a requester on a real platform sees.
    """

    #: Task labels given so far (gold answers not included).
    labels: np.ndarray
    #: Gold (control) questions answered so far, and how many of them correctly.
    gold_answered: np.ndarray
    gold_correct: np.ndarray
    #: Workers the market's blocking rule has blocked: they never receive another task.
    blocked: np.ndarray
    #: The price of one label from each worker (1.0 everywhere when prices are flat).
    price: np.ndarray
    #: Each worker's observable qualification tier (0 everywhere without tiers).
    tier: np.ndarray
    #: Labels (gold included) each worker may still give; -1 when capacity is unlimited.
    capacity_left: np.ndarray
    #: Workers the market may hand a label now (bool): not blocked, not departed, with
    #: capacity left and a price the money left can pay — the market's own rule. ``None``
    #: (records built by hand) means: not blocked and with capacity left.
    available: np.ndarray | None = None
    #: Task hand-outs each worker abandoned (``workers.service.abandon``). Like a labelled
    #: task, an abandoned one is never handed to that worker again: a worker has a task left
    #: while ``labels + abandoned < n_tasks``. ``None`` (records built by hand): none.
    abandoned: np.ndarray | None = None
    #: Gold questions each worker abandoned: each is handed to a worker at most once, so a
    #: worker has a gold question left while ``gold_answered + gold_abandoned`` is below the
    #: scenario's ``gold.count``. ``None`` (records built by hand): none.
    gold_abandoned: np.ndarray | None = None


@runtime_checkable
class MachineDesk(Protocol):
    """The machine annotators a policy may ask (issue #41), live: the market updates the
    arrays in place as answers arrive, so a policy reads them at any call (read-only views:
    a policy never writes them).

    Machines are numbered in the scenario's ``[[machines]]`` order. A call is a label of
    ``budget.edges``, paid (its ``price``) when sent; its answer arrives ``latency`` after it
    starts, calls beyond a machine's ``rate_limit`` waiting their turn. A policy that never
    calls :meth:`ask` buys no machine label (every built-in human policy and preset)."""

    #: Each machine's ``name``.
    names: tuple[str, ...]
    #: Money per call, per machine.
    price: np.ndarray
    #: Simulated time from a call's start to its answer, per machine.
    latency: np.ndarray
    #: Calls per unit of simulated time at most, per machine (``inf``: no limit).
    rate_limit: np.ndarray
    #: (n_machines, n_tasks): calls sent so far per machine and task.
    asked: np.ndarray
    #: (n_machines, n_tasks): answers received so far per machine and task.
    answered: np.ndarray
    #: (n_machines, n_tasks): each machine's latest answer per task (-1: none yet).
    answers: np.ndarray
    #: (n_machines, n_tasks): the confidence of that answer (NaN: none yet).
    confidence: np.ndarray

    def ask(self, machine: int, tasks: np.ndarray) -> int:
        """Send one call to ``machine`` per entry of ``tasks``: as many as the run's labels
        and money left allow, in the order given; returns how many were sent."""


@dataclass(frozen=True)
class MarketInfo:
    """What a policy may know about the market before it starts (fixed for the whole run).

    ``truth`` and ``true_confusion`` (the workers' true confusion matrices, (n_workers, K, K),
    rows = true class) are only filled in for policies whose fact ``needs_truth`` is true (the
    oracles); ``true_confusion`` alone also for those whose ``needs_true_workers`` is
    (the known-workers bound). ``gold_count`` is the number of gold (control) questions of the
    scenario (0: the policy must never return :data:`GOLD`).
    ``inference`` is the arm's estimator factory: calling it returns a fresh, unfitted estimator
    configured exactly like the market's inference service (used by simulation-based policies).
    ``machines`` is the scenario's machine annotators (:class:`MachineDesk`), ``None`` in a
    market without them.
    """

    n_tasks: int
    n_workers: int
    n_classes: int
    class_prior: np.ndarray
    ability_alpha: float
    ability_beta: float
    ability_low: float
    inference: Any
    truth: np.ndarray | None = None
    options: dict[str, Any] = field(default_factory=dict)
    true_confusion: np.ndarray | None = None
    gold_count: int = 0
    machines: MachineDesk | None = None


@dataclass(frozen=True)
class MarketState:
    """The requester's view at a refresh: the labels so far and the latest estimate.

    ``proba`` (n_tasks, K) and ``skill`` (n_workers,) come from the inference service and may be
    stale by up to one batch, as in a real market. ``skill`` is the one-coin accuracy, or the
    accuracy implied by the confusion matrices and class prior for Dawid–Skene estimators.

    In a continuous-score market (Hoiem's bad-annotator model) ``proba`` is a column of ones
    (one "class"),
    ``skill`` and ``good_proba`` are each annotator's ``P(good)``, ``means`` the estimated task
    means (NaN for unscored tasks) and ``sigma`` the fitted noise of good annotators; these three
    are ``None`` in class markets.
    """

    labels: LabelSet
    proba: np.ndarray
    skill: np.ndarray
    spent: int
    budget: int
    means: np.ndarray | None = None
    good_proba: np.ndarray | None = None
    sigma: float | None = None
    #: Estimated confusion matrices (n_workers, K, K), rows = true class (class markets).
    confusion: np.ndarray | None = None
    #: Each worker's skill as evidence (n_workers, 2): the expected numbers of correct and wrong
    #: task labels under the current posterior (a Beta posterior's counts, prior not included).
    skill_counts: np.ndarray | None = None
    #: The following are filled in only for ``assign`` (worker-aware policies), at each arrival:
    #: the live worker record, the tasks the arriving worker holds or has labelled (bool,
    #: n_tasks: never assign those), and the labels handed out per task since the last refresh
    #: (what ``proba`` does not know yet).
    workers: WorkerStats | None = None
    held: np.ndarray | None = None
    handed_since_refresh: np.ndarray | None = None
    #: Live at each arrival too (``assign`` only): the task labels received so far per task and
    #: class (n_tasks, K; the initial graph included), the labels handed out so far per task
    #: (received and in flight), and every received task label as read-only views of the
    #: market's log, ``(tasks, workers, labels)`` in order of receipt (no copy: a policy reads
    #: the part past its own cursor, so its work per arrival is the new labels only). The
    #: counts (and ``handed_since_refresh`` and ``held``) are read-only views of the market's
    #: own arrays, not copies: they hold the counts of this call; a policy copies what it keeps.
    task_votes: np.ndarray | None = None
    task_handed: np.ndarray | None = None
    received: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


@runtime_checkable
class AssignmentPolicy(Protocol):
    """What the requester needs from a policy."""

    name: str
    needs_truth: bool

    def bind(self, info: MarketInfo) -> None:
        """Receive the market's fixed description once, before the first round."""

    def rank(self, state: MarketState, rng: np.random.Generator) -> np.ndarray:
        """Return task indices, most wanted first (a permutation of, or a prefix of, all tasks)."""


@runtime_checkable
class WorkerAwarePolicy(Protocol):
    """A policy that chooses per arriving worker (``rank`` is then optional and unused)."""

    name: str
    needs_truth: bool

    def bind(self, info: MarketInfo) -> None:
        """Receive the market's fixed description once, before the first arrival."""

    def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> int | None:
        """The task index for the arriving ``worker`` (one they do not hold, see
        ``state.held``), :data:`GOLD` for a control question, or ``None`` to decline them.

        A policy that may return :data:`DONE` (a platform preset) may also define
        ``wanted_tasks() -> np.ndarray``, the tasks (bool) that wanted a label at its last
        ``assign``: when every worker who may work holds all of them (labelled or abandoned)
        the market records that it ran out of workers instead of stopping stuck."""


#: The markets a policy may serve: class labels, or continuous scores (``gaussian-scores``).
MarketKind = Literal["classes", "scores"]


class Policy(Configurable[OptionsT]):
    """The base class of a policy: one class owns its options (``Options``, see
    :mod:`marketsim.options`), its facts (the typed class variables below, each with its
    default here), its behaviour (``bind`` and ``rank``, or ``assign``) and its words
    (:attr:`description`, :meth:`describe`).

    The registry collects every subclass of a module of ``marketsim/policies`` that sets
    :attr:`name`; a plug-in (``package.module:Class``) that subclasses it gets these defaults,
    a plug-in that does not must declare every fact itself (checked when it is imported,
    :func:`marketsim.policies.registry.check_facts`). Validation, the market, the runner,
    ``marketsim list``, the docs and ``report.md`` read the facts as typed attributes."""

    #: What a scenario calls it (``policy = "name"``); a class without one is a base class.
    name: ClassVar[str]
    #: Receives the true classes and the workers' true confusion matrices
    #: (``MarketInfo.truth``, ``true_confusion``): a teaching bound, NOT realisable.
    needs_truth: ClassVar[bool] = False
    #: Receives the workers' true confusion matrices only (``MarketInfo.true_confusion``).
    needs_true_workers: ClassVar[bool] = False
    #: The markets it ranks in: ``"classes"`` (class labels), ``"scores"`` (continuous
    #: scores); a scenario pairing it with another market is refused when read.
    markets: ClassVar[tuple[MarketKind, ...]] = ("classes",)
    #: Defined for binary tasks (2 classes) only.
    binary_only: ClassVar[bool] = False
    #: Boolean options that need binary tasks when true.
    binary_only_options: ClassVar[tuple[str, ...]] = ()
    #: Integer options counting a task's labels, each from a distinct worker: at most
    #: ``workers.count`` (a preset's overlaps, a quorum).
    per_task_options: ClassVar[tuple[str, ...]] = ()
    #: Integer options naming a qualification tier: at most the highest of ``[workers.tiers]``.
    tier_options: ClassVar[tuple[str, ...]] = ()
    #: Even rounds: every task is handed out once a round before any gets another label, so
    #: each task's labels stay within 1 of its share. A refresh's new ranking continues the
    #: round (the tasks it has not handed out first), and a worker who labelled every task left
    #: in it is given nothing rather than starting the next round early; a round ends unfinished
    #: only when no worker who may still work can label what is left of it.
    even_rounds: ClassVar[bool] = False
    #: Rough CPU cost of one (replicate, arm) unit relative to the uniform policy's: parallel
    #: studies start the costly units first so that the worker processes finish together;
    #: results never depend on it.
    unit_cost: ClassVar[Annotated[float, Field(gt=0, allow_inf_nan=False)]] = 1.0
    #: One paragraph for ``report.md``'s "Policies" section, ``marketsim list`` (its first
    #: sentence) and ``list --policy``; the class docstring when empty.
    description: ClassVar[str] = ""

    @classmethod
    def describe(cls, options: Options | None = None) -> str:
        """The policy in words, on one line: :attr:`description` (else the class docstring);
        a policy whose rule depends on its options says it with their values when given
        ``options`` (its validated ``Options``)."""
        return " ".join((cls.description or inspect.getdoc(cls) or "").split())

    @classmethod
    def crowd_problem(cls, options: Any, n_tasks: int, n_workers: int
                      ) -> tuple[str, str] | None:
        """Why these validated ``options`` cannot run on ``n_tasks`` tasks and ``n_workers``
        workers, as (option, problem), or ``None`` (a rule across tables the policy owns, such
        as ``fixed-overlap``'s ``overlaps`` counting every task; none by default)."""
        return None

    def bind(self, info: MarketInfo) -> None:
        """Receive the market's fixed description once, before the first round (nothing to
        prepare by default)."""


#: A policy class: a subclass of :class:`Policy`, or a plug-in class whose facts were checked.
PolicyClass = type[Policy[Any]]


def policy_type(policy: object) -> PolicyClass:
    """The class of a built policy object, whose facts were checked when it was loaded (a
    built-in policy, an imported ``module:Class``, an object given in Python)."""
    return cast(PolicyClass, type(policy))


def is_worker_aware(policy: object) -> bool:
    """Whether the market should call ``policy.assign`` at each arrival."""
    return callable(getattr(policy, "assign", None))
