"""Scenario files: TOML read with ``tomllib`` and validated into frozen dataclasses at load.

Every key is checked: an unknown key, a wrong type or a value out of range raises an
:class:`~marketsim.errors.InputError` naming the file and the dotted key, e.g.
``scenarios/x.toml: workers.ability.alpha must be > 0, got -1``. See ``docs/scenarios.md``.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.aggregation.registry import CLASS_METHODS, METHODS, SCORE_METHODS
from marketsim.errors import InputError
from marketsim.policies.registry import POLICIES, is_import_path, market_problem
from marketsim.scenario.replay import ReplaySpec, load_replay
from marketsim.scenario.specs import (
    ABILITY_DISTRIBUTIONS,
    CONFUSION_DESIGNS,
    INIT_METHODS,
    INITIAL_GRAPHS,
    SCORE_MODELS,
    WORKER_MODELS,
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


class _Reader:
    """Reads one TOML table, remembering which keys were used so unknown ones can be reported."""

    def __init__(self, table: Any, path: str, source: str) -> None:
        if not isinstance(table, Mapping):
            raise InputError(f"{path or 'top level'} must be a table", source=source)
        self.table = dict(table)
        self.path = path
        self.source = source
        self.used: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def fail(self, name: str, message: str) -> InputError:
        return InputError(f"{_printable(self.key(name))} {message}", source=self.source)

    def get(self, name: str, default: Any = ..., *, kind: Any = None) -> Any:
        self.used.add(name)
        if name not in self.table:
            if default is ...:
                raise self.fail(name, "is required")
            return default
        value = self.table[name]
        if kind is not None and not _is_kind(value, kind):
            raise self.fail(name, f"must be {_kind_name(kind)}, got {value!r}")
        return value

    def number(
        self,
        name: str,
        default: Any = ...,
        *,
        integer: bool = False,
        low: float | None = None,
        high: float | None = None,
        low_open: bool = False,
        high_open: bool = False,
    ) -> Any:
        value = self.get(name, default, kind=int if integer else float)
        if value is None:
            return None
        if not _finite(value):
            raise self.fail(name, f"must be a finite number, got {_short(value)}")
        if low is not None and (value < low or (low_open and value == low)):
            raise self.fail(
                name, f"must be {'>' if low_open else '>='} {low:g}, got {_short(value)}"
            )
        if high is not None and (value > high or (high_open and value == high)):
            raise self.fail(
                name, f"must be {'<' if high_open else '<='} {high:g}, got {_short(value)}"
            )
        return int(value) if integer else float(value)

    def choice(self, name: str, allowed: tuple[str, ...], default: Any = ...) -> Any:
        value = self.get(name, default, kind=str)
        if value not in allowed:
            raise self.fail(name, f"must be one of {', '.join(allowed)}; got {value!r}")
        return value

    def sub(self, name: str, required: bool = False) -> _Reader:
        self.used.add(name)
        if name not in self.table:
            if required:
                raise self.fail(name, "is required (a table)")
            return _Reader({}, self.key(name), self.source)
        return _Reader(self.table[name], self.key(name), self.source)

    def finish(self, allowed_extra: tuple[str, ...] = ()) -> None:
        unknown = sorted(set(self.table) - self.used - set(allowed_extra))
        if unknown:
            allowed = ", ".join(sorted(self.used | set(allowed_extra)))
            raise self.fail(unknown[0], f"is not a known key (allowed here: {allowed})")


def _is_kind(value: Any, kind: Any) -> bool:
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is str:
        return isinstance(value, str)
    if kind is bool:
        return isinstance(value, bool)
    if kind is list:
        return isinstance(value, list)
    return isinstance(value, kind)


def _printable(text: str) -> str:
    """``text`` with control characters escaped (a key may hold a newline; errors are one line)."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in text)


def _finite(value: int | float) -> bool:
    """A finite number that fits a float (TOML integers are unbounded: ``10**400`` is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _short(value: Any) -> str:
    """``repr`` of a value, cut to 40 characters so an error stays one readable line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _kind_name(kind: Any) -> str:
    return {float: "a number", int: "an integer", str: "a string", bool: "true or false",
            list: "an array"}.get(kind, str(kind))


def _prior(reader: _Reader, name: str, k: int, default: Any) -> tuple[float, ...]:
    value = reader.get(name, default)
    if not isinstance(value, list) or not all(_is_kind(v, float) for v in value):
        raise reader.fail(name, f"must be an array of {k} probabilities, got {value!r}")
    if len(value) != k:
        raise reader.fail(name, f"must have {k} entries (one per class), got {len(value)}")
    if any(not _finite(v) or v < 0 for v in value):
        raise reader.fail(name, f"entries must be finite and >= 0, got {value!r}")
    if abs(sum(value) - 1.0) > 1e-6:
        raise reader.fail(name, f"must sum to 1, got {sum(value):.6g}")
    return tuple(float(v) for v in value)


def _read_policy(arm: _Reader) -> PolicySpec:

    raw = arm.get("policy")
    if isinstance(raw, str):
        name, options = raw, ()
        key = arm.key("policy")
    else:
        pol = _Reader(raw, arm.key("policy"), arm.source)
        name = pol.get("name", kind=str)
        options = tuple(sorted((k, v) for k, v in pol.table.items() if k != "name"))
        key = pol.key("name")
    if name not in POLICIES and not is_import_path(name):
        raise InputError(
            f"{key} must be one of {', '.join(POLICIES)} or a 'package.module:Class' path; "
            f"got {name!r}",
            source=arm.source,
        )
    return PolicySpec(name, options)


#: Inference keys that only mean something for methods estimating classes.
CLASS_ONLY_INFERENCE_KEYS = ("init", "class_prior", "alpha", "beta", "low", "warm_start")


def _read_method(inf: _Reader, default: str, continuous: bool) -> str:
    """The method name, checked against the market kind: score methods (``gaussian-em``,
    ``gaussian-hard-em``) for a continuous market, class methods for every other one."""

    allowed = SCORE_METHODS if continuous else CLASS_METHODS
    method = inf.get("method", default, kind=str)
    if method in allowed:
        return method
    if method in METHODS and continuous:
        raise inf.fail("method", f"{method!r} estimates classes, but workers.model = "
                       f"'gaussian-scores' gives continuous scores; use one of "
                       f"{', '.join(allowed)}")
    if method in METHODS:
        raise inf.fail("method", f"{method!r} estimates continuous scores and needs "
                       f"workers.model = 'gaussian-scores'; use one of {', '.join(allowed)}")
    raise inf.fail("method", f"must be one of {', '.join(allowed)}; got {method!r}")


def _read_inference(arm: _Reader, k: int, continuous: bool = False) -> InferenceSpec:
    default = "gaussian-em" if continuous else "one-coin-shifted-beta"
    raw = arm.get("inference", default)
    table = {"method": raw} if isinstance(raw, str) else raw
    inf = _Reader(table, arm.key("inference"), arm.source)
    method = _read_method(inf, default, continuous)
    if continuous:
        for key in CLASS_ONLY_INFERENCE_KEYS:
            if key in inf.table:
                raise inf.fail(key, f"does not apply to {method!r} (a continuous-score method)")
    class_prior: Any = inf.get("class_prior", "true")
    if isinstance(class_prior, str):
        if class_prior not in ("true", "estimate"):
            raise inf.fail("class_prior", f"must be 'true', 'estimate' or {k} probabilities")
    else:
        class_prior = _prior(inf, "class_prior", k, None)
    spec = InferenceSpec(
        method=method,
        init=inf.choice("init", INIT_METHODS, None) if "init" in inf.table else None,
        max_iter=inf.number("max_iter", 100, integer=True, low=1, high=100_000),
        tol=inf.number("tol", 1e-7, low=0),
        class_prior=class_prior,
        alpha=inf.number("alpha", None, low=0, low_open=True),
        beta=inf.number("beta", None, low=0, low_open=True),
        low=inf.number("low", None, low=0, high=1, high_open=True),
        warm_start=inf.get("warm_start", False, kind=bool),
    )
    inf.finish()
    return spec


def _check_policy_fits(arm: _Reader, policy: PolicySpec, continuous: bool, k: int) -> None:
    """Reject a built-in policy that cannot work in this market (import paths are the user's
    responsibility): class-posterior policies in a continuous market, ``uncertainty`` in a
    discrete one, ``knowledge-gradient`` unless K = 2."""

    if policy.name not in POLICIES:
        return
    problem = market_problem(policy.name, continuous, k)
    if problem:
        key = "policy" if isinstance(arm.table.get("policy"), str) else "policy.name"
        raise arm.fail(key, f"{policy.name!r} {problem}")


def _read_means(tk: _Reader, continuous: bool) -> TaskMeansSpec | None:
    """``[tasks.means]``: the Beta distribution of the true task means (continuous only)."""
    if not continuous:
        if "means" in tk.table:
            raise tk.fail("means", "only applies with workers.model = 'gaussian-scores'")
        return None
    mn = tk.sub("means")
    means = TaskMeansSpec(
        alpha=mn.number("alpha", 1.0, low=0, low_open=True, high=1e6),
        beta=mn.number("beta", 1.0, low=0, low_open=True, high=1e6),
    )
    mn.finish()
    return means


def _read_features(tk: _Reader, k: int, continuous: bool, replay: bool) -> FeaturesSpec | None:
    """``[tasks.features]``: binary task features with class-conditional probabilities."""
    if "features" not in tk.table:
        return None
    if continuous:
        raise tk.fail("features", "needs class labels; it does not apply with workers.model = "
                      "'gaussian-scores'")
    if replay:
        raise tk.fail("features", "is not available with [replay] (the data set has none)")
    ft = tk.sub("features")
    count = ft.number("count", integer=True, low=1, high=1000)
    probs = ft.get("probabilities", None, kind=list)
    if probs is not None and "informativeness" in ft.table:
        raise ft.fail("informativeness", "give either tasks.features.probabilities or "
                      "tasks.features.informativeness, not both")
    informativeness = ft.number("informativeness", 0.5, low=0, high=1)
    table: tuple[tuple[float, ...], ...] | None = None
    if probs is not None:
        rows_ok = len(probs) == k and all(
            isinstance(r, list) and len(r) == count and all(_is_kind(v, float) for v in r)
            for r in probs
        )
        if not rows_ok:
            raise ft.fail("probabilities", f"must be {k} arrays (one per class) of {count} "
                          f"numbers (one per feature)")
        if any(not _finite(v) or not 0 <= v <= 1 for r in probs for v in r):
            raise ft.fail("probabilities", "entries must be probabilities in [0, 1]")
        table = tuple(tuple(float(v) for v in r) for r in probs)
    ft.finish()
    return FeaturesSpec(count, informativeness, table)


def _peek_model(top: _Reader) -> str | None:
    """``workers.model`` before the workers table is read (tasks depend on it); validated
    properly later."""
    workers = top.table.get("workers")
    return workers.get("model") if isinstance(workers, Mapping) else None


def parse_scenario(data: Mapping[str, Any], source: str = "<scenario>") -> Scenario:
    """Validate a decoded TOML document into a :class:`Scenario`."""
    top = _Reader(data, "", source)

    sc = top.sub("scenario")
    name = sc.get("name", Path(source).stem, kind=str)
    if not name.strip():
        raise sc.fail("name", "must not be empty")
    seed = sc.number("seed", 0, integer=True, low=0, high=2**63 - 1)
    replicates = sc.number("replicates", 1, integer=True, low=1, high=100_000)
    sc.finish()

    replay, replay_data = _read_replay(top)
    continuous = _peek_model(top) in SCORE_MODELS
    tk = top.sub("tasks", required=replay is None)
    if continuous:
        if replay is not None:
            raise top.fail("workers.model", "'gaussian-scores' is not available with [replay]")
        for key in ("classes", "prior"):
            if key in tk.table:
                raise tk.fail(key, "does not apply with workers.model = 'gaussian-scores' "
                              "(tasks have continuous means, see tasks.means)")
    if replay_data is None:
        count = tk.number("count", integer=True, low=1, high=50_000_000)
        classes = 1 if continuous else tk.number("classes", 2, integer=True, low=2, high=100)
    else:
        count, classes = replay_data.labels.n_tasks, max(replay_data.labels.n_classes, 2)
        for key in ("count", "classes"):
            if key in tk.table:
                raise tk.fail(key, "comes from the replayed data set; remove it")
    default_prior = [1.0 / classes] * classes
    if replay_data is not None:
        known = replay_data.truth[replay_data.truth >= 0]
        freq = np.bincount(known, minlength=classes) / max(known.size, 1)
        default_prior = [float(x) for x in freq] if known.size else default_prior
    prior = _prior(tk, "prior", classes, default_prior)
    means = _read_means(tk, continuous)
    features = _read_features(tk, classes, continuous, replay is not None)
    tk.finish()
    tasks = TasksSpec(count, classes, prior, means, features)

    wk = top.sub("workers", required=replay is None)
    if replay_data is None:
        wcount = wk.number("count", integer=True, low=1, high=10_000_000)
    else:
        wcount = replay_data.labels.n_workers
        if "count" in wk.table:
            raise wk.fail("count", "comes from the replayed data set; remove it")
    model = wk.choice("model", WORKER_MODELS, "one-coin")
    if continuous and "ability" in wk.table:
        raise wk.fail("ability", "does not apply with workers.model = 'gaussian-scores' "
                      "(see workers.gaussian_scores)")
    ab = wk.sub("ability")
    ability = AbilitySpec(
        distribution=ab.choice("distribution", ABILITY_DISTRIBUTIONS, "shifted-beta"),
        alpha=ab.number("alpha", 6.0, low=0, low_open=True, high=1e6),
        beta=ab.number("beta", 2.0, low=0, low_open=True, high=1e6),
        low=ab.number("low", 0.1, low=0, high=1, high_open=True),
    )
    ab.finish()
    arr = wk.sub("arrivals")
    rate = arr.number("rate", 1.0, low=0, low_open=True, high=1e9)
    arr.finish()
    svc = wk.sub("service")
    service_mean = svc.number("mean", 0.0, low=0, high=1e9)
    svc.finish()
    cf = wk.sub("confusion")
    confusion = ConfusionSpec(
        design=cf.choice("design", CONFUSION_DESIGNS, "diagonal-uniform"),
        low=cf.number("low", 0.3, low=0, high=1),
        high=cf.number("high", 0.9, low=0, high=1),
        concentration=cf.number("concentration", 1.0, low=0, low_open=True, high=1e6),
        diagonal_weight=cf.number("diagonal_weight", 4.0, low=0, high=1e6),
    )
    if confusion.high < confusion.low:
        raise cf.fail("high", f"must be >= workers.confusion.low ({confusion.low:g})")
    cf.finish()
    sh = wk.sub("spammer_hammer")
    hammer_fraction = sh.number("hammer_fraction", 0.3, low=0, high=1)
    sh.finish()
    gs = wk.sub("gaussian_scores")
    gaussian = GaussianScoresSpec(
        good_fraction=gs.number("good_fraction", 0.7, low=0, high=1),
        sigma=gs.number("sigma", 0.1, low=0, low_open=True, high=10),
    )
    gs.finish()
    wk.finish()
    if model != "confusion" and "confusion" in wk.table:
        raise wk.fail("confusion", "only applies with workers.model = 'confusion'")
    if model != "spammer-hammer" and "spammer_hammer" in wk.table:
        raise wk.fail("spammer_hammer", "only applies with workers.model = 'spammer-hammer'")
    if model != "gaussian-scores" and "gaussian_scores" in wk.table:
        raise wk.fail("gaussian_scores", "only applies with workers.model = 'gaussian-scores'")
    workers = WorkersSpec(
        wcount, model, ability, rate, service_mean, confusion, hammer_fraction, gaussian
    )

    bg = top.sub("budget", required=replay is None)
    available = count * wcount if replay_data is None else replay_data.labels.n_labels
    edges = bg.number(
        "edges", ... if replay_data is None else available, integer=True, low=1,
        high=10_000_000_000,
    )
    initial = bg.choice("initial", INITIAL_GRAPHS, "one-per-task")
    batch = bg.number("batch", 100, integer=True, low=1, high=10_000_000_000)
    initial_probability = bg.number("initial_probability", 0.2, low=0, high=1)
    bg.finish()
    if initial == "one-per-task" and edges < count:
        raise bg.fail("edges", f"must be >= tasks.count ({count}) with initial = 'one-per-task'")
    if replay_data is not None and edges > available:
        raise bg.fail("edges", f"must be <= {available}, the labels in the replayed data set")
    if edges > count * wcount:
        raise bg.fail(
            "edges", f"must be <= tasks.count x workers.count = {count * wcount} "
            "(a worker labels a task at most once)"
        )
    if replay is not None and initial == "bernoulli":
        raise bg.fail("initial", "'bernoulli' is not available with [replay]")
    budget = BudgetSpec(edges, initial, batch, initial_probability)

    out = top.sub("output")
    output = OutputSpec(
        graph=out.get("graph", True, kind=bool), graphml=out.get("graphml", False, kind=bool)
    )
    out.finish()
    if output.graphml and not output.graph:
        raise out.fail("graphml", "needs output.graph = true (the graph is what gets exported)")

    raw_arms = top.get("arms")
    if not isinstance(raw_arms, list) or not raw_arms:
        raise top.fail("arms", "must be a non-empty array of tables ([[arms]])")
    arms = []
    seen: set[str] = set()
    for idx, raw in enumerate(raw_arms):
        arm = _Reader(raw, f"arms[{idx}]", source)
        arm_name = arm.get("name", kind=str)
        if not arm_name.strip() or arm_name in seen:
            raise arm.fail("name", f"must be a unique, non-empty string, got {arm_name!r}")
        seen.add(arm_name)
        policy = _read_policy(arm)
        _check_policy_fits(arm, policy, continuous, classes)
        inference = _read_inference(arm, classes, continuous)
        arm_initial = arm.choice("initial", INITIAL_GRAPHS, None) if "initial" in arm.table \
            else None
        if arm_initial == "one-per-task" and edges < count:
            raise arm.fail("initial", f"'one-per-task' needs budget.edges >= {count}")
        arm.finish()
        arms.append(ArmSpec(arm_name, policy, inference, arm_initial))
    sweep = _read_sweep(top)
    top.finish()
    return Scenario(
        name, seed, replicates, tasks, workers, budget, tuple(arms), output, source, sweep,
        replay=replay, raw=data,
    )


def _read_replay(top: _Reader) -> tuple[Any, Any]:
    """``[replay]``: a reference data set (``dataset``, ``data_dir``) or files (``labels``,
    ``truth``, ``format``). Relative paths are relative to the scenario file. Loads the data
    (once per process) so sizes and budget can be checked now."""
    if "replay" not in top.table:
        return None, None
    rp = top.sub("replay")
    base = Path(top.source).parent

    def path(key: str) -> str | None:
        value = rp.get(key, None, kind=str)
        return None if value is None else str(base / value)

    dataset = rp.get("dataset", None, kind=str)
    spec = ReplaySpec(
        dataset=dataset,
        labels=path("labels"),
        truth=path("truth"),
        data_dir=path("data_dir"),
        format=rp.choice("format", ("zhang", "csv"), None) if "format" in rp.table else None,
    )
    rp.finish()
    if (dataset is None) == (spec.labels is None):
        raise rp.fail("dataset", "give either replay.dataset or replay.labels (with truth)")
    if spec.labels is not None and spec.truth is None:
        raise rp.fail("truth", "is required with replay.labels")
    return spec, load_replay(spec)


def _flatten(table: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in table.items():
        dotted = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            out.extend(_flatten(value, dotted))
        else:
            out.append((dotted, value))
    return out


def _read_sweep(top: _Reader) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """``[sweep]``: dotted scenario keys, each with a non-empty array of values."""
    raw = top.get("sweep", None)
    if raw is None:
        return ()
    if not isinstance(raw, Mapping) or not raw:
        raise top.fail("sweep", "must be a table of dotted keys with arrays of values, "
                       "e.g. workers.count = [10, 30]")
    grid = []
    for key, values in _flatten(raw):
        if key.split(".")[0] not in ("tasks", "workers", "budget", "scenario"):
            raise top.fail(f"sweep.{key}", "must name a value under tasks, workers, budget or "
                           "scenario")
        if key in ("scenario.name", "scenario.replicates"):
            raise top.fail(f"sweep.{key}", "cannot be swept")
        if not isinstance(values, list) or not values:
            raise top.fail(f"sweep.{key}", f"must be a non-empty array of values, got {values!r}")
        grid.append((key, tuple(values)))
    return tuple(grid)


def load_scenario(path: str | Path, data_dir: str | None = None) -> Scenario:
    """Read and validate the scenario file at ``path``; ``data_dir`` (``run --data-dir``)
    replaces a replay's ``replay.data_dir``."""
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
    if data_dir is not None and isinstance(data.get("replay"), dict):
        data["replay"]["data_dir"] = str(Path(data_dir).absolute())
    return parse_scenario(data, source)
