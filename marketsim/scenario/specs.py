"""The scenario, one typed model: :class:`Scenario` *is* the scenario file.

Each TOML table is a frozen pydantic spec (:mod:`~marketsim.scenario.crowd_specs`,
:mod:`~marketsim.scenario.market_specs`, :mod:`~marketsim.scenario.arm_specs`,
:mod:`~marketsim.scenario.replay`) with its keys, types, defaults, ranges and descriptions
declared once; the rules that span tables and the values that depend on other keys are the
model's validator (:mod:`marketsim.scenario.resolve`). Validating a decoded TOML document
gives the resolved scenario the market and the study read, never re-checking it; dumping it
(:meth:`Scenario.resolved_document`) writes the file back, defaults included. Build one with
:func:`marketsim.scenario.parser.parse_scenario` (or ``load_scenario``), which passes the file
name and whether import-path policies may be imported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import BeforeValidator, PrivateAttr, ValidationInfo, model_validator

from marketsim.options import F
from marketsim.scenario.arm_specs import ArmSpec
from marketsim.scenario.crowd_specs import TasksSpec, WorkersSpec
from marketsim.scenario.market_specs import (
    BlockingSpec,
    BudgetSpec,
    GoldSpec,
    HeaderSpec,
    OutputSpec,
    ReportSpec,
)
from marketsim.scenario.mechanics import BUDGET_KEYS, WORKER_KEYS
from marketsim.scenario.replay import ReplaySpec
from marketsim.scenario.resolve import import_policies, resolve
from marketsim.scenario.sweep_keys import SweepGrid
from marketsim.scenario.table import Table, _as_tuple
from marketsim.scenario.worker_models import (
    WORKER_MODEL_FACTS,
    WorkerModelFacts,
)

#: Longest ``Scenario.slug`` (the run folder's name): long names must not break paths.
MAX_SLUG = 60


class Scenario(Table):
    """A whole scenario file.

    Validated and resolved: every key's default that depends on other keys is filled in."""

    scenario: HeaderSpec = F(HeaderSpec(), "name, seed, replicates", shown="see the table")
    replay: ReplaySpec | None = F(None, "real-data replay", shown="none")
    tasks: TasksSpec = F(None, "the tasks", shown="required unless [replay]")
    workers: WorkersSpec = F(None, "the worker pool", shown="required unless [replay]")
    budget: BudgetSpec = F(None, "labels to buy", shown="required unless [replay]")
    gold: GoldSpec | None = F(None, "gold (control) questions", shown="none",
                              recorded_at_default=False)
    blocking: BlockingSpec | None = F(None, "the blocking rule", shown="none",
                                      recorded_at_default=False)
    output: OutputSpec = F(OutputSpec(), "what is recorded", shown="see the table")
    report: ReportSpec | None = F(None, "what the reports show", shown="none",
                                  recorded_at_default=False)
    arms: Annotated[tuple[ArmSpec, ...], BeforeValidator(_as_tuple)] = F(
        ..., "the arms, at least one", min_length=1)
    sweep: SweepGrid = F(
        (), "dotted keys of any scenario value (not scenario.name, scenario.replicates or "
        "an arm's name), an arm's keys as `\"arms.<arm name>.<key>\"` or "
        "`\"arms[<index>].<key>\"`, each with a non-empty array of values; every grid point "
        "is validated before anything runs, and a grid of more than 10,000 points is refused",
        shown="none")
    #: The file it was read from (errors name it; replay paths are relative to it).
    _source: str = PrivateAttr("<scenario>")
    #: The decoded TOML document, kept so a sweep can expand it and a run folder record it.
    _raw: Mapping[str, Any] = PrivateAttr(default_factory=dict)
    #: Import-path policies were imported (``--allow-imports``); sweep points are too.
    _allow_imports: bool = PrivateAttr(False)
    #: The grid point this scenario is, as (dotted key, value) pairs (empty if not a point).
    _sweep_point: tuple[tuple[str, Any], ...] = PrivateAttr(())

    @model_validator(mode="after")
    def _resolve(self, info: ValidationInfo) -> Self:
        context = info.context or {}
        for name, value in resolve(dict(self), type(self), context).items():
            object.__setattr__(self, name, value)  # settled once, while validating
        self._source = context.get("source", "<scenario>")
        self._allow_imports = bool(context.get("allow_imports", False))
        return self

    # --- what the file says, resolved --------------------------------------------------------
    @property
    def name(self) -> str:
        """The study's name (the file's name when ``[scenario] name`` is not given)."""
        return self.scenario.name

    @property
    def seed(self) -> int:
        """The root seed of every random stream."""
        return self.scenario.seed

    @property
    def replicates(self) -> int:
        """Independent worlds; every arm runs on each."""
        return self.scenario.replicates

    @property
    def source(self) -> str:
        """The file it was read from."""
        return self._source

    @property
    def raw(self) -> Mapping[str, Any]:
        """The decoded TOML document."""
        return self._raw

    @property
    def allow_imports(self) -> bool:
        """Import-path policies were imported when it was parsed."""
        return self._allow_imports

    @property
    def sweep_point(self) -> tuple[tuple[str, Any], ...]:
        """The grid point this scenario is (empty if it is not one)."""
        return self._sweep_point

    @property
    def targets(self) -> tuple[float, ...]:
        """``[report] targets``: the target errors the reports use, largest first, each once
        (empty: the standard 0.05 and 0.01)."""
        given = self.report.targets if self.report is not None else None
        return tuple(sorted(set(given or ()), reverse=True))

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
        paid = self.workers.cheapest_price * (1.0 + self.budget.fee)
        return min(edges, int(self.budget.money * (1 + 1e-12) // paid))

    @property
    def slug(self) -> str:
        """File-system friendly name, at most ``MAX_SLUG`` characters."""
        slug = re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")
        return slug[:MAX_SLUG].rstrip("-") or "scenario"

    # --- derived scenarios ---------------------------------------------------------------------
    def evolve(self, *, name: str | None = None, seed: int | None = None,
               replicates: int | None = None, raw: Mapping[str, Any] | None = None,
               sweep_point: tuple[tuple[str, Any], ...] | None = None,
               **tables: Any) -> Self:
        """A copy with ``[scenario]`` values, resolved tables (already valid: no check is run
        again), the decoded document or the grid point replaced."""
        header = {k: v for k, v in (("name", name), ("seed", seed),
                                    ("replicates", replicates)) if v is not None}
        if header:
            tables["scenario"] = self.scenario.model_copy(update=header)
        out = self.model_copy(update=tables)
        if raw is not None:
            out._raw = raw
        if sweep_point is not None:
            out._sweep_point = sweep_point
        return out

    def with_overrides(self, *, replicates: int | None = None, seed: int | None = None) -> Self:
        """A copy with command-line overrides applied."""
        return self.evolve(replicates=replicates, seed=seed)

    def with_imports(self) -> Self:
        """A copy with its import-path policies imported and their options checked."""
        out = self.evolve(arms=import_policies(self.arms, self.source))
        out._allow_imports = True
        return out

    def for_arm(self, arm: ArmSpec) -> Self:
        """The scenario as ``arm``'s market runs it: with the arm's own gold questions and
        blocking rule in place of the scenario's, when it has them."""
        if arm.gold is None and arm.blocking is None:
            return self
        return self.evolve(gold=arm.gold or self.gold, blocking=arm.blocking or self.blocking)

    # --- written out ---------------------------------------------------------------------------
    def resolved_document(self) -> dict[str, Any]:
        """The scenario as a TOML document with every default filled in (``validate --toml``):
        feeding it back gives an equal scenario. Values the scenario took from elsewhere (a
        replay's sizes, a score market's single class) and tables or keys its worker model or
        confusion design does not read are left out, as a file must leave them out."""
        doc = self.model_dump(exclude_none=True)
        tasks, workers = doc["tasks"], doc["workers"]
        facts = self.workers.facts
        if self.replay is not None:
            for table, key in (("tasks", "count"), ("tasks", "classes"), ("workers", "count")):
                doc[table].pop(key)
        if facts.scores:
            for key in ("classes", "prior"):
                tasks.pop(key, None)
            workers.pop("ability")
        for other in WORKER_MODEL_FACTS.values():  # only the model's own table, as it writes it
            if other.table is not None:
                workers.pop(other.table)
        if facts.table is not None:
            workers[facts.table] = getattr(self.workers, facts.table).document()
        if facts.table == "glad" and self.workers.glad.alpha is not None:
            workers.pop("ability")  # the per-worker abilities replace the distribution
        features = tasks.get("features")
        if features is not None and "probabilities" in features:
            features.pop("informativeness")
        # mechanics that are off are left out, as written: a replay or a score market
        # refuses them even at their defaults, and tiers replace the flat price
        for spec, written, keys in ((self.workers, workers, WORKER_KEYS),
                                    (self.budget, doc["budget"], BUDGET_KEYS)):
            for key in keys:
                if getattr(spec, key) == type(spec).model_fields[key].default:
                    written.pop(key, None)
        if self.workers.tiers is not None:
            workers.pop("price", None)
        if not self.sweep:
            doc.pop("sweep")
        return _plain(doc)

    def to_dict(self) -> dict[str, Any]:
        """The resolved scenario as plain JSON data (``validate --json``): the
        :meth:`resolved_document`, what ``run.json`` records and the run's fingerprint reads."""
        return _plain(self.resolved_document())


def _plain(obj: Any) -> Any:
    """Tuples as lists, all the way down (TOML and JSON have arrays)."""
    if isinstance(obj, tuple | list):
        return [_plain(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    return obj
