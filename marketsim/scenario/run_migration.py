"""Reading ``run.json`` of any version: a current file (``record_version`` 2) is validated
into :class:`~marketsim.record.run_model.RunRecord`; a file of an earlier marketsim (no
``record_version``: version 1) goes through :func:`migrate_v1`, the one place that knows the
old layout, so nothing else keeps a shim for it.

Version 1 recorded the resolved scenario in the old ``Scenario.to_dict()`` layout: the
``[scenario]`` keys at the top, ``arrival_rate``, ``service_mean`` and ``hammer_fraction``
written flat under ``workers``, the policy as ``{name, options}``, every arm's inference with
the settings any method took, keys added later left out while at their default, and the
source, the raw document and the grid point beside them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from marketsim.errors import InputError
from marketsim.record.run_model import PATH_KEYS, ObjectRecord, RunRecord, RunRecordV1
from marketsim.record.summary_model import validation_message
from marketsim.scenario.market_specs import HeaderSpec
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.run_record import STAND_IN, recorded_document

__all__ = ["migrate_v1", "read_run"]

#: Version 1's flat worker keys: flat name -> (table, key).
_V1_FLAT = {"arrival_rate": ("arrivals", "rate"), "service_mean": ("service", "mean"),
            "hammer_fraction": ("spammer_hammer", "hammer_fraction")}
#: Version 1's keys beside the scenario's tables: where it came from, not what it is.
_V1_ASIDE = ("source", "raw", "sweep_point")


def read_run(path: str | Path, replay_at: Mapping[str, Any] | None = None) -> RunRecord:
    """``run.json`` at ``path`` as a :class:`RunRecord`, migrated when it is of an earlier
    version (``replay_at``: where a replay's data files are now, for a version 1 file). A
    missing or unreadable file is ``OSError``; a file that is not a valid record (or a
    version 1 record whose scenario no longer validates) an :class:`InputError` naming the
    file and the first bad key."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(f"not a valid run.json: {exc}", source=str(path)) from None
    old = isinstance(data, dict) and "record_version" not in data
    model: type[BaseModel] = RunRecordV1 if old else RunRecord
    try:
        record = model.model_validate_json(text, strict=True)
    except ValidationError as exc:
        raise InputError(f"not a valid run.json: {validation_message(exc)}",
                         source=str(path)) from None
    if isinstance(record, RunRecordV1):
        try:
            return migrate_v1(record, replay_at)
        except InputError as exc:
            raise InputError(f"a run.json of an earlier version whose scenario cannot be "
                             f"read: {exc}", source=str(path)) from None
    assert isinstance(record, RunRecord)
    return record


def migrate_v1(old: RunRecordV1, replay_at: Mapping[str, Any] | None = None) -> RunRecord:
    """A version 1 record as version 2: its resolved scenario parsed into today's
    :class:`Scenario`. The run's own ``document`` (valid by construction) gives the shape
    of today's resolved document; every value the old record holds replaces the one there,
    so the migrated scenario is the study the run was, with today's defaults only for keys
    the old record left out at theirs (which is why it left them out). Its stored fingerprint
    is kept; identities are compared by recomputing them (:mod:`marketsim.study.identity`)."""
    setup = old.resolved_scenario
    objects = _v1_objects(setup)
    document = _without_objects(old.document, objects)
    if replay_at is not None and isinstance(document.get("replay"), dict):
        document["replay"] = {**document["replay"],
                              **{k: v for k, v in replay_at.items() if k in PATH_KEYS}}
    source = f"{old.scenario} (run.json)"
    shape = parse_scenario(document, source).to_dict()
    merged = _overlay(shape, _v1_layout(setup, objects))
    if isinstance(merged.get("replay"), dict) and isinstance(document.get("replay"), dict):
        merged["replay"].update({k: v for k, v in document["replay"].items() if k in PATH_KEYS})
    scenario = parse_scenario(merged, source)
    point = setup.get("sweep_point")
    return RunRecord(
        scenario=old.scenario, seed=old.seed, replicates=old.replicates,
        fingerprint=old.fingerprint, data_files=old.data_files, versions=old.versions,
        resolved_scenario=recorded_document(scenario), objects=objects,
        sweep_point=dict(point) if isinstance(point, dict) else {},
        document=old.document, scenario_sha256=old.scenario_sha256)


def _v1_objects(setup: Mapping[str, Any]) -> dict[str, ObjectRecord]:
    """``arms[i].policy`` / ``arms[i].inference`` -> the object version 1 recorded there."""
    out: dict[str, ObjectRecord] = {}
    arms = setup.get("arms")
    for idx, arm in enumerate(arms if isinstance(arms, list) else []):
        for part in ("policy", "inference"):
            table = arm.get(part) if isinstance(arm, dict) else None
            if isinstance(table, dict) and isinstance(table.get("object"), dict):
                out[f"arms[{idx}].{part}"] = ObjectRecord.model_validate(table["object"])
    return out


def _without_objects(document: Mapping[str, Any], objects: Mapping[str, ObjectRecord]
                     ) -> dict[str, Any]:
    """The recorded document with each object (written as its ``repr``) replaced by the
    stand-in :func:`~marketsim.scenario.run_record.recorded_document` writes."""
    doc = json.loads(json.dumps(document))
    for key in objects:
        idx, part = int(key[5:key.index("]")]), key.rsplit(".", 1)[-1]
        arm = doc["arms"][idx]
        if part == "policy":
            arm["policy"] = STAND_IN
        else:
            arm.pop("inference", None)
    return doc


def _v1_layout(setup: Mapping[str, Any], objects: Mapping[str, ObjectRecord]
               ) -> dict[str, Any]:
    """Version 1's resolved scenario in the layout of a scenario file."""
    out = {k: v for k, v in setup.items() if k not in _V1_ASIDE
           and k not in HeaderSpec.model_fields}
    out["scenario"] = {k: v for k, v in setup.items() if k in HeaderSpec.model_fields}
    workers = out.get("workers")
    if isinstance(workers, dict):
        workers = out["workers"] = dict(workers)
        for flat, (table, key) in _V1_FLAT.items():
            if flat in workers:
                workers[table] = {**(workers.get(table) or {}), key: workers.pop(flat)}
    if not out.get("sweep"):
        out.pop("sweep", None)
    arms = out.get("arms")
    out["arms"] = [_v1_arm(arm, idx, objects) for idx, arm in
                   enumerate(arms if isinstance(arms, list) else [])]
    return out


def _v1_arm(arm: Any, idx: int, objects: Mapping[str, ObjectRecord]) -> Any:
    """One arm of version 1 as a scenario file writes it (objects' entries left out)."""
    if not isinstance(arm, dict):
        return arm
    arm = dict(arm)
    policy = arm.get("policy")
    if f"arms[{idx}].policy" in objects:
        arm.pop("policy", None)
    elif isinstance(policy, dict):
        options = policy.get("options") or {}
        arm["policy"] = {"name": policy.get("name"), **options} if options else policy.get(
            "name")
    if f"arms[{idx}].inference" in objects:
        arm.pop("inference", None)
    return arm


def _overlay(shape: Any, values: Any) -> Any:
    """``shape`` with each of its keys that ``values`` also holds taking the value there
    (tables and arrays of tables key by key, element by element; a key ``shape`` does not
    have is left out, as the scenario file must leave it out)."""
    if isinstance(shape, dict) and isinstance(values, dict):
        return {k: _overlay(v, values[k]) if k in values else v for k, v in shape.items()}
    if (isinstance(shape, list) and isinstance(values, list) and len(shape) == len(values)
            and any(isinstance(v, dict) for v in shape)):
        return [_overlay(a, b) for a, b in zip(shape, values, strict=True)]
    return values
