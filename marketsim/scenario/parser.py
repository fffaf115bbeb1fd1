"""Scenario files: TOML read with ``tomllib``, checked against the declared schema
(:mod:`marketsim.scenario.schema`), then turned into the frozen specs of
:mod:`marketsim.scenario.specs` with every check that needs several keys at once.

Any problem raises an :class:`~marketsim.errors.InputError` naming the file and the dotted key,
e.g. ``scenarios/x.toml: workers.ability.alpha must be > 0, got -1``. Method and policy names
are resolved here, once, into what will run (see ``InferenceSpec.entry``, ``PolicySpec.cls``).
See ``docs/scenarios.md``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.aggregation.registry import METHODS
from marketsim.data.datasets import replay_data_dir
from marketsim.errors import InputError
from marketsim.policies.registry import POLICIES, is_import_path, market_problem, policy_class
from marketsim.scenario.inference_options import check_inference, read_settings
from marketsim.scenario.mechanics import arm_mechanics, check_initial_graph, read_mechanics
from marketsim.scenario.options import check_builds, check_options
from marketsim.scenario.replay import ReplaySpec, load_replay
from marketsim.scenario.schema import (
    ArmTable,
    BudgetTable,
    FeaturesTable,
    InferenceTable,
    MeansTable,
    ScenarioDocument,
    TasksTable,
    WorkersTable,
)
from marketsim.scenario.specs import (
    CONFUSION_DESIGN_KEYS,
    WORKER_MODEL_FACTS,
    AbilitySpec,
    ArmSpec,
    BudgetSpec,
    ConfusionSpec,
    FeaturesSpec,
    GaussianScoresSpec,
    InferenceSpec,
    OutputSpec,
    PolicySpec,
    Scenario,
    TaskMeansSpec,
    TasksSpec,
    WorkersSpec,
)
from marketsim.scenario.sweep_keys import read_sweep
from marketsim.scenario.validation import printable, suggest, validate


def _fail(key: str, message: str, source: str) -> InputError:
    return InputError(f"{printable(key)} {message}", source=source)


def _prior(value: list[float] | None, key: str, k: int, default: list[float],
           source: str) -> tuple[float, ...]:
    """K probabilities summing to 1 (entries are finite numbers, checked by the schema)."""
    value = default if value is None else value
    if len(value) != k:
        raise _fail(key, f"must have {k} entries (one per class), got {len(value)}", source)
    if any(v < 0 for v in value):
        raise _fail(key, f"entries must be >= 0, got {value!r}", source)
    if abs(sum(value) - 1.0) > 1e-6:
        raise _fail(key, f"must sum to 1, got {sum(value):.6g}", source)
    return tuple(float(v) for v in value)


def _read_policy(arm: ArmTable, key: str, scores: bool, k: int, allow_imports: bool,
                 source: str) -> PolicySpec:
    """The arm's policy: a known name or an import path, options checked, fitting the market."""
    if isinstance(arm.policy, str):
        name, options, name_key = arm.policy, {}, key
    else:
        name, options = arm.policy.name, dict(arm.policy.model_extra or {})
        name_key = f"{key}.name"
    if name not in POLICIES and not is_import_path(name):
        raise _fail(name_key, f"must be one of {', '.join(POLICIES)} or a "
                    f"'package.module:Class' path; got {name!r}{suggest(name, list(POLICIES))}",
                    source)
    cls = None
    if name in POLICIES:
        problem = market_problem(name, scores, k)
        if problem:
            raise _fail(name_key, f"{name!r} {problem}", source)
        check_options(POLICIES[name], name, options, key, source)
        check_builds(POLICIES[name], name, options, key, source)
    elif allow_imports:
        cls = policy_class(name, allow_imports=True, source=source)
        check_options(cls, name, options, key, source)
        check_builds(cls, name, options, key, source)
    return PolicySpec(name, tuple(sorted(options.items())), cls)


def _read_method(inf: InferenceTable, key: str, workers: WorkersSpec, source: str) -> str:
    """The method name, checked against the worker model: score methods (``gaussian-em``,
    ``gaussian-hard-em``) when its labels are scores, class methods for every other one."""
    allowed = workers.facts.methods
    method = inf.method or workers.facts.default_method
    if method in allowed:
        return method
    if method in METHODS and workers.facts.scores:
        raise _fail(key, f"{method!r} estimates classes, but workers.model = 'gaussian-scores' "
                    f"gives continuous scores; use one of {', '.join(allowed)}", source)
    if method in METHODS:
        raise _fail(key, f"{method!r} estimates continuous scores and needs workers.model = "
                    f"'gaussian-scores'; use one of {', '.join(allowed)}", source)
    raise _fail(key, f"must be one of {', '.join(allowed)}; got {method!r}"
                f"{suggest(method, allowed)}", source)


def _read_inference(arm: ArmTable, key: str, tasks: TasksSpec, workers: WorkersSpec,
                    source: str) -> InferenceSpec:
    """The arm's method and settings: each setting one the method takes (its ``Options``
    model), with a value its estimator accepts (see
    :mod:`marketsim.scenario.inference_options`)."""
    raw = arm.inference
    inf = InferenceTable(method=raw) if isinstance(raw, str) else raw or InferenceTable()
    method = _read_method(inf, f"{key}.method", workers, source)
    options = read_settings(method, dict(inf.model_extra or {}), key, source)
    class_prior = getattr(options, "class_prior", None)
    if isinstance(class_prior, list):
        _prior(class_prior, f"{key}.class_prior", tasks.classes, class_prior, source)
    spec = InferenceSpec(method, options, METHODS[method])
    check_inference(spec, key, source, prior=tasks.prior, ability=workers.ability,
                    classes=tasks.classes)
    return spec


def _read_features(ft: FeaturesTable | None, k: int, scores: bool, replay: bool,
                   source: str) -> FeaturesSpec | None:
    """``[tasks.features]``: binary task features with class-conditional probabilities."""
    if ft is None:
        return None
    if scores:
        raise _fail("tasks.features", "needs class labels; it does not apply with "
                    "workers.model = 'gaussian-scores'", source)
    if replay:
        raise _fail("tasks.features", "is not available with [replay] (the data set has none)",
                    source)
    probs = ft.probabilities
    key = "tasks.features.probabilities"
    if probs is not None and "informativeness" in ft.model_fields_set:
        raise _fail("tasks.features.informativeness", "give either " + key + " or "
                    "tasks.features.informativeness, not both", source)
    if probs is None:
        return FeaturesSpec(ft.count, ft.informativeness, None)
    if len(probs) != k or any(len(r) != ft.count for r in probs):
        raise _fail(key, f"must be {k} arrays (one per class) of {ft.count} numbers (one per "
                    "feature)", source)
    if any(not 0 <= v <= 1 for r in probs for v in r):
        raise _fail(key, "entries must be probabilities in [0, 1]", source)
    return FeaturesSpec(ft.count, ft.informativeness, tuple(tuple(r) for r in probs))


def _read_tasks(tk: TasksTable, scores: bool, replay: ReplaySpec | None, replay_data: Any,
                source: str) -> TasksSpec:
    given = tk.model_fields_set
    if scores:
        if replay is not None:
            raise _fail("workers.model", "'gaussian-scores' is not available with [replay]",
                        source)
        for key in ("classes", "prior"):
            if key in given:
                raise _fail(f"tasks.{key}", "does not apply with workers.model = "
                            "'gaussian-scores' (tasks have continuous means, see tasks.means)",
                            source)
    elif tk.means is not None:
        raise _fail("tasks.means", "only applies with workers.model = 'gaussian-scores'",
                    source)
    if replay_data is None:
        if tk.count is None:
            raise _fail("tasks.count", "is required", source)
        count, classes = tk.count, 1 if scores else tk.classes
    else:
        count, classes = replay_data.labels.n_tasks, max(replay_data.labels.n_classes, 2)
        for key in ("count", "classes"):
            if key in given:
                raise _fail(f"tasks.{key}", "comes from the replayed data set; remove it",
                            source)
    default_prior = [1.0 / classes] * classes
    if replay_data is not None:
        known = replay_data.truth[replay_data.truth >= 0]
        freq = np.bincount(known, minlength=classes) / max(known.size, 1)
        default_prior = [float(x) for x in freq] if known.size else default_prior
    prior = _prior(tk.prior, "tasks.prior", classes, default_prior, source)
    means = None
    if scores:
        mn = tk.means or MeansTable()
        means = TaskMeansSpec(mn.alpha, mn.beta)
    features = _read_features(tk.features, classes, scores, replay is not None, source)
    return TasksSpec(count, classes, prior, means, features)


def _read_workers(wk: WorkersTable, replay_data: Any, source: str) -> WorkersSpec:
    given = wk.model_fields_set
    if replay_data is None:
        if wk.count is None:
            raise _fail("workers.count", "is required", source)
        wcount = wk.count
    else:
        wcount = replay_data.labels.n_workers
        if "count" in given:
            raise _fail("workers.count", "comes from the replayed data set; remove it", source)
    model = wk.model
    if WORKER_MODEL_FACTS[model].scores and "ability" in given:
        raise _fail("workers.ability", "does not apply with workers.model = 'gaussian-scores' "
                    "(see workers.gaussian_scores)", source)
    cf = wk.confusion
    for design, keys in CONFUSION_DESIGN_KEYS.items():
        wrong = [k for k in keys if k in cf.model_fields_set and cf.design != design]
        if wrong:
            raise _fail(f"workers.confusion.{wrong[0]}", f"applies only to design "
                        f"'{design}', not {cf.design!r}", source)
    if cf.high < cf.low:
        raise _fail("workers.confusion.high", f"must be >= workers.confusion.low ({cf.low:g})",
                    source)
    for table, needs in (("confusion", "confusion"), ("spammer_hammer", "spammer-hammer"),
                         ("gaussian_scores", "gaussian-scores")):
        if model != needs and table in given:
            raise _fail(f"workers.{table}", f"only applies with workers.model = '{needs}'",
                        source)
    ab, gs = wk.ability, wk.gaussian_scores
    return WorkersSpec(
        wcount, model, AbilitySpec(ab.distribution, ab.alpha, ab.beta, ab.low),
        wk.arrivals.rate, wk.service.mean,
        ConfusionSpec(cf.design, cf.low, cf.high, cf.concentration, cf.diagonal_weight),
        wk.spammer_hammer.hammer_fraction, GaussianScoresSpec(gs.good_fraction, gs.sigma),
    )


def _read_budget(doc: ScenarioDocument, tasks: TasksSpec, workers: WorkersSpec,
                 replay_data: Any, source: str) -> BudgetSpec:
    bg = doc.budget
    assert bg is not None
    count, wcount = tasks.count, workers.count
    available = count * wcount if replay_data is None else replay_data.labels.n_labels
    if bg.edges is None and replay_data is None:
        raise _fail("budget.edges", "is required", source)
    edges = available if bg.edges is None else bg.edges
    if bg.initial == "one-per-task" and edges < count:
        raise _fail("budget.edges", f"must be >= tasks.count ({count}) with initial = "
                    "'one-per-task'", source)
    if replay_data is not None and edges > available:
        raise _fail("budget.edges", f"must be <= {available}, the labels in the replayed data "
                    "set", source)
    if edges > count * wcount:
        raise _fail("budget.edges", f"must be <= tasks.count x workers.count = "
                    f"{count * wcount} (a worker labels a task at most once)", source)
    if replay_data is not None and bg.initial == "bernoulli":
        raise _fail("budget.initial", "'bernoulli' is not available with [replay]", source)
    return BudgetSpec(edges, bg.initial, bg.batch, bg.initial_probability)


def parse_scenario(data: Mapping[str, Any], source: str = "<scenario>", *,
                   allow_imports: bool = False) -> Scenario:
    """Validate a decoded TOML document into a :class:`Scenario`. With ``allow_imports``,
    import-path policies are imported now and their options checked against the class."""
    if not isinstance(data, Mapping):
        raise InputError("top level must be a table", source=source)
    doc: ScenarioDocument = validate(ScenarioDocument, data, source)
    name = Path(source).stem if doc.scenario.name is None else doc.scenario.name
    if not name.strip():
        raise _fail("scenario.name", "must not be empty", source)
    replay, replay_data = _read_replay(doc, source)
    for table in ("tasks", "workers", "budget"):
        if replay is None and getattr(doc, table) is None:
            raise _fail(table, "is required (a table)", source)
    # With [replay] the three tables are optional: their defaults stand in.
    doc = doc.model_copy(update={"tasks": doc.tasks or TasksTable(),
                                 "workers": doc.workers or WorkersTable(),
                                 "budget": doc.budget or BudgetTable()})
    assert doc.tasks is not None and doc.workers is not None  # filled in just above
    scores = WORKER_MODEL_FACTS[doc.workers.model].scores
    tasks = _read_tasks(doc.tasks, scores, replay, replay_data, source)
    workers = _read_workers(doc.workers, replay_data, source)
    budget = _read_budget(doc, tasks, workers, replay_data, source)
    workers, budget, gold, blocking = read_mechanics(doc, workers, budget, replay is not None,
                                                     source)
    output = OutputSpec(doc.output.graph, doc.output.graphml)
    if output.graphml and not output.graph:
        raise _fail("output.graphml", "needs output.graph = true (the graph is what gets "
                    "exported)", source)
    arms = []
    seen: set[str] = set()
    for idx, arm in enumerate(doc.arms):
        key = f"arms[{idx}]"
        if not arm.name.strip() or arm.name in seen:
            raise _fail(f"{key}.name", f"must be a unique, non-empty string, got {arm.name!r}",
                        source)
        seen.add(arm.name)
        policy = _read_policy(arm, f"{key}.policy", scores, tasks.classes, allow_imports,
                              source)
        inference = _read_inference(arm, f"{key}.inference", tasks, workers, source)
        if arm.initial == "one-per-task" and budget.edges < tasks.count:
            raise _fail(f"{key}.initial", f"'one-per-task' needs budget.edges >= "
                        f"{tasks.count}", source)
        check_initial_graph(arm.initial or budget.initial,
                            f"{key}.initial" if arm.initial else "budget.initial", tasks.count,
                            workers, budget, source)
        arm_gold, arm_blocking = arm_mechanics(arm, key, gold, replay is not None, scores,
                                               source, policy)
        arms.append(ArmSpec(arm.name, policy, inference, arm.initial, arm_gold, arm_blocking))
    sweep = read_sweep(data.get("sweep"), [arm.name for arm in arms], source)
    return Scenario(
        name, doc.scenario.seed, doc.scenario.replicates, tasks, workers, budget, tuple(arms),
        output, source, sweep, replay=replay, raw=data, allow_imports=allow_imports,
        gold=gold, blocking=blocking, targets=tuple(sorted(set(
            doc.report.targets if doc.report and doc.report.targets else ()), reverse=True)),
    )


def _read_replay(doc: ScenarioDocument, source: str) -> tuple[Any, Any]:
    """``[replay]``: a reference data set (``dataset``, ``data_dir``) or files (``labels``,
    ``truth``, ``format``). Relative paths are relative to the scenario file. Loads the data
    (once per process) so sizes and budget can be checked now."""
    rp = doc.replay
    if rp is None:
        return None, None
    base = Path(source).absolute().parent  # worker processes may run in another directory

    def path(value: str | None) -> str | None:
        return None if value is None else str(base / value)

    spec = ReplaySpec(rp.dataset, path(rp.labels), path(rp.truth), path(rp.data_dir),
                      rp.format)
    if (rp.dataset is None) == (spec.labels is None):
        raise _fail("replay.dataset", "give either replay.dataset or replay.labels (with "
                    "truth)", source)
    if spec.labels is not None and spec.truth is None:
        raise _fail("replay.truth", "is required with replay.labels", source)
    return spec, load_replay(spec)


def resolve_imports(scenario: Scenario, allow_imports: bool) -> Scenario:
    """``scenario`` with its import-path policies imported and their options checked (the
    one-line "pass --allow-imports" error if that is not allowed): ``run`` calls this before
    it creates anything."""
    if all(arm.policy.resolved for arm in scenario.arms):
        return scenario
    if not allow_imports:
        for arm in scenario.arms:
            arm.policy.require_class(scenario.source)
    arms = []
    for idx, arm in enumerate(scenario.arms):
        policy = arm.policy
        if not policy.resolved:
            cls = policy_class(policy.name, allow_imports=True, source=scenario.source)
            check_options(cls, policy.name, dict(policy.options), f"arms[{idx}].policy",
                          scenario.source)
            check_builds(cls, policy.name, dict(policy.options), f"arms[{idx}].policy",
                         scenario.source)
            policy = replace(policy, cls=cls)
        arms.append(replace(arm, policy=policy))
    return replace(scenario, arms=tuple(arms), allow_imports=True)


def load_scenario(path: str | Path, *, allow_imports: bool = False,
                  data_dir: str | None = None) -> Scenario:
    """Read and validate the scenario file at ``path``; ``data_dir`` (``--data-dir``), else
    ``$MARKETSIM_DATA``, replaces a replay's ``replay.data_dir`` (``marketsim.data.datasets``)."""
    source = str(path)
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InputError("file not found", source=source) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a .toml file", source=source) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", source=source) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", source=source) from None
    if isinstance(data.get("replay"), dict) and (data_dir is not None
                                                 or "dataset" in data["replay"]):
        data_dir = replay_data_dir(data_dir)  # --data-dir, else $MARKETSIM_DATA, beat the file
    if data_dir is not None and isinstance(data.get("replay"), dict):
        data["replay"]["data_dir"] = str(Path(data_dir).absolute())
    return parse_scenario(data, source, allow_imports=allow_imports)
