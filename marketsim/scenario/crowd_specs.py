"""The simulated crowd of a scenario: ``[tasks]`` and ``[workers]``, each table its own spec.

Rules within one table are the table's validators; rules across tables (a prior with one
entry per class, a replay's sizes, what a score market allows) are the scenario's
(:mod:`marketsim.scenario.resolve`). Keys whose default depends on other keys (``tasks.count``
from a replayed data set, the prior, ``workers.count``) are ``None`` as read and filled in when
the scenario is resolved: a :class:`~marketsim.scenario.specs.Scenario` never holds a ``None``
there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    create_model,
    model_validator,
)

from marketsim.aggregation.one_coin import MAX_PRIOR
from marketsim.errors import InputError
from marketsim.options import F
from marketsim.scenario.validation import printable, suggest, validate
from marketsim.tables import (
    FloatRows,
    Floats,
    KeyProblem,
    Table,
    bounded_floats,
    positive_weights,
    tagged_union,
)
from marketsim.workers.base import WorkerModel
from marketsim.workers.draws import MAX_DECK_CARDS
from marketsim.workers.dynamics import DynamicsSpec
from marketsim.workers.registry import DEFAULT_MODEL, WORKER_MODELS

ABILITY_DISTRIBUTIONS = ("shifted-beta",)
#: Bounds of ``workers.arrivals.rate``: simulated times stay far from float overflow (a rate of
#: 1e-308 would make inter-arrival times of 1e308 and the clock infinite).
MIN_RATE, MAX_RATE = 1e-6, 1e9
#: The range of a label's price (``workers.price``, a tier's, ``budget.min_price``): every
#: money figure stays finite (labels x price x (1 + fee) far below float overflow), and so
#: does what policies compute per unit of price (information per unit of price, at most 1e6
#: times the information itself).
MIN_PRICE, MAX_PRICE = 1e-6, 1e9
#: Tier prices: each in [:data:`MIN_PRICE`, :data:`MAX_PRICE`].
Prices = bounded_floats(ge=MIN_PRICE, le=MAX_PRICE)
#: One arrival weight per worker (a worker who never arrives would still count as one who may
#: work: leave them out of the pool instead).
ArrivalWeights = positive_weights(" (leave a worker who never arrives out of the pool)")


class TaskMeansSpec(Table):
    """``[tasks.means]`` (worker models whose labels are scores only)

    True task means ``mu_i ~ Beta(alpha, beta)``."""

    alpha: float = F(1.0, "true task means μᵢ ~ Beta(alpha, beta) on [0, 1]; 1, 1 is uniform",
                     gt=0, le=1e6)
    beta: float = F(1.0, "see alpha", gt=0, le=1e6)

    @property
    def mean(self) -> float:
        """``E[mu_i]``: the estimate a task without any score gets in the metrics."""
        return self.alpha / (self.alpha + self.beta)


class FeaturesSpec(Table):
    """``[tasks.features]`` (class markets without `[replay]`)

    ``count`` binary features per task, ``x_if ~ Bernoulli(phi[t_i, f])`` (Jin & Zhang 2010);
    ``probabilities`` fixes ``phi``, else every replicate draws it."""

    count: int = F(..., "k binary features per task (Jin & Zhang 2010), x_if ~ Bernoulli(φ[tᵢ, f]) "
                   "given the true class tᵢ", ge=1, le=1000)
    informativeness: float = F(0.5, "each replicate draws φ[c, f] ~ U[½ − informativeness/2, "
                               "½ + informativeness/2] per class and feature: 0 = pure noise, "
                               "1 = uniform on [0, 1]", ge=0, le=1)
    probabilities: FloatRows | None = F(
        None, "K arrays (one per class) of `count` numbers in [0, 1]: fixes φ; give this or "
        "`informativeness`, not both", shown="drawn (informativeness)")

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        probs = self.probabilities
        if probs is not None and "informativeness" in self.model_fields_set:
            raise KeyProblem("informativeness", "give either tasks.features.probabilities or "
                             "tasks.features.informativeness, not both")
        if probs is not None and any(len(row) != self.count for row in probs):
            raise KeyProblem("probabilities", f"must be arrays (one per class) of {self.count} "
                             "numbers each (one per feature)")
        if probs is not None and any(not 0 <= v <= 1 for row in probs for v in row):
            raise KeyProblem("probabilities", "entries must be probabilities in [0, 1]")
        return self


class TasksSpec(Table):
    """``[tasks]`` (required unless `[replay]`)

    How many, how many classes, the class prior (class 1 first). A score market has
    ``classes = 1`` and ``means`` set."""

    count: int = F(None, "number of tasks (from the data set with `[replay]`)",
                   shown="required", ge=1, le=50_000_000)
    classes: int = F(2, "K (not with a worker model of scores or `[replay]`)", ge=2, le=100)
    prior: Floats = F(None, "class prior, K numbers ≥ 0 summing to 1; class 1 (first entry) "
                      "is Maginnis & Gupta's t = +1 (not with a worker model of scores)",
                      shown="uniform (replay: the truth's)")
    means: TaskMeansSpec | None = F(None, "worker models of scores only: distribution of the true "
                                    "task means", shown="uniform")
    features: FeaturesSpec | None = F(None, "binary task features (not with "
                                      "a worker model of scores or `[replay]`)", shown="none")


class AbilitySpec(Table):
    """``[workers.ability]`` (not with a worker model of scores)

    Worker accuracy ``p = low + (1 - low)·Beta(alpha, beta)``."""

    distribution: Literal[ABILITY_DISTRIBUTIONS] = F(  # type: ignore[valid-type]
        "shifted-beta", "p = low + (1 − low)·Beta(alpha, beta)")
    alpha: float = F(6.0, "Beta parameter", gt=0, le=MAX_PRIOR)
    beta: float = F(2.0, "Beta parameter", gt=0, le=MAX_PRIOR)
    low: float = F(0.1, "lower end of the abilities", ge=0, lt=1)


class ArrivalsSpec(Table):
    """``[workers.arrivals]``"""

    rate: float = F(1.0, "Poisson arrivals per unit of simulated time; each arrival is a "
                    "uniformly chosen worker of the pool (a busy worker's arrival is lost)",
                    ge=MIN_RATE, le=MAX_RATE)
    weights: ArrivalWeights | None = F(  # type: ignore[valid-type]  # positive_weights
        None, "one weight > 0 per worker (workers.count numbers): an arrival is worker j with "
        "probability weight_j / sum, and so is each label of a `one-per-task` initial graph "
        "(who works a lot; `marketsim calibrate` writes each worker's labels, as a deck)",
        shown="uniform")
    order: Literal["independent", "deck"] = F(
        "independent", "who each arrival is: `independent` = drawn afresh by the weights; "
        "`deck` = the next card of a shuffled deck holding worker j `weights[j]` times "
        "(reshuffled when used up), so `weights` must be whole numbers (each worker's label "
        "count in a file): at that many labels each worker gives exactly their count, at "
        "fewer a hypergeometric thinning of it, as a draw of the file's own labels does; a "
        "`one-per-task` initial graph takes the deck's first cards")

    @model_validator(mode="after")
    def _deck(self) -> Self:
        if self.order != "deck":
            return self
        if self.weights is None:
            raise KeyProblem("order", "= \"deck\" needs workers.arrivals.weights (each "
                             "worker's label count, whole numbers >= 1)")
        if any(w != int(w) for w in self.weights):
            raise KeyProblem("order", "= \"deck\" needs whole-number workers.arrivals.weights "
                             "(each worker's label count), got a fraction")
        if sum(self.weights) > MAX_DECK_CARDS:
            raise KeyProblem("order", f"= \"deck\" holds sum(workers.arrivals.weights) = "
                             f"{sum(self.weights):,.0f} cards; at most {MAX_DECK_CARDS:,} "
                             "(each worker's label count: scale the weights down)")
        return self


class ServiceSpec(Table):
    """``[workers.service]``

    How long an answer takes (a busy worker's arrivals are lost; a slow worker holds up no
    one else) and whether it comes at all (abandonment)."""

    mean: float = F(0.0, "mean of the exponential labelling time; 0 = the answer arrives at "
                    "once", ge=0, le=1e9)
    speed_spread: float = F(0.0, "per-worker speed: worker j's labelling times have mean "
                            "mean·s_j, log s_j ~ N(−speed_spread²/2, speed_spread²) (mean 1), "
                            "drawn once per replicate and shared by every arm; 0 = every "
                            "worker equally fast", ge=0, le=10)
    abandon: float = F(0.0, "probability that a worker abandons a hand-out: they hold it for "
                       "its labelling time, then leave it unlabelled and unpaid, and the task "
                       "is handed out again (first to the next arriving worker who has not "
                       "held it)", ge=0, lt=1)

    @model_validator(mode="after")
    def _speeds(self) -> Self:
        if self.speed_spread > 0 and self.mean == 0:
            raise KeyProblem("speed_spread", "needs workers.service.mean > 0 (answers that "
                             "arrive at once have no speed)")
        return self


class TiersSpec(Table):
    """``[workers.tiers]``: qualification tiers with their prices (instead of `price`)

    A worker's tier is the number of ``cuts`` at or below a noisy observation ``ability +
    N(0, noise²)`` of their hidden accuracy; each label costs ``prices[tier]``."""

    cuts: Floats = F(..., "increasing accuracies cutting the observed ability into "
                     "len(cuts) + 1 tiers; tier = number of cuts ≤ ability + N(0, noise²), "
                     "drawn once per replicate and shared by every arm", min_length=1)
    noise: float = F(0.0, "standard deviation of the observation noise", ge=0, le=10)
    prices: Prices = F(  # type: ignore[valid-type]  # a bounded_floats alias
        ..., f"price of one label per tier, len(cuts) + 1 numbers in [{MIN_PRICE:g}, "
        f"{MAX_PRICE:g}]",
        min_length=2)

    @model_validator(mode="after")
    def _tiers(self) -> Self:
        cuts, prices = self.cuts, self.prices
        if any(b <= a for a, b in zip(cuts, cuts[1:], strict=False)):
            raise KeyProblem("cuts", f"must be strictly increasing, got {list(cuts)}")
        if len(prices) != len(cuts) + 1:
            raise KeyProblem("prices", f"must have len(cuts) + 1 = {len(cuts) + 1} entries "
                             f"(one per tier), got {len(prices)}")
        return self


#: The worker models' names, in the registry's order.
WORKER_MODEL_NAMES = tuple(WORKER_MODELS)


class WorkersSpec(Table):
    """``[workers]`` (required unless `[replay]`)

    The pool's size, answer model, abilities, arrivals, labelling time, and the worker-aware
    mechanics (capacity, sessions, prices). The keys every worker model shares; a scenario's
    ``[workers]`` is one model's variant of it (:data:`Workers`), which adds that model's
    table (``[workers.<table>]``, the model's ``Options``)."""

    count: int = F(None, "size of the worker pool (from the data set with `[replay]`)",
                   shown="required", ge=1, le=10_000_000)
    model: Literal[WORKER_MODEL_NAMES] = F(  # type: ignore[valid-type]
        DEFAULT_MODEL, "the worker model: how workers answer (`marketsim list` describes "
        "each; a model's own options are its table `[workers.<table>]`), or a "
        "`package.module:Class` import path of a `marketsim.workers.base.WorkerModel` "
        "subclass (runs only with `--allow-imports`)")
    ability: AbilitySpec = F(AbilitySpec(), "worker abilities", shown="see the table")
    arrivals: ArrivalsSpec = F(ArrivalsSpec(), "worker arrivals", shown="see the table")
    service: ServiceSpec = F(ServiceSpec(), "labelling time", shown="see the table")
    dynamics: DynamicsSpec | None = F(None, "learning, fatigue and drift of each worker's "
                                      "accuracy (class-label models)", shown="none")
    capacity: int | None = F(None, "labels (gold included) a worker gives at most; later "
                             "arrivals are skipped", shown="unlimited", ge=1, le=10_000_000_000)
    session_mean: float | None = F(None, "mean labels (gold included) before a worker leaves "
                                   "for good: after each hand-out they leave with probability "
                                   "1 / session_mean", shown="never", ge=1, le=1e12)
    price: float = F(1.0, "price of one label (gold included), the same for every worker; "
                     "or `[workers.tiers]`", ge=MIN_PRICE, le=MAX_PRICE)
    tiers: TiersSpec | None = F(None, "prices by qualification tier", shown="none")

    @model_validator(mode="before")
    @classmethod
    def _other_models_tables(cls, data: Any) -> Any:
        """A model's table given with another model: named as such (not as an unknown key)."""
        if isinstance(data, Mapping):
            chosen = data.get("model", DEFAULT_MODEL)
            for other in WORKER_MODELS.values():
                if other.table is not None and other.table in data and other.name != chosen:
                    raise KeyProblem(other.table, f"only applies with workers.model = "
                                     f"'{other.name}'")
        return data

    @model_validator(mode="after")
    def _model_tables(self) -> Self:
        given = self.model_fields_set
        unread = self.worker_model.ability_unread() if self.resolved else None
        if unread is not None and "ability" in given:
            raise KeyProblem("ability", unread)
        if self.tiers is not None and "price" in given:
            raise KeyProblem("price", "give either workers.price or [workers.tiers], not both")
        return self

    @property
    def resolved(self) -> bool:
        """The model's class is known (always, for a built-in model)."""
        return True

    @property
    def model_class(self) -> type[WorkerModel]:
        """The worker model: its facts (class labels or scores, headline error, methods)."""
        return WORKER_MODELS[self.model]

    @property
    def options(self) -> Table:
        """The model's own options (its table; an empty one for a model that takes none)."""
        cls = self.model_class
        return cls.Options() if cls.table is None else getattr(self, cls.table)

    @property
    def worker_model(self) -> WorkerModel:
        """The worker model with this table's options (draws worlds, answers, measures)."""
        return self.model_class(self.options)

    @property
    def cheapest_price(self) -> float:
        """The lowest price a label can cost (a tier's, or the flat price)."""
        return min(self.tiers.prices) if self.tiers is not None else self.price


def _variant(model: type[WorkerModel]) -> type[WorkersSpec]:
    """``[workers]`` with ``model = model.name``: the shared keys and the model's table."""
    fields: dict[str, Any] = {"model": (
        Literal[WORKER_MODEL_NAMES],  # every name: a wrong one is refused with a did-you-mean
        Field(model.name if model.default else ..., json_schema_extra={"const": model.name},
              description=f"`{model.name}`: {model.summary}"))}
    if model.table is not None:
        # like any key added after runs were recorded, a table not recorded for every model is
        # left out while at its defaults (run records and `validate --toml`)
        fields[model.table] = (model.Options, F(
            model.Options(), model.summary, shown="see the table"))
    return create_model(f"{model.__name__}Spec", __base__=WorkersSpec, __module__=__name__,
                        __doc__=WorkersSpec.__doc__, **fields)


class PluginWorkersSpec(WorkersSpec):
    """``[workers]`` with ``model = "package.module:Class"``: a worker model from outside
    marketsim, imported only with ``--allow-imports``

    Its own table (``[workers.<table>]``, the class's ``Options``) is checked once the class
    is imported, when the scenario is resolved (:meth:`with_class`): until then the table is
    kept as written. The class is held as the resolved scenario's, so every consumer reads its
    facts and words as a built-in model's."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True, allow_inf_nan=False,
                              defer_build=True)

    model: str = F(
        ..., "a `package.module:Class` import path of a subclass of "
        "`marketsim.workers.base.WorkerModel` (runs only with `--allow-imports`)",
        pattern=":")
    _cls: type[WorkerModel] | None = PrivateAttr(default=None)
    _options: Table | None = PrivateAttr(default=None)

    @property
    def resolved(self) -> bool:
        """The class was imported and its table checked."""
        return self._cls is not None

    @property
    def model_class(self) -> type[WorkerModel]:
        """The imported worker model."""
        assert self._cls is not None, f"{self.model!r} read before it was imported"
        return self._cls

    @property
    def options(self) -> Table:
        """The model's own options, checked against its ``Options`` when it was imported."""
        assert self._options is not None, f"{self.model!r} read before it was imported"
        return self._options

    def with_class(self, cls: type[WorkerModel], source: str) -> PluginWorkersSpec:
        """This table with its model imported: the keys besides the shared ones are the
        model's table, checked against its ``Options`` (one-line errors naming
        ``workers.<table>.<key>``), and the rules the model asks of the table applied."""
        given = dict(self.model_extra or {})
        shared = list(WorkersSpec.model_fields)
        if cls.table in shared:
            raise InputError(f"workers.model {self.model!r} names its table {cls.table!r}, "
                             "which is a key of [workers] itself; choose another", source=source)
        allowed = [*shared, *([cls.table] if cls.table else [])]
        for key in given:
            if key != cls.table:
                raise InputError(f"workers.{printable(key)} is not a known key (allowed here: "
                                 f"{', '.join(allowed)}){suggest(key, allowed)}", source=source)
        options = cls.Options() if cls.table is None else validate(
            cls.Options, given.get(cls.table, {}), source, ("workers", cls.table))
        # the table held as its options (two tables giving the same options are equal)
        spec = self.model_copy(update={cls.table: options} if cls.table else None)
        spec._cls, spec._options = cls, options
        unread = spec.worker_model.ability_unread()
        if unread is not None and "ability" in self.model_fields_set:
            raise InputError(f"workers.ability {unread}", source=source)
        return spec


#: Each model's ``[workers]`` variant, by model name.
WORKERS_VARIANTS: dict[str, type[WorkersSpec]] = {
    name: _variant(cls) for name, cls in WORKER_MODELS.items()}
# each variant is a name of this module, as a class statement would make it (pickle finds it
# there: scenarios travel to worker processes and Dask workers)
globals().update({v.__name__: v for v in WORKERS_VARIANTS.values()})


if TYPE_CHECKING:
    Workers = WorkersSpec
else:
    #: ``[workers]``: a union over the worker models' variants, discriminated by ``model``
    #: (the default model's when ``model`` is left out, or is not a model's name: that variant
    #: then refuses it with the list of names; :class:`PluginWorkersSpec` for an import path).
    Workers = tagged_union(WORKERS_VARIANTS, WORKERS_VARIANTS[DEFAULT_MODEL], "model",
                           plugin=PluginWorkersSpec)


def default_workers() -> WorkersSpec:
    """``[workers]`` at every default (a replayed crowd's): the default model's."""
    return WORKERS_VARIANTS[DEFAULT_MODEL]()
