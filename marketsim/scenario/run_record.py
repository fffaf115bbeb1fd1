"""The run's scenario in ``run.json`` (:class:`~marketsim.record.run_model.RunRecord`,
``record_version`` 2), both ways: :func:`recorded_document` writes a
:class:`~marketsim.scenario.specs.Scenario` in the scenario file's own schema
(``scenario.schema.json``; :meth:`Scenario.resolved_document`, every default filled in,
replay paths absolute), and :func:`recorded_scenario` reads it back into the same typed
``Scenario``: what the reports, the Python API and the command line read, never a dict by
string key. An arm that ran a policy or estimator object given in Python holds a stand-in in
the document (the ``uniform`` policy, the market's default method), its object's class and
parameters in the record's ``objects``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from marketsim.record.run_model import PATH_KEYS, ObjectRecord, RunRecord
from marketsim.scenario.arm_specs import PolicySpec
from marketsim.scenario.inference_spec import InferenceSpec
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario

__all__ = ["STAND_IN", "recorded_document", "recorded_scenario"]

#: The policy an arm run with a policy object holds in the recorded document.
STAND_IN = "uniform"


def recorded_scenario(record: RunRecord, replay_at: Mapping[str, Any] | None = None
                      ) -> Scenario:
    """The run's scenario, typed: ``record.resolved_scenario`` validated (a replay reads its
    data files, at ``replay_at``'s paths when given, e.g. a resume's ``--data-dir``), with
    each arm run with a Python object named after its class (its policy or method is not
    built again: a report names it, a resume refuses it). An :class:`InputError` when it no
    longer validates (a replay's data gone)."""
    doc = dict(record.resolved_scenario)
    if replay_at is not None and isinstance(doc.get("replay"), dict):
        doc["replay"] = {**{k: v for k, v in doc["replay"].items() if k not in PATH_KEYS},
                         **{k: v for k, v in replay_at.items() if k in PATH_KEYS}}
    scenario = _with_objects(parse_scenario(doc, f"{record.scenario} (run.json)"),
                             record.objects)
    return scenario.evolve(sweep_point=tuple(record.sweep_point.items()))


def _with_objects(scenario: Scenario, objects: Mapping[str, ObjectRecord]) -> Scenario:
    """``scenario`` with the arms in ``objects`` naming their object's class."""
    if not objects:
        return scenario
    arms = list(scenario.arms)
    for idx, arm in enumerate(arms):
        update: dict[str, Any] = {}
        policy, inference = objects.get(f"arms[{idx}].policy"), objects.get(
            f"arms[{idx}].inference")
        if policy is not None:
            update["policy"] = PolicySpec.of(_short(policy))
        if inference is not None:
            update["inference"] = InferenceSpec.resolved(_short(inference))
        if update:
            arms[idx] = arm.model_copy(update=update)
    return scenario.model_copy(update={"arms": tuple(arms)})


def _short(obj: ObjectRecord) -> str:
    return obj.class_name.rsplit(".", 1)[-1]


def recorded_document(scenario: Scenario) -> dict[str, Any]:
    """``scenario`` as ``run.json``'s ``resolved_scenario``: its resolved document with
    replay paths absolute, and a stand-in for each policy or estimator object (the scenario
    file's schema cannot hold objects; ``objects`` records them)."""
    doc = scenario.to_dict()
    replay = doc.get("replay")
    if isinstance(replay, dict):
        for key in PATH_KEYS:
            if isinstance(replay.get(key), str):
                replay[key] = os.path.abspath(replay[key])
    for arm, spec in zip(doc["arms"], scenario.arms, strict=True):
        if spec.policy.obj is not None:
            arm["policy"] = STAND_IN
        if spec.inference.estimator is not None:
            arm.pop("inference", None)
    return doc
