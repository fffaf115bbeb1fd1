"""The rules of a scenario that span several tables, and the values that depend on other keys.

:class:`~marketsim.scenario.specs.Scenario` runs :func:`resolve` as its model validator, once
every table is valid on its own: a replay's sizes and prior, the class prior with one entry per
class, what a score market allows, the budget against the tasks and workers, the worker-aware
mechanics, each arm's policy and method resolved into what will run (checked against the
market), and the sweep's keys. Any problem is one :class:`~marketsim.errors.InputError` naming
the file and the dotted key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from marketsim.aggregation.estimator import Estimator
from marketsim.aggregation.registry import METHODS, method_class
from marketsim.errors import InputError
from marketsim.machines.base import MachineOptions
from marketsim.plugins import is_import_path
from marketsim.policies.base import PolicyClass
from marketsim.policies.registry import POLICIES, market_problem, policy_class
from marketsim.scenario.arm_specs import PolicySpec
from marketsim.scenario.crowd_specs import (
    PluginWorkersSpec,
    TaskMeansSpec,
    TasksSpec,
    WorkersSpec,
    default_workers,
)
from marketsim.scenario.engine import check_engine
from marketsim.scenario.inference_options import check_inference, read_settings
from marketsim.scenario.inference_spec import InferenceSpec
from marketsim.scenario.machine_specs import machines_problem
from marketsim.scenario.market_specs import BudgetSpec
from marketsim.scenario.mechanics import (
    arm_mechanics,
    check_arm_blocking,
    check_initial_graph,
    read_mechanics,
)
from marketsim.scenario.options import check_builds, check_options
from marketsim.scenario.replay import ReplayData, ReplaySpec, load_replay
from marketsim.scenario.sweep_keys import check_grid
from marketsim.scenario.validation import printable, suggest
from marketsim.workers.registry import WORKER_MODELS, worker_model_class


def _fail(key: str, message: str, source: str) -> InputError:
    return InputError(f"{printable(key)} {message}", source=source)


def resolve(doc: Mapping[str, Any], root: type[BaseModel], context: Mapping[str, Any]
            ) -> dict[str, Any]:
    """The resolved values of the scenario ``doc`` (its fields, each table valid on its own;
    ``root``: the scenario model, whose keys the sweep names). ``context``: ``source`` (the
    file, which errors name), ``allow_imports`` (import-path policies are imported now and
    their options checked against the class; an import-path worker model is imported now, and
    without it refused unless its module is already imported) and ``raw`` (the document as
    written)."""
    source = context.get("source", "<scenario>")
    allow_imports = bool(context.get("allow_imports", False))
    raw_arms = context.get("raw", {}).get("arms", [])
    header = doc["scenario"]
    name = Path(source).stem if header.name is None else header.name
    if not name.strip():
        raise _fail("scenario.name", "must not be empty", source)
    replay, data = _replay(doc["replay"], source)
    for table in ("tasks", "workers", "budget"):
        if replay is None and doc[table] is None:
            raise _fail(table, "is required (a table)", source)
    workers: WorkersSpec = doc["workers"] or default_workers()
    if isinstance(workers, PluginWorkersSpec):  # every rule below reads the model's facts
        workers = workers.with_class(worker_model_class(
            workers.model, allow_imports=allow_imports, source=source), source)
    tasks = _tasks(doc["tasks"] or TasksSpec(), workers, replay, data, source)
    workers = _workers(workers, data, source)
    problem = workers.worker_model.crowd_problem(tasks.classes, workers.count)
    if problem is not None:
        raise _fail(f"workers.{problem[0]}", problem[1], source)
    if doc["machines"] and workers.model_class.scores:
        raise _fail("machines", "needs a worker model of class labels (machines answer "
                    "classes)", source)
    problem = machines_problem(doc["machines"], tasks.classes)
    if problem is not None:
        raise _fail(*problem, source)
    budget = _budget(doc["budget"] or BudgetSpec(), tasks, workers, data, source)
    gold, blocking = read_mechanics(doc, workers, replay is not None, source)
    arms = []
    seen: set[str] = set()
    for idx, arm in enumerate(doc["arms"]):
        key = f"arms[{idx}]"
        if not arm.name.strip() or arm.name in seen:
            raise _fail(f"{key}.name", f"must be a unique, non-empty string, got {arm.name!r}",
                        source)
        seen.add(arm.name)
        as_table = idx < len(raw_arms) and isinstance(raw_arms[idx].get("policy"), Mapping)
        policy = _policy(arm.policy, f"{key}.policy", as_table, workers, tasks,
                         allow_imports, source)
        _policy_machines(policy, f"{key}.policy", as_table, doc["machines"], source)
        initial = arm.initial or budget.initial
        if hasattr(policy.cls, "machines_problem") and initial != "none":
            raise _fail(f"{key}.initial" if arm.initial else "budget.initial",
                        f"= {initial!r}: {policy.name!r} asks the models before any human label, "
                        "so its arm's initial graph must be 'none'", source)
        inference = _inference(arm.inference, f"{key}.inference", tasks, workers,
                               allow_imports, source)
        if arm.initial == "one-per-task" and budget.edges < tasks.count:
            raise _fail(f"{key}.initial", f"'one-per-task' needs budget.edges >= "
                        f"{tasks.count}", source)
        check_initial_graph(arm.initial or budget.initial,
                            f"{key}.initial" if arm.initial else "budget.initial", tasks.count,
                            workers, budget, source)
        arm_mechanics(arm, key, gold, replay is not None, workers, source, policy)
        check_arm_blocking(arm, key, blocking, source)
        arms.append(arm.model_copy(update={"policy": policy, "inference": inference}))
    check_engine(doc, workers, arms, source)
    check_grid(doc["sweep"], [arm.name for arm in arms], root, source)
    return {"scenario": header.model_copy(update={"name": name}), "replay": replay,
            "tasks": tasks, "workers": workers, "budget": budget, "arms": tuple(arms)}


def _replay(spec: ReplaySpec | None, source: str) -> tuple[ReplaySpec | None,
                                                           ReplayData | None]:
    """``[replay]`` with its paths relative to the scenario file, and its data, loaded (once
    per process) so sizes and budget can be checked now."""
    if spec is None:
        return None, None
    spec = spec.relative_to(Path(source).absolute().parent)
    return spec, load_replay(spec)


def _prior(value: tuple[float, ...] | None, key: str, k: int, default: tuple[float, ...],
           source: str) -> tuple[float, ...]:
    """K probabilities summing to 1 (entries are finite numbers, checked by the table)."""
    value = default if value is None else value
    if len(value) != k:
        raise _fail(key, f"must have {k} entries (one per class), got {len(value)}", source)
    if any(v < 0 for v in value):
        raise _fail(key, f"entries must be >= 0, got {list(value)!r}", source)
    if abs(sum(value) - 1.0) > 1e-6:
        raise _fail(key, f"must sum to 1, got {sum(value):.6g}", source)
    return tuple(float(v) for v in value)


def _tasks(tk: TasksSpec, workers: WorkersSpec, replay: ReplaySpec | None,
           data: ReplayData | None, source: str) -> TasksSpec:
    given, scores = tk.model_fields_set, workers.model_class.scores
    model = f"workers.model = {workers.model!r}"
    if scores:
        if replay is not None:
            raise _fail("workers.model", f"{workers.model!r} is not available with [replay]",
                        source)
        for key in ("classes", "prior"):
            if key in given:
                raise _fail(f"tasks.{key}", f"does not apply with {model} (tasks have "
                            "continuous means, see tasks.means)", source)
    elif tk.means is not None:
        raise _fail("tasks.means", f"only applies with workers.model = {_score_models()}", source)
    if data is None:
        if tk.count is None:
            raise _fail("tasks.count", "is required", source)
        count, classes = tk.count, 1 if scores else tk.classes
    else:
        count, classes = data.labels.n_tasks, max(data.labels.n_classes, 2)
        for key in ("count", "classes"):
            if key in given:
                raise _fail(f"tasks.{key}", "comes from the replayed data set; remove it",
                            source)
    default_prior = (1.0 / classes,) * classes
    if data is not None:
        known = data.truth[data.truth >= 0]
        freq = np.bincount(known, minlength=classes) / max(known.size, 1)
        default_prior = tuple(float(x) for x in freq) if known.size else default_prior
    prior = _prior(tk.prior, "tasks.prior", classes, default_prior, source)
    _features(tk, classes, model if scores else "", replay is not None, source)
    means = (tk.means or TaskMeansSpec()) if scores else None
    return tk.model_copy(update={"count": count, "classes": classes, "prior": prior,
                                 "means": means})


def _features(tk: TasksSpec, k: int, scores_model: str, replay: bool, source: str) -> None:
    """``[tasks.features]`` fits the market: class labels (``scores_model``: the
    ``workers.model = ...`` of a score market, else ""), simulated, one row per class."""
    ft = tk.features
    if ft is None:
        return
    if scores_model:
        raise _fail("tasks.features", f"needs class labels; it does not apply with "
                    f"{scores_model}", source)
    if replay:
        raise _fail("tasks.features", "is not available with [replay] (the data set has none)",
                    source)
    if ft.probabilities is not None and len(ft.probabilities) != k:
        raise _fail("tasks.features.probabilities", f"must be {k} arrays (one per class) of "
                    f"{ft.count} numbers (one per feature)", source)


def _workers(wk: WorkersSpec, data: ReplayData | None, source: str) -> WorkersSpec:
    if data is None:
        if wk.count is None:
            raise _fail("workers.count", "is required", source)
    elif "count" in wk.model_fields_set:
        raise _fail("workers.count", "comes from the replayed data set; remove it", source)
    else:
        wk = wk.model_copy(update={"count": data.labels.n_workers})
    if wk.dynamics is not None and (not wk.model_class.allows_dynamics or data is not None):
        raise _fail("workers.dynamics", "needs simulated class labels: it does not apply with "
                    + ("[replay]" if data is not None else f"workers.model = {wk.model!r}"),
                    source)
    weights = wk.arrivals.weights
    if weights is not None and len(weights) != wk.count:
        raise _fail("workers.arrivals.weights", f"must have workers.count = {wk.count} entries "
                    f"(one per worker), got {len(weights)}", source)
    return wk


def _score_models() -> str:
    """The worker models whose labels are scores, as ``'a' or 'b'``."""
    return " or ".join(repr(name) for name, cls in WORKER_MODELS.items() if cls.scores)


def _budget(bg: BudgetSpec, tasks: TasksSpec, workers: WorkersSpec, data: ReplayData | None,
            source: str) -> BudgetSpec:
    count, wcount = tasks.count, workers.count
    available = count * wcount if data is None else data.labels.n_labels
    if bg.edges is None and data is None:
        raise _fail("budget.edges", "is required", source)
    edges = available if bg.edges is None else bg.edges
    if bg.initial == "one-per-task" and edges < count:
        raise _fail("budget.edges", f"must be >= tasks.count ({count}) with initial = "
                    "'one-per-task'", source)
    if data is not None and edges > available:
        raise _fail("budget.edges", f"must be <= {available}, the labels in the replayed data "
                    "set", source)
    if edges > count * wcount:
        raise _fail("budget.edges", f"must be <= tasks.count x workers.count = "
                    f"{count * wcount} (a worker labels a task at most once)", source)
    if data is not None and bg.initial == "bernoulli":
        raise _fail("budget.initial", "'bernoulli' is not available with [replay]", source)
    return bg if bg.edges == edges else bg.model_copy(update={"edges": edges})


def _policy(spec: PolicySpec, key: str, as_table: bool, workers: WorkersSpec,
            tasks: TasksSpec, allow_imports: bool, source: str) -> PolicySpec:
    """The arm's policy (a built-in one's options were checked by its variant of the table,
    an import path's are checked now, once imported) fitting the market (``as_table``: the
    file gives a table, whose ``name`` key errors name)."""
    name, options = spec.name, spec.options
    name_key = f"{key}.name" if as_table else key
    if name in POLICIES:
        cls = POLICIES[name]
    elif allow_imports:
        cls = policy_class(name, allow_imports=True, source=source)
        check_options(cls, name, options, key, source)
    else:
        return spec
    problem = market_problem(cls, workers.model_class.scores, tasks.classes, options)
    if problem:
        raise _fail(name_key, f"{name!r} {problem}", source)
    check_builds(cls, name, options, key, source)
    _crowd_counts(cls, options, key, workers, source)
    crowd_problem = getattr(cls, "crowd_problem", None)  # a plug-in may not subclass Policy
    across = None if crowd_problem is None else crowd_problem(
        cls.Options.model_validate(dict(options)), tasks.count, workers.count)
    if across is not None:
        raise _fail(f"{key}.{across[0]}", across[1], source)
    return spec.with_class(cls)


def _policy_machines(spec: PolicySpec, key: str, as_table: bool,
                     machines: Sequence[MachineOptions], source: str) -> None:
    """A policy that asks machine annotators (its ``machines_problem``) against the
    scenario's ``[[machines]]``: it needs some, and the machines its options name."""
    check = getattr(spec.cls, "machines_problem", None)
    if check is None or spec.cls is None:
        return
    problem = check(spec.cls.Options(**spec.options), tuple(m.name for m in machines))
    if problem is not None:
        option, sentence = problem
        raise _fail(key if option == "name" and not as_table else f"{key}.{option}", sentence,
                    source)


def _crowd_counts(cls: PolicyClass, options: Mapping[str, Any], key: str,
                  workers: WorkersSpec, source: str) -> None:
    """A policy's counts that the crowd must be able to give, defaults included: label counts
    per task (fact ``per_task_options``: a preset's overlaps, a quorum) at most
    ``workers.count``, since a task's labels come from distinct workers; a qualification tier
    (``tier_options``) at most the highest tier, since a tier nobody is in would admit
    everyone."""
    model = cls.Options
    n_tiers = 1 if workers.tiers is None else len(workers.tiers.prices)
    tiers_are = (f"the highest tier of [workers.tiers] is {n_tiers - 1}" if workers.tiers
                 is not None else "without [workers.tiers] every worker is in tier 0")
    limits = [(o, workers.count, "a task's labels come from distinct workers, and "
               f"workers.count = {workers.count}") for o in cls.per_task_options]
    limits += [(o, n_tiers - 1, tiers_are) for o in cls.tier_options]
    for option, most, reason in limits:
        field = model.model_fields[option]
        given = option in options
        value = options[option] if given else field.default
        if value > most:
            floor = next((m.ge for m in field.metadata if getattr(m, "ge", None) is not None), 0)
            raise _fail(f"{key}.{option}", f"= {value}{'' if given else ' (its default)'} must "
                        f"be between {floor} and {most}: {reason}", source)


def _method(spec: InferenceSpec | None, key: str, workers: WorkersSpec, allow_imports: bool,
            source: str) -> tuple[str, type[Estimator]]:
    """The method name and class, checked against the worker model: score methods
    (``gaussian-em``, ``gaussian-hard-em``) when its labels are scores, class methods for
    every other one; an import path's class (imported with ``allow_imports``) likewise, by
    what it estimates (its ``output``)."""
    facts = workers.model_class
    allowed = facts.methods
    method = facts.default_method if spec is None or spec.method is None else spec.method
    if method in allowed:
        return method, METHODS[method]
    cls = METHODS.get(method)
    if cls is None and is_import_path(method):
        cls = method_class(method, allow_imports=allow_imports, source=source, key=key)
        if (cls.output == "scores") == facts.scores:
            return method, cls
    if cls is not None and facts.scores:
        raise _fail(key, f"{method!r} estimates classes, but workers.model = {facts.name!r} "
                    f"gives continuous scores; use one of {', '.join(allowed)}", source)
    if cls is not None:
        raise _fail(key, f"{method!r} estimates continuous scores and needs workers.model = "
                    f"{_score_models()}; use one of {', '.join(allowed)}", source)
    raise _fail(key, f"must be one of {', '.join(allowed)}; got {method!r}"
                f"{suggest(method, allowed)}", source)


def _inference(spec: InferenceSpec | None, key: str, tasks: TasksSpec, workers: WorkersSpec,
               allow_imports: bool, source: str) -> InferenceSpec:
    """The arm's method and settings: each setting one the method takes (its ``Options``
    model), with a value its estimator accepts (see
    :mod:`marketsim.scenario.inference_options`)."""
    method, cls = _method(spec, f"{key}.method", workers, allow_imports, source)
    settings = spec.settings if spec is not None else {}
    options = read_settings(method, settings, key, source)
    class_prior = getattr(options, "class_prior", None)
    if isinstance(class_prior, list):
        _prior(tuple(class_prior), f"{key}.class_prior", tasks.classes, (), source)
    resolved = InferenceSpec.resolved(method, options, entry=cls)
    check_inference(resolved, key, source, prior=tasks.prior, ability=workers.ability,
                    classes=tasks.classes)
    return resolved

