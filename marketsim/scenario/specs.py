"""The frozen specs of a validated scenario: tasks, workers, budget, arms, output, sweep.

They are built only by :mod:`marketsim.scenario.parser` (from a TOML file or a dict), so every
instance has passed validation; the market and the study read them and never re-check.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from marketsim.errors import InputError
from marketsim.policies.base import AssignmentPolicy
from marketsim.policies.registry import POLICIES, instantiate, policy_class
from marketsim.scenario.inference_spec import InferenceSpec
from marketsim.scenario.replay import ReplaySpec
from marketsim.scenario.worker_models import WORKER_MODEL_FACTS, WorkerModelFacts

WORKER_MODELS = tuple(WORKER_MODEL_FACTS)
ABILITY_DISTRIBUTIONS = ("shifted-beta",)
CONFUSION_DESIGNS = ("diagonal-uniform", "dirichlet")
#: Keys of ``[workers.confusion]`` that only one design reads.
CONFUSION_DESIGN_KEYS = {"diagonal-uniform": ("low", "high"),
                         "dirichlet": ("concentration", "diagonal_weight")}
INITIAL_GRAPHS = ("one-per-task", "bernoulli", "none")
#: Longest ``Scenario.slug`` (the run folder's name): long names must not break paths.
MAX_SLUG = 60
#: Field metadata of resolved objects: not parameters, so not in ``to_dict()``.
_RESOLVED = {"resolved": True}
#: Field metadata of optional market mechanics (issue #16): left out of ``to_dict()`` while
#: at their default ("off"), so a scenario without them keeps its identity (run fingerprints).
_OPTIONAL = {"omit_if_default": True}
#: Field metadata of (key, value) pairs written as a mapping by ``to_dict()``; every other
#: tuple is an array, whatever its entries look like (two features' probabilities are rows).
_PAIRS = {"pairs": True}


@dataclass(frozen=True)
class AbilitySpec:
    """Worker accuracy distribution ``p = low + (1 - low) Beta(alpha, beta)``."""

    distribution: str = "shifted-beta"
    alpha: float = 6.0
    beta: float = 2.0
    low: float = 0.1


@dataclass(frozen=True)
class ConfusionSpec:
    """Per-worker K×K confusion matrices (``model = "confusion"``).

    ``diagonal-uniform``: each diagonal entry uniform on [low, high], the rest of the row spread
    evenly (Zhang et al.'s synthetic design; for K = 2 exactly their setup). ``dirichlet``: row c
    drawn from Dirichlet(concentration·(1 + diagonal_weight·e_c)).
    """

    design: str = "diagonal-uniform"
    low: float = 0.3
    high: float = 0.9
    concentration: float = 1.0
    diagonal_weight: float = 4.0


@dataclass(frozen=True)
class GaussianScoresSpec:
    """Seed 001's annotators (``model = "gaussian-scores"``): ``round(good_fraction * count)``
    good ones score task i as ``N(mu_i, sigma^2)`` clipped to [0, 1], the rest uniformly."""

    good_fraction: float = 0.7
    sigma: float = 0.1


@dataclass(frozen=True)
class TaskMeansSpec:
    """True task means of a continuous market: ``mu_i ~ Beta(alpha, beta)`` (1, 1 = uniform)."""

    alpha: float = 1.0
    beta: float = 1.0

    @property
    def mean(self) -> float:
        """``E[mu_i]``: the estimate a task without any score gets in the metrics."""
        return self.alpha / (self.alpha + self.beta)


@dataclass(frozen=True)
class FeaturesSpec:
    """``count`` binary features per task, ``x_if ~ Bernoulli(phi[t_i, f])`` (Jin & Zhang 2010).

    ``probabilities`` (K rows of ``count`` numbers) fixes ``phi``; otherwise every replicate
    draws ``phi[c, f] ~ U[1/2 - informativeness/2, 1/2 + informativeness/2]`` independently
    (0: pure noise, 1: uniform on [0, 1])."""

    count: int
    informativeness: float = 0.5
    probabilities: tuple[tuple[float, ...], ...] | None = None


@dataclass(frozen=True)
class TiersSpec:
    """Qualification tiers: a worker's tier is the number of ``cuts`` at or below a noisy
    observation ``ability + N(0, noise²)`` of their hidden accuracy; each label costs
    ``prices[tier]``."""

    cuts: tuple[float, ...]
    noise: float
    prices: tuple[float, ...]


@dataclass(frozen=True)
class GoldSpec:
    """Gold (control) questions: ``count`` questions with known classes, drawn from the class
    prior; an arriving worker gets one with probability ``rate``; their answers enter the EM
    fit with the classes clamped when ``in_inference``."""

    count: int
    rate: float = 0.0
    in_inference: bool = True


@dataclass(frozen=True)
class BlockingSpec:
    """Block a worker whose gold accuracy is below ``min_accuracy`` after ``after`` or more
    gold answers."""

    after: int
    min_accuracy: float


@dataclass(frozen=True)
class WorkersSpec:
    """The worker pool: size, answer model, abilities, arrivals and labelling time."""

    count: int
    model: str = "one-coin"
    ability: AbilitySpec = field(default_factory=AbilitySpec)
    arrival_rate: float = 1.0
    service_mean: float = 0.0
    confusion: ConfusionSpec = field(default_factory=ConfusionSpec)
    hammer_fraction: float = 0.3
    gaussian_scores: GaussianScoresSpec = field(default_factory=GaussianScoresSpec)
    #: Labels (gold included) a worker gives at most; ``None`` = unlimited.
    capacity: int | None = field(default=None, metadata=_OPTIONAL)
    #: Mean labels (gold included) before a worker leaves for good (geometric); ``None`` = never.
    session_mean: float | None = field(default=None, metadata=_OPTIONAL)
    #: Flat price of a label, or per-tier prices (``tiers``).
    price: float = field(default=1.0, metadata=_OPTIONAL)
    tiers: TiersSpec | None = field(default=None, metadata=_OPTIONAL)

    @property
    def facts(self) -> WorkerModelFacts:
        """What the worker model is: class labels or scores, headline error, methods."""
        return WORKER_MODEL_FACTS[self.model]


@dataclass(frozen=True)
class TasksSpec:
    """The tasks: how many, how many classes, and the class prior (class 1 first).

    Continuous markets have ``classes = 1`` and ``means`` set; ``features`` is ``None`` when the
    tasks carry no features."""

    count: int
    classes: int = 2
    prior: tuple[float, ...] = ()
    means: TaskMeansSpec | None = None
    features: FeaturesSpec | None = None


@dataclass(frozen=True)
class BudgetSpec:
    """Total labels (initial ones included), the initial graph and the refresh batch."""

    edges: int
    initial: str = "one-per-task"
    batch: int = 100
    initial_probability: float = 0.2
    #: Money to spend at most (gold included); ``None`` = only ``edges`` limits the run.
    money: float | None = field(default=None, metadata=_OPTIONAL)
    #: The platform's fee, a fraction added to every payment (gold included).
    fee: float = field(default=0.0, metadata=_OPTIONAL)
    #: The platform's minimum price of a label (checked against the workers' prices).
    min_price: float | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True)
class PolicySpec:
    """A policy by registry name or ``module:Class`` import path, plus its keyword options.

    ``cls`` is the class that runs, resolved once when the spec is made: the registry's class
    for a built-in name, the imported class for an import path parsed with imports allowed,
    ``None`` for an import path parsed without (``validate`` checks only its shape). ``obj``
    is a policy object given in Python (``name`` is then its class name): every unit runs a
    fresh deep copy of it, so units stay independent whatever the number of jobs."""

    name: str
    options: tuple[tuple[str, Any], ...] = field(default=(), metadata=_PAIRS)
    cls: type | None = field(default=None, compare=False, repr=False, metadata=_RESOLVED)
    obj: Any = field(default=None, compare=False, repr=False, metadata=_RESOLVED)

    def __post_init__(self) -> None:
        if self.cls is None and self.name in POLICIES:
            object.__setattr__(self, "cls", POLICIES[self.name])

    def build(self, *, allow_imports: bool = False, source: str | None = None
              ) -> AssignmentPolicy:
        """A fresh policy object with this spec's options (an import path not resolved yet
        is imported now, if allowed; a policy object is deep-copied)."""
        if self.obj is not None:
            return copy.deepcopy(self.obj)
        cls = self.cls
        if cls is None:
            cls = policy_class(self.name, allow_imports=allow_imports, source=source)
        return instantiate(cls, self.name, dict(self.options), source=source)

    @property
    def resolved(self) -> bool:
        """The class is known (a built-in policy, or an import path imported at parse)."""
        return self.cls is not None

    def require_class(self, source: str | None) -> None:
        """Raise the one-line error of an import path that was not allowed to be imported."""
        if self.cls is None:
            raise InputError(
                f"policy {self.name!r} is an import path and would run outside code; "
                "pass --allow-imports if you trust this scenario", source=source)


@dataclass(frozen=True)
class ArmSpec:
    """One arm of the study: a policy paired with an inference service."""

    name: str
    policy: PolicySpec
    inference: InferenceSpec
    #: Initial graph of this arm (``None``: the scenario's ``budget.initial``).
    initial: str | None = None
    #: This arm's own gold questions and blocking rule (``None``: the scenario's).
    gold: GoldSpec | None = field(default=None, metadata=_OPTIONAL)
    blocking: BlockingSpec | None = field(default=None, metadata=_OPTIONAL)

    def initial_graph(self, budget: BudgetSpec) -> str:
        """The initial graph this arm starts from."""
        return budget.initial if self.initial is None else self.initial

    def market_scenario(self, scenario: Scenario) -> Scenario:
        """The scenario as this arm's market runs it: with the arm's own gold questions and
        blocking rule in place of the scenario's, when it has them."""
        if self.gold is None and self.blocking is None:
            return scenario
        return replace(scenario, gold=self.gold or scenario.gold,
                       blocking=self.blocking or scenario.blocking)


@dataclass(frozen=True)
class OutputSpec:
    """Recording options: keep the networkx task–worker graph, export it as GraphML."""

    graph: bool = True
    graphml: bool = False


@dataclass(frozen=True)
class Scenario:
    """A fully validated scenario."""

    name: str
    seed: int
    replicates: int
    tasks: TasksSpec
    workers: WorkersSpec
    budget: BudgetSpec
    arms: tuple[ArmSpec, ...]
    output: OutputSpec = field(default_factory=OutputSpec)
    source: str = "<scenario>"
    #: ``[sweep]`` grid: (dotted key, values) pairs; empty for a single study.
    sweep: tuple[tuple[str, tuple[Any, ...]], ...] = field(default=(), metadata=_PAIRS)
    #: The grid point this scenario is, as (dotted key, value) pairs (empty if not a point).
    sweep_point: tuple[tuple[str, Any], ...] = field(default=(), metadata=_PAIRS)
    #: Real-data replay (``[replay]``), or ``None`` for a simulated crowd.
    replay: ReplaySpec | None = None
    #: The decoded TOML document, kept so a sweep can expand it.
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    #: Import-path policies were imported at parse (``--allow-imports``); sweep points too.
    allow_imports: bool = field(default=False, compare=False, repr=False, metadata=_RESOLVED)
    #: Gold (control) questions and the blocking rule (``None``: off).
    gold: GoldSpec | None = field(default=None, metadata=_OPTIONAL)
    blocking: BlockingSpec | None = field(default=None, metadata=_OPTIONAL)

    @property
    def worker_model(self) -> WorkerModelFacts:
        """The worker model's facts: whether labels are scores (Hoiem's bad-annotator model:
        score methods, RMSE as the headline error) or classes."""
        return self.workers.facts

    @property
    def max_labels(self) -> int:
        """The most labels (gold included) a unit can buy: ``budget.edges``, or fewer when the
        money budget pays for fewer at the cheapest price (what memory scales with)."""
        edges = self.budget.edges
        if self.budget.money is None:
            return edges
        wk = self.workers
        cheapest = min(wk.tiers.prices) if wk.tiers is not None else wk.price
        return min(edges, int(self.budget.money * (1 + 1e-12) // (cheapest
                                                                   * (1.0 + self.budget.fee))))

    @property
    def slug(self) -> str:
        """File-system friendly name, at most ``MAX_SLUG`` characters."""
        slug = re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")
        return slug[:MAX_SLUG].rstrip("-") or "scenario"

    def with_overrides(self, *, replicates: int | None = None, seed: int | None = None) -> Scenario:
        """A copy with command-line overrides applied."""
        return replace(
            self,
            replicates=self.replicates if replicates is None else replicates,
            seed=self.seed if seed is None else seed,
        )

    def to_dict(self) -> dict[str, Any]:
        """Resolved parameters (defaults included), for ``validate`` and ``summary.json``."""
        return _as_dict(self)


def _as_dict(obj: Any) -> Any:
    if isinstance(obj, InferenceSpec):
        return _as_dict(obj.as_record())
    if hasattr(obj, "__dataclass_fields__"):
        return {f.name: _pairs(getattr(obj, f.name)) if f.metadata.get("pairs")
                else _as_dict(getattr(obj, f.name)) for f in fields(obj)
                if not f.metadata.get("resolved")
                and not (f.metadata.get("omit_if_default")
                         and getattr(obj, f.name) == f.default)}
    if isinstance(obj, tuple):
        return [_as_dict(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _as_dict(v) for k, v in obj.items()}
    return obj


def _pairs(obj: tuple[tuple[str, Any], ...]) -> Any:
    """(key, value) pairs as a mapping (none: an empty array, as ``to_dict`` always wrote it,
    so run folders keep their fingerprints)."""
    return {k: _as_dict(v) for k, v in obj} if obj else []
