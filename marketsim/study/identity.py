"""What makes two runs the same study, and what a run folder records to be resumed anywhere.

A run folder holds one study: one resolved scenario, seed and replicate count, and (for a
replay) the same data files. ``run.json`` records

- ``document``: the scenario as decoded from its TOML file, with the replay's relative paths
  made absolute, so a resume re-reads exactly what the run started with, from any working
  directory, even if the folder's ``scenario.toml`` copy was moved or edited;
- ``scenario_sha256``: the hash of that ``scenario.toml`` copy, so an edit is noticed;
- ``data_files``: every replayed file's absolute path, size and SHA-256;
- ``fingerprint``: the SHA-256 of the study's identity (resolved scenario without its file
  locations and report settings, plus the data files' hashes).

Before anything is written into a folder its study is compared with the new one by their
identities, the recorded one recomputed from the record's typed scenario (a file of an earlier
version migrated first): a key added to the scenario since the folder was written has its
default on both sides, so no key needs to be left out of the record to keep runs' identity.

An arm given a policy or estimator *object* in Python is identified by its class's full name
and its parameters (``get_params()``, or a pydantic ``options`` model), recorded in the
record's ``objects`` and compared as the arm's ``policy.object`` / ``inference.object``; an
object whose parameters cannot be known is recorded as such, and a folder holding it is never
resumed or reused: nothing could tell whether its results are this object's.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from marketsim.errors import InputError
from marketsim.record.run_model import PATH_KEYS, DataFile, ObjectRecord, RunRecord
from marketsim.scenario.run_record import recorded_document, recorded_scenario
from marketsim.scenario.specs import Scenario

#: Tables that say how the reports show a study, not what it is (a folder resumed with other
#: ``[report] targets`` reports the same runs).
LOCATION_KEYS = ("report",)


def plain(obj: Any) -> Any:
    """``obj`` as JSON-compatible data (tuples as lists, odd values as strings)."""
    return json.loads(json.dumps(obj, default=str))


def absolute_document(scenario: Scenario) -> dict[str, Any]:
    """The scenario's decoded TOML with replay paths absolute (relative ones are relative to
    the scenario file) and its resolved name (a file without ``[scenario] name`` is named after
    the file, which the run folder's ``scenario.toml`` copy is not)."""
    doc = plain(copy.deepcopy(dict(scenario.raw)))
    table = doc.setdefault("scenario", {})
    if isinstance(table, dict):
        table.setdefault("name", scenario.name)
    replay = doc.get("replay")
    if isinstance(replay, dict):
        base = Path(scenario.source).parent
        for key in PATH_KEYS:
            if isinstance(replay.get(key), str):
                replay[key] = os.path.abspath(base / replay[key])
    return doc


def objects(scenario: Scenario) -> dict[str, ObjectRecord]:
    """``arms[i].policy`` / ``arms[i].inference`` -> each policy or estimator object of the
    scenario, described by its class and parameters (:func:`described`)."""
    out: dict[str, ObjectRecord] = {}
    for idx, arm in enumerate(scenario.arms):
        if arm.policy.obj is not None:
            out[f"arms[{idx}].policy"] = ObjectRecord.model_validate(described(arm.policy.obj))
        if arm.inference.estimator is not None:
            out[f"arms[{idx}].inference"] = ObjectRecord.model_validate(
                described(arm.inference.estimator))
    return out


class _Unknowable(Exception):
    """A value whose content cannot be written down (an object without parameters)."""


def described(obj: Any) -> dict[str, Any]:
    """``{"class": "module.Class", "params": {...}}`` of a policy or estimator object: what
    determines its results. ``params`` is None when they cannot be known (no ``get_params()``
    nor a pydantic ``options`` model, or a parameter that is such an object)."""
    cls = type(obj)
    try:
        params = _parameters(obj)
    except _Unknowable:
        params = None
    return {"class": f"{cls.__module__}.{cls.__qualname__}", "params": params}


def _parameters(obj: Any) -> dict[str, Any]:
    options = getattr(obj, "options", None)
    if isinstance(options, BaseModel):
        return _canonical(options.model_dump(mode="json"))
    get_params = getattr(obj, "get_params", None)
    if not callable(get_params) or isinstance(obj, type):
        raise _Unknowable(type(obj).__name__)
    try:
        params = get_params(deep=False)
    except TypeError:  # a get_params without scikit-learn's ``deep``
        params = get_params()
    if not isinstance(params, dict):
        raise _Unknowable(type(obj).__name__)
    return {str(k): _canonical(v) for k, v in sorted(params.items(), key=lambda kv: str(kv[0]))}


def _canonical(value: Any) -> Any:
    """``value`` as JSON data that changes whenever the value does (arrays in full)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, np.generic):
        return _canonical(value.item())
    if isinstance(value, np.ndarray):
        return {"array": _canonical(value.tolist()), "dtype": str(value.dtype)}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, np.random.Generator):
        return {"generator": _canonical(value.bit_generator.state)}
    if isinstance(value, type):
        return {"class": f"{value.__module__}.{value.__qualname__}"}
    return {"class": f"{type(value).__module__}.{type(value).__qualname__}",
            "params": _parameters(value)}


def unknowable(record: RunRecord) -> str | None:
    """The first arm object (``arms[i].policy``) whose parameters cannot be known, or None."""
    for key, obj in record.objects.items():
        if obj.params is None:
            return f"{key} (a {obj.class_name.rsplit('.', 1)[-1]})"
    return None


@lru_cache(maxsize=32)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file (cached while its size and modification time are unchanged)."""
    st = os.stat(path)
    return _sha256(os.path.abspath(path), st.st_size, st.st_mtime_ns)


def data_files(scenario: Scenario) -> list[DataFile]:
    """Absolute path, size and SHA-256 of every file a replay scenario reads (none if it
    simulates its crowd)."""
    if scenario.replay is None:
        return []
    labels, truth = scenario.replay.paths()
    return [DataFile(path=os.path.abspath(p), bytes=os.path.getsize(p), sha256=file_sha256(p))
            for p in (labels, truth) if p is not None]


def identity(document: dict[str, Any], objects: dict[str, ObjectRecord],
             sweep_point: dict[str, Any]) -> dict[str, Any]:
    """What defines the study: its resolved document without file locations and report
    settings, ``[scenario]``'s keys at the top, each arm object as the arm's
    ``policy.object`` / ``inference.object``, and the grid point."""
    doc = {k: v for k, v in plain(document).items() if k not in LOCATION_KEYS}
    out: dict[str, Any] = {**doc.pop("scenario", {}), **doc}
    if isinstance(out.get("replay"), dict):
        out["replay"] = {k: v for k, v in out["replay"].items() if k not in PATH_KEYS}
    for key, obj in objects.items():
        idx, part = int(key[5:key.index("]")]), key.rsplit(".", 1)[-1]
        out["arms"][idx][part] = {"object": obj.model_dump(mode="json")}
    if sweep_point:
        out["sweep_point"] = plain(sweep_point)
    return out


def fingerprint(study: dict[str, Any], files: list[DataFile]) -> str:
    """SHA-256 of a study's :func:`identity` and its data files' contents."""
    text = json.dumps({"scenario": study, "data": [f.sha256 for f in files]}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def recorded_identity(record: RunRecord, replay_at: dict[str, Any] | None = None
                      ) -> dict[str, Any]:
    """The :func:`identity` of a recorded study, recomputed from its typed scenario (so a key
    added since it was written reads as its default, as it does in a new study)."""
    scenario = recorded_scenario(record, replay_at)
    return identity(recorded_document(scenario), record.objects, record.sweep_point)


def _flat(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted key (``arms[0].policy.name``) -> leaf value."""
    if isinstance(obj, dict) and obj:
        out: dict[str, Any] = {}
        for key, value in obj.items():
            out.update(_flat(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(obj, list) and obj and any(isinstance(v, dict | list) for v in obj):
        out = {}
        for idx, value in enumerate(obj):
            out.update(_flat(value, f"{prefix}[{idx}]"))
        return out
    return {prefix: obj}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def difference(old: RunRecord, new: RunRecord) -> str | None:
    """The first way the study recorded in ``old`` (a folder's ``run.json``, of any version)
    differs from ``new`` (a record just made), in words, or None when they are the same
    study."""
    if old.fingerprint == new.fingerprint:
        return None
    replay = new.resolved_scenario.get("replay")
    try:
        was = _flat(recorded_identity(old, replay if isinstance(replay, dict) else None))
    except InputError as exc:
        return f"its recorded scenario no longer reads: {exc}"
    now = _flat(identity(new.resolved_scenario, new.objects, new.sweep_point))
    keys = [k for k in dict.fromkeys(("name", "seed", "replicates", *sorted(set(was) | set(now))))
            if was.get(k, "(unset)") != now.get(k, "(unset)")]
    if keys:
        key = keys[0]
        label = "scenario name" if key == "name" else key
        more = f"; also {', '.join(keys[1:4])}{', ...' if len(keys) > 4 else ''}" \
            if len(keys) > 1 else ""
        return (f"{label} {_shown(was.get(key, '(unset)'))} there, "
                f"{_shown(now.get(key, '(unset)'))} here{more}")
    for before, after in zip(old.data_files, new.data_files, strict=False):
        if before.sha256 != after.sha256:
            return (f"replayed data {Path(after.path).name} differs "
                    f"({before.bytes} bytes there, {after.bytes} here)")
    if len(old.data_files) != len(new.data_files):
        return "replayed data files differ"
    return None


def check_data_unchanged(recorded: list[DataFile], scenario: Scenario) -> None:
    """Refuse to resume a replay whose data files changed since the run started."""
    for before, after in zip(recorded, data_files(scenario), strict=False):
        if before.sha256 != after.sha256:
            raise InputError(
                f"changed since the run started ({before.bytes} bytes, sha256 "
                f"{before.sha256[:12]}... then; {after.bytes} bytes, "
                f"{after.sha256[:12]}... now): resuming would mix two data sets",
                source=after.path,
            )


def require_unedited(toml: Path, meta: RunRecord) -> None:
    """Refuse to resume when the folder's ``scenario.toml`` was edited after the run began."""
    recorded = meta.scenario_sha256
    if recorded and toml.is_file() and file_sha256(toml) != recorded:
        raise InputError(
            "edited since the run started (run.json records the scenario it began with); "
            "undo the edit to resume, or run the edited scenario into another --out folder",
            source=str(toml),
        )
