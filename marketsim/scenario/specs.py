"""The scenario, one typed model: :class:`Scenario` *is* the scenario file.

Each TOML table is a frozen pydantic spec (:mod:`~marketsim.scenario.crowd_specs`,
:mod:`~marketsim.scenario.market_specs`, :mod:`~marketsim.scenario.arm_specs`,
:mod:`~marketsim.scenario.replay`) with its keys, types, defaults, ranges and descriptions
declared once; the rules that span tables and the values that depend on other keys are the
model's validator (:mod:`marketsim.scenario.resolve`). Validating a decoded TOML document
gives the resolved scenario the market and the study read, never re-checking it; dumping it
(:meth:`Scenario.resolved_document`) writes the file back, defaults included. Build one with
:meth:`Scenario.from_document` (``parser.load_scenario`` for a file), which passes the file
name and whether import-path policies may be imported. Every scenario derived from another
(:meth:`~Scenario.replace`, :meth:`~Scenario.evolve`, :meth:`~Scenario.for_arm`, a sweep's
points...) is validated too: a change that breaks a rule is a one-line ``InputError`` naming
the key, never a scenario the market would run with a broken rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import BeforeValidator, PrivateAttr, ValidationInfo, model_validator

from marketsim.errors import InputError
from marketsim.options import F
from marketsim.scenario.arm_specs import ArmSpec
from marketsim.scenario.build import (
    apply_changes,
    changed_source,
    copy_doc,
    put_objects,
    split_objects,
)
from marketsim.scenario.crowd_specs import TasksSpec, Workers
from marketsim.scenario.machine_specs import Machine
from marketsim.scenario.market_specs import (
    BlockingSpec,
    BudgetSpec,
    GoldSpec,
    HeaderSpec,
    OutputSpec,
    ReportSpec,
)
from marketsim.scenario.mechanics import (
    BUDGET_KEYS,
    WORKER_KEYS,
    arm_mechanics,
    check_arm_blocking,
)
from marketsim.scenario.outline import StudyOutline
from marketsim.scenario.replay import ReplaySpec
from marketsim.scenario.resolve import resolve
from marketsim.scenario.sweep_keys import SweepGrid
from marketsim.scenario.validation import validate
from marketsim.tables import Table, _as_tuple
from marketsim.workers.base import Crowd, WorkerModel

#: Longest ``Scenario.slug`` (the run folder's name): long names must not break paths.
MAX_SLUG = 60


class Scenario(Table):
    """A whole scenario file.

    Validated and resolved: every key's default that depends on other keys is filled in."""

    scenario: HeaderSpec = F(HeaderSpec(), "name, seed, replicates", shown="see the table")
    replay: ReplaySpec | None = F(None, "real-data replay", shown="none")
    tasks: TasksSpec = F(None, "the tasks", shown="required unless [replay]")
    workers: Workers = F(None, "the worker pool", shown="required unless [replay]")
    budget: BudgetSpec = F(None, "labels to buy", shown="required unless [replay]")
    gold: GoldSpec | None = F(None, "gold (control) questions", shown="none")
    blocking: BlockingSpec | None = F(None, "the blocking rule", shown="none")
    machines: Annotated[tuple[Machine, ...], BeforeValidator(_as_tuple)] = F(
        (), "machine annotators a policy may ask beside the human crowd (an array of tables, "
        "one per machine)", shown="none")
    output: OutputSpec = F(OutputSpec(), "what is recorded", shown="see the table")
    report: ReportSpec | None = F(None, "what the reports show", shown="none")
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
    def worker_model(self) -> type[WorkerModel]:
        """The worker model, whose facts say whether labels are scores (score methods, RMSE
        as the headline error) or classes."""
        return self.workers.model_class

    @property
    def outline(self) -> StudyOutline:
        """Its name, arms, units, one unit's size and headline error: what the resource guard
        and the progress display read."""
        return StudyOutline(
            name=self.name, arms=tuple(arm.name for arm in self.arms),
            replicates=self.replicates, tasks=self.tasks.count, classes=self.tasks.classes,
            workers=self.workers.count, edges=self.budget.edges, labels=self.max_labels,
            graph=self.output.graph, metric=self.worker_model.metric, targets=self.targets,
            source=self.source)

    @property
    def crowd(self) -> Crowd:
        """What the worker model reads besides its own options: the tasks, the workers and
        the budget (a world's draw, gold items, a refit's measurement)."""
        return Crowd(self.tasks, self.workers, self.budget)

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

    # --- read and derived: every scenario is validated --------------------------------------
    @classmethod
    def from_document(cls, data: Mapping[str, Any], source: str = "<scenario>", *,
                      allow_imports: bool = False) -> Self:
        """Validate a decoded TOML document (or a dict of its layout) into a scenario; an arm
        may hold a policy object (``policy``) and an estimator object (``inference``), and is
        named after the object's class when it has no ``name``. With ``allow_imports``,
        import-path policies are imported now and their options checked against the class."""
        if not isinstance(data, Mapping):
            raise InputError("top level must be a table", source=source)
        doc = copy_doc(data)
        objects = split_objects(doc, source)
        out: Self = validate(cls, doc, source, context={
            "source": source, "allow_imports": allow_imports, "raw": doc})
        # the document as given (objects kept): a later ``replace`` validates it again
        raw = copy_doc(data) if objects else doc
        if objects:
            out = out.model_copy(update={"arms": put_objects(
                out.arms, objects, out.worker_model.scores, out.tasks.classes,
                out.replay is not None, source)})
            for idx in objects:
                raw["arms"][idx].setdefault("name", out.arms[idx].name)
        out._raw = raw
        return out

    def document(self) -> dict[str, Any]:
        """The scenario's document as given (policy and estimator objects kept), with its
        current name, seed and replicates: what :meth:`replace` changes and validates again."""
        doc = copy_doc(self.raw)
        head = doc.setdefault("scenario", {})
        head.update(name=self.name, seed=self.seed, replicates=self.replicates)
        return doc

    def replace(self, changes: Mapping[str, Any] | None = None, /, **more: Any) -> Self:
        """A copy with values changed, by dotted key or nested table, validated again as a
        file: ``replace({"workers.count": 50}, seed=3)``, ``replace(workers={"count": 50})``
        (a table is merged into the one there); an arm's keys as ``[sweep]`` names them,
        ``replace({"arms.adaptive.gold.rate": 0.2})`` or ``"arms[1].policy.n_trees"``.
        ``name``, ``seed`` and ``replicates`` are the ``[scenario]`` table's; ``arms``
        replaces every arm (see :meth:`with_arms`); ``sweep=None`` (or ``{}``) removes the
        ``[sweep]`` table (:meth:`without_sweep`), a ``sweep`` table is merged into it."""
        doc = apply_changes(self.document(), {**(changes or {}), **more},
                            [arm.name for arm in self.arms], type(self), self.source)
        return self.from_document(doc, changed_source(self.source),
                                  allow_imports=self.allow_imports)

    def without_sweep(self) -> Self:
        """A copy without the ``[sweep]`` table: the one study the grid varies, to run with
        :func:`marketsim.run` (each grid point is ``without_sweep().replace({key: value})``)."""
        return self.replace(sweep=None)

    def with_arms(self, *arms: Mapping[str, Any], keep: bool = False) -> Self:
        """A copy whose arms are ``arms`` (tables of the ``[[arms]]`` layout: name, policy,
        inference, initial), after the current ones with ``keep=True``."""
        current = list(self.document().get("arms", [])) if keep else []
        return self.replace(arms=[*current, *(copy_doc(a) for a in arms)])

    def evolve(self, *, name: str | None = None, seed: int | None = None,
               replicates: int | None = None,
               sweep_point: tuple[tuple[str, Any], ...] | None = None) -> Self:
        """A copy with ``[scenario]`` values or the grid point replaced; the values are checked
        as the file's are (a one-line error naming ``scenario.<key>``). The document it was
        read from is kept: it records how the study was written, the values what ran."""
        header = {k: v for k, v in (("name", name), ("seed", seed),
                                    ("replicates", replicates)) if v is not None}
        out = self
        if header:
            validate(HeaderSpec, header, self.source, prefix=("scenario",))
            if name is not None and not name.strip():
                raise InputError("scenario.name must not be empty", source=self.source)
            out = self.model_copy(update={"scenario": self.scenario.model_copy(update=header)})
        if sweep_point is not None:
            if not all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str)
                       for p in sweep_point):
                raise InputError("a sweep point is (dotted key, value) pairs, got "
                                 f"{sweep_point!r}"[:200], source=self.source)
            out = out.model_copy() if out is self else out
            out._sweep_point = sweep_point
        return out

    def with_overrides(self, *, replicates: int | None = None, seed: int | None = None) -> Self:
        """A copy with command-line overrides applied (checked as the file's values are)."""
        return self.evolve(replicates=replicates, seed=seed)

    def resolve_imports(self, allow_imports: bool) -> Self:
        """The scenario ready to run: its import-path policies imported and the scenario
        validated with them (:meth:`with_imports`), or the one-line "pass --allow-imports"
        error when that is not allowed. ``run`` calls this before it creates anything."""
        if all(arm.policy.resolved for arm in self.arms):
            return self
        if not allow_imports:
            for arm in self.arms:
                arm.policy.require_class(self.source)
        return self.with_imports()

    def with_imports(self) -> Self:
        """A copy with its import-path policies imported, validated again as the file is with
        ``--allow-imports`` (options against the class, the class against the market); the
        recorded document, the overrides and the grid point are kept."""
        out = self.from_document(self.document(), self.source, allow_imports=True)
        out._raw, out._sweep_point = self._raw, self._sweep_point
        return out

    def for_arm(self, arm: ArmSpec) -> Self:
        """The scenario as ``arm``'s market runs it: with the arm's own gold questions and
        blocking rule in place of the scenario's, when it has them. An arm that is not one of
        the scenario's (checked with it) is checked as the file's arms are: its gold questions
        under the scenario's blocking rule must be enough for it."""
        if arm.gold is None and arm.blocking is None:
            return self
        if not any(arm is own for own in self.arms):  # its own arms were checked with it
            key = f"arm {arm.name!r}"
            arm_mechanics(arm, key, self.gold, self.replay is not None,
                          self.workers, self.source, arm.policy)
            check_arm_blocking(arm, key, self.blocking, self.source)
        return self.model_copy(update={"gold": arm.gold or self.gold,
                                       "blocking": arm.blocking or self.blocking})

    # --- written out ---------------------------------------------------------------------------
    def resolved_document(self) -> dict[str, Any]:
        """The scenario as a TOML document with every default filled in (``validate --toml``):
        feeding it back gives an equal scenario. Values the scenario took from elsewhere (a
        replay's sizes, a score market's single class) and tables or keys its worker model or
        confusion design does not read are left out, as a file must leave them out."""
        doc = self.model_dump(exclude_none=True)
        tasks, workers = doc["tasks"], doc["workers"]
        facts = self.workers.model_class
        if self.replay is not None:
            for table, key in (("tasks", "count"), ("tasks", "classes"), ("workers", "count")):
                doc[table].pop(key)
        if facts.scores:
            for key in ("classes", "prior"):
                tasks.pop(key, None)
        if facts.table is not None:  # the keys its variant (design, distribution) reads
            workers[facts.table] = self.workers.options.as_written()
        if self.workers.worker_model.ability_unread() is not None:
            workers.pop("ability")  # e.g. per-worker abilities replace the distribution
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
        if not self.machines:
            doc.pop("machines")
        else:
            doc["machines"] = [m.as_written() for m in self.machines]
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
