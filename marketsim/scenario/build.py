"""Scenarios built or changed in Python, validated by the same parser as a scenario file.

:func:`scenario_from_dict` takes the TOML layout as a dict (``{"scenario": {...}, "tasks":
{...}, "arms": [{...}]}``); :meth:`Scenario.replace` and :meth:`Scenario.with_arms` change a
scenario's document and parse it again, so a bad value gets the same one-line
:class:`~marketsim.errors.InputError` as in a file. In Python an arm's ``policy`` may be a
policy object (``bind(info)``, ``rank(state, rng)``) and its ``inference`` an estimator object
(the ``fit`` API of :class:`~marketsim.aggregation.base.BaseAggregator`): no import path, no
``--allow-imports``, since the caller already holds the code.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from marketsim.aggregation.base import BaseAggregator, ScoreAggregator
from marketsim.errors import InputError
from marketsim.policies.base import AssignmentPolicy, WorkerAwarePolicy, policy_type
from marketsim.policies.registry import check_facts, market_problem
from marketsim.scenario import specs
from marketsim.scenario.arm_specs import ArmSpec, PolicySpec
from marketsim.scenario.inference_spec import InferenceSpec
from marketsim.scenario.mechanics import check_replay_policy
from marketsim.scenario.parser import load_scenario as load_file
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.sweep import set_path
from marketsim.scenario.sweep_keys import key_path

#: A built-in policy that fits every market: it stands in for a policy object while the rest
#: of the arm is validated, then the object replaces it.
_STAND_IN = "uniform"
#: Top-level keyword changes that belong to the ``[scenario]`` table.
_SCENARIO_KEYS = ("name", "seed", "replicates")
#: What a changed scenario's ``source`` says after the file it came from.
_CHANGED = " (changed in Python)"


def _is_object(value: Any) -> bool:
    """An arm value that is neither TOML (a string or a table) nor missing."""
    return value is not None and not isinstance(value, str | Mapping)


def _copy_doc(value: Any) -> Any:
    """Tables and arrays copied, leaves (objects included) shared."""
    if isinstance(value, Mapping):
        return {k: _copy_doc(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copy_doc(v) for v in value]
    return value


def _check_policy(obj: Any, key: str, source: str) -> None:
    if isinstance(obj, type):
        raise InputError(f"{key} must be a policy object, got the class {obj.__name__}; "
                         f"write {obj.__name__}(...)", source=source)
    if not isinstance(obj, AssignmentPolicy | WorkerAwarePolicy):
        raise InputError(f"{key}: policy object of class {type(obj).__name__} does not "
                         "implement bind(info) and rank(state, rng) or assign(worker, state, "
                         "rng) (and name, needs_truth)",
                         source=source)
    check_facts(type(obj), f"{key}: policy object of class {type(obj).__name__}",
                source=source)


def _check_estimator(obj: Any, key: str, scores: bool, source: str) -> None:
    name = type(obj).__name__
    if isinstance(obj, type) or not callable(getattr(obj, "fit", None)):
        raise InputError(f"{key}: {name} is not an estimator object (one with fit(labels), "
                         "e.g. marketsim.aggregation.DawidSkene())", source=source)
    if scores and isinstance(obj, BaseAggregator):
        raise InputError(f"{key}: {name} estimates classes, but workers.model = "
                         "'gaussian-scores' gives continuous scores", source=source)
    if not scores and isinstance(obj, ScoreAggregator):
        raise InputError(f"{key}: {name} estimates continuous scores and needs workers.model "
                         "= 'gaussian-scores'", source=source)


class Scenario(specs.Scenario):
    """A validated scenario that can be changed in Python (:meth:`replace`,
    :meth:`with_arms`); every change is validated again by the scenario parser."""

    def document(self) -> dict[str, Any]:
        """The scenario's TOML document (objects kept), with its current seed and replicates."""
        doc = _copy_doc(self.raw)
        head = doc.setdefault("scenario", {})
        head.update(name=self.name, seed=self.seed, replicates=self.replicates)
        return doc

    def replace(self, changes: Mapping[str, Any] | None = None, /, **more: Any) -> Scenario:
        """A copy with values changed, by dotted key or nested table:
        ``replace({"workers.count": 50}, seed=3)``, ``replace(workers={"count": 50})``
        (a table is merged into the one there); an arm's keys as ``[sweep]`` names them,
        ``replace({"arms.adaptive.gold.rate": 0.2})`` or ``"arms[1].policy.n_trees"``.
        ``name``, ``seed`` and ``replicates`` are the ``[scenario]`` table's; ``arms``
        replaces every arm (see :meth:`with_arms`); ``sweep=None`` (or ``{}``) removes the
        ``[sweep]`` table (:meth:`without_sweep`), a ``sweep`` table is merged into it."""
        doc = self.document()
        arm_names = [arm.name for arm in self.arms]
        for key, value in {**(changes or {}), **more}.items():
            dotted = f"scenario.{key}" if key in _SCENARIO_KEYS else key
            if dotted == "sweep" and (value is None or (isinstance(value, Mapping)
                                                        and not value)):
                doc.pop("sweep", None)  # no grid: one study
                continue
            if dotted.startswith(("arms.", "arms[")):  # an arm's key, as [sweep] names it
                set_path(doc, key_path(dotted, arm_names, type(self), self.source),
                         _copy_doc(value))
                continue
            *parents, last = dotted.split(".")
            node = doc
            for part in parents:
                child = node.setdefault(part, {})
                if not isinstance(child, dict):
                    raise InputError(f"{dotted}: {part} is not a table", source=self.source)
                node = child
            old = node.get(last)
            if isinstance(value, Mapping) and isinstance(old, dict):
                node[last] = _merge(old, value)
            else:
                node[last] = _copy_doc(value)
        return scenario_from_dict(doc, _changed(self.source), allow_imports=self.allow_imports)

    def without_sweep(self) -> Scenario:
        """A copy without the ``[sweep]`` table: the one study the grid varies, to run with
        :func:`marketsim.run` (each grid point is ``without_sweep().replace({key: value})``)."""
        return self.replace(sweep=None)

    def with_arms(self, *arms: Mapping[str, Any], keep: bool = False) -> Scenario:
        """A copy whose arms are ``arms`` (tables of the ``[[arms]]`` layout: name, policy,
        inference, initial), after the current ones with ``keep=True``."""
        current = list(self.document().get("arms", [])) if keep else []
        return self.replace(arms=[*current, *(_copy_doc(a) for a in arms)])


def _merge(old: dict[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(old)
    for key, value in new.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = _copy_doc(value)
    return out


def _changed(source: str) -> str:
    """The source of a scenario changed in Python: its file's name (errors name it, relative
    replay paths stay relative to its folder) marked as changed, so that nothing treats the
    file as this scenario."""
    return source if source.endswith(_CHANGED) or source.startswith("<") else source + _CHANGED


def editable(scenario: specs.Scenario) -> Scenario:
    """``scenario`` as a :class:`Scenario` (same values, nothing validated again)."""
    out = Scenario.model_construct(_fields_set=scenario.model_fields_set, **dict(scenario))
    out.__pydantic_private__ = dict(scenario.__pydantic_private__ or {})
    return out


def load_scenario(path: str | Path, *, allow_imports: bool = False,
                  data_dir: str | Path | None = None) -> Scenario:
    """Read and validate the scenario file at ``path`` (as ``marketsim run`` does);
    ``data_dir`` (a string or a path) replaces a replay's ``replay.data_dir``."""
    return editable(load_file(path, allow_imports=allow_imports,
                              data_dir=None if data_dir is None else str(data_dir)))


def scenario_from_dict(data: Mapping[str, Any], source: str = "<python>", *,
                       allow_imports: bool = False) -> Scenario:
    """Validate a scenario given as a dict of the TOML layout; arms may hold a policy object
    (``policy``) and an estimator object (``inference``). An arm with a policy object and no
    ``name`` is named after the object's class."""
    if not isinstance(data, Mapping):
        raise InputError("top level must be a table", source=source)
    doc = _copy_doc(data)
    objects: dict[int, tuple[Any, Any]] = {}
    arms = doc.get("arms")
    for idx, arm in enumerate(arms if isinstance(arms, list) else []):
        if not isinstance(arm, dict):
            continue
        policy, inference = arm.get("policy"), arm.get("inference")
        if not (_is_object(policy) or _is_object(inference)):
            continue
        if _is_object(policy):
            _check_policy(policy, f"arms[{idx}].policy", source)
            arm["policy"] = _STAND_IN
            arm.setdefault("name", type(policy).__name__)
        if _is_object(inference):
            arm.pop("inference")
            arm.setdefault("name", type(inference).__name__)
        objects[idx] = (policy if _is_object(policy) else None,
                        inference if _is_object(inference) else None)
    if objects and "sweep" in doc:
        raise InputError(f"sweep cannot be combined with policy or estimator objects "
                         f"(arms[{min(objects)}]); build the scenario without it and run the "
                         "grid with marketsim.sweep(scenario, grid)",
                         source=source)
    parsed = parse_scenario(doc, source, allow_imports=allow_imports)
    arms_out = list(parsed.arms)
    for idx, (policy, estimator) in objects.items():
        arms_out[idx] = _with_objects(arms_out[idx], policy, estimator, parsed.worker_model.scores,
                                      f"arms[{idx}]", source)
        check_replay_policy(None if policy is None else type(policy), arms_out[idx].policy.name,
                            parsed.replay is not None, f"arms[{idx}].policy", source)
        problem = None if policy is None else market_problem(
            policy_type(policy), parsed.worker_model.scores, parsed.tasks.classes)
        if problem:
            raise InputError(f"arms[{idx}].policy: {type(policy).__name__} {problem}",
                             source=source)
    # ``raw`` keeps the objects (a later ``replace`` re-parses it); names fill in for them.
    raw = _copy_doc(data)
    for idx in objects:
        raw["arms"][idx].setdefault("name", arms_out[idx].name)
    return editable(parsed.evolve(arms=tuple(arms_out), raw=raw))


def _with_objects(arm: ArmSpec, policy: Any, estimator: Any, scores: bool, key: str,
                  source: str) -> ArmSpec:
    """``arm`` running the given policy and estimator objects (``None``: keep the parsed)."""
    if policy is not None:
        arm = arm.model_copy(update={"policy": PolicySpec.of(
            type(policy).__name__, policy_cls=type(policy), obj=policy)})
    if estimator is not None:
        _check_estimator(estimator, f"{key}.inference", scores, source)
        arm = arm.model_copy(update={"inference": InferenceSpec.resolved(
            type(estimator).__name__, estimator=estimator)})
    return arm
