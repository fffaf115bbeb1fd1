"""Scenario documents changed in Python, and arms that hold Python objects.

:class:`~marketsim.scenario.specs.Scenario` derives every changed scenario from a document and
validates it again (``replace``, ``with_arms``): :func:`apply_changes` writes dotted keys and
tables into a copy of the document. From Python an arm's ``policy`` may be a policy object
(``bind(info)``, ``rank(state, rng)``) and its ``inference`` an estimator object (the ``fit``
API of :class:`~marketsim.aggregation.base.BaseAggregator`): no import path, no
``--allow-imports``, since the caller already holds the code. :func:`split_objects` puts a
stand-in in their place while the document is validated, :func:`put_objects` puts them back
into the validated arms.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from marketsim.aggregation.base import BaseAggregator, ScoreAggregator
from marketsim.errors import InputError
from marketsim.policies.base import AssignmentPolicy, WorkerAwarePolicy, policy_type
from marketsim.policies.registry import check_facts, market_problem
from marketsim.scenario.arm_specs import ArmSpec, PolicySpec
from marketsim.scenario.inference_spec import InferenceSpec
from marketsim.scenario.mechanics import check_replay_policy
from marketsim.scenario.sweep_keys import key_path, set_path

#: A built-in policy that fits every market: it stands in for a policy object while the rest
#: of the arm is validated, then the object replaces it.
_STAND_IN = "uniform"
#: Top-level keyword changes that belong to the ``[scenario]`` table.
_SCENARIO_KEYS = ("name", "seed", "replicates")
#: What a changed scenario's ``source`` says after the file it came from.
_CHANGED = " (changed in Python)"
#: Each arm's objects, by arm index: (policy object or None, estimator object or None).
Objects = dict[int, tuple[Any, Any]]


def copy_doc(value: Any) -> Any:
    """Tables and arrays copied, leaves (objects included) shared."""
    if isinstance(value, Mapping):
        return {k: copy_doc(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [copy_doc(v) for v in value]
    return value


def changed_source(source: str) -> str:
    """The source of a scenario changed in Python: its file's name (errors name it, relative
    replay paths stay relative to its folder) marked as changed, so that nothing treats the
    file as this scenario."""
    return source if source.endswith(_CHANGED) or source.startswith("<") else source + _CHANGED


def apply_changes(doc: dict[str, Any], changes: Mapping[str, Any], arm_names: Sequence[str],
                  root: type[BaseModel], source: str) -> dict[str, Any]:
    """``doc`` (a copy of a scenario's document, changed in place) with ``changes`` written
    in, as :meth:`~marketsim.scenario.specs.Scenario.replace` takes them: dotted keys or
    tables (merged into the table there), ``name``/``seed``/``replicates`` in ``[scenario]``,
    an arm's keys as ``[sweep]`` names them, ``sweep=None`` (or ``{}``) for no grid."""
    for key, value in changes.items():
        dotted = f"scenario.{key}" if key in _SCENARIO_KEYS else key
        if dotted == "sweep" and (value is None or (isinstance(value, Mapping) and not value)):
            doc.pop("sweep", None)  # no grid: one study
            continue
        if dotted.startswith(("arms.", "arms[")):  # an arm's key, as [sweep] names it
            set_path(doc, key_path(dotted, list(arm_names), root, source), copy_doc(value))
            continue
        *parents, last = dotted.split(".")
        node = doc
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise InputError(f"{dotted}: {part} is not a table", source=source)
            node = child
        old = node.get(last)
        if isinstance(value, Mapping) and isinstance(old, dict):
            node[last] = _merge(old, value)
        else:
            node[last] = copy_doc(value)
    return doc


def _merge(old: dict[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(old)
    for key, value in new.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy_doc(value)
    return out


#: The values a TOML document holds: anything else in an arm is a Python object.
_TOML_VALUES = (str, Mapping, int, float, list, tuple, datetime.date, datetime.time)


def _is_object(value: Any) -> bool:
    """An arm value that a TOML document cannot hold (and not missing): a Python object."""
    return value is not None and not isinstance(value, _TOML_VALUES)


def split_objects(doc: dict[str, Any], source: str) -> Objects:
    """Take the policy and estimator objects out of ``doc``'s arms (changed in place: a
    stand-in policy, no inference, the arm named after the object's class when it has no
    name) and return them by arm index, each policy checked to be a policy object."""
    objects: Objects = {}
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
                         "grid with marketsim.sweep(scenario, grid)", source=source)
    return objects


def put_objects(arms: tuple[ArmSpec, ...], objects: Objects, scores: bool, n_classes: int,
                replay: bool, source: str) -> tuple[ArmSpec, ...]:
    """The validated ``arms`` running their objects again, each checked against the market
    (an estimator of the market's kind of labels; a policy whose facts fit the market; no
    per-worker policy in a replay)."""
    out = list(arms)
    for idx, (policy, estimator) in objects.items():
        arm, key = out[idx], f"arms[{idx}]"
        if policy is not None:
            arm = arm.model_copy(update={"policy": PolicySpec.of(
                type(policy).__name__, policy_cls=type(policy), obj=policy)})
        if estimator is not None:
            _check_estimator(estimator, f"{key}.inference", scores, source)
            arm = arm.model_copy(update={"inference": InferenceSpec.resolved(
                type(estimator).__name__, estimator=estimator)})
        check_replay_policy(None if policy is None else type(policy), arm.policy.name,
                            replay, f"{key}.policy", source)
        problem = None if policy is None else market_problem(
            policy_type(policy), scores, n_classes)
        if problem:
            raise InputError(f"{key}.policy: {type(policy).__name__} {problem}", source=source)
        out[idx] = arm
    return tuple(out)


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
