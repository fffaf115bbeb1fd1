"""What makes two runs the same study, and what a run folder records to be resumed anywhere.

A run folder holds one study: one resolved scenario, seed and replicate count, and (for a
replay) the same data files. ``run.json`` records

- ``document``: the scenario as decoded from its TOML file, with the replay's relative paths
  made absolute, so a resume re-reads exactly what the run started with, from any working
  directory, even if the folder's ``scenario.toml`` copy was moved or edited;
- ``scenario_sha256``: the hash of that ``scenario.toml`` copy, so an edit is noticed;
- ``data_files``: every replayed file's absolute path, size and SHA-256;
- ``fingerprint``: the SHA-256 of the study's identity (resolved scenario without its file
  locations, plus the data files' hashes), compared before anything is written into a folder.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from marketsim.errors import InputError
from marketsim.scenario.specs import Scenario

#: Replay keys holding file or folder paths, relative to the scenario file in its TOML.
PATH_KEYS = ("labels", "truth", "data_dir")
#: Resolved-scenario keys that say where things were, not what the study is.
LOCATION_KEYS = ("source", "raw")


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


def resolved(scenario: Scenario) -> dict[str, Any]:
    """The resolved scenario (defaults included) with replay paths made absolute."""
    out = plain(scenario.to_dict())
    if isinstance(out.get("replay"), dict):
        for key in PATH_KEYS:
            if isinstance(out["replay"].get(key), str):
                out["replay"][key] = os.path.abspath(out["replay"][key])
    return out


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


def data_files(scenario: Scenario) -> list[dict[str, Any]]:
    """Absolute path, size and SHA-256 of every file a replay scenario reads (none if it
    simulates its crowd)."""
    if scenario.replay is None:
        return []
    labels, truth = scenario.replay.paths()
    return [
        {"path": os.path.abspath(p), "bytes": os.path.getsize(p), "sha256": file_sha256(p)}
        for p in (labels, truth) if p is not None
    ]


def identity(resolved_scenario: dict[str, Any]) -> dict[str, Any]:
    """What defines the study in a resolved scenario: everything but file locations."""
    out = {k: v for k, v in resolved_scenario.items() if k not in LOCATION_KEYS}
    if isinstance(out.get("replay"), dict):
        out["replay"] = {k: v for k, v in out["replay"].items() if k not in PATH_KEYS}
    return out


def fingerprint(resolved_scenario: dict[str, Any], files: list[dict[str, Any]]) -> str:
    """SHA-256 of the study's identity and its data files' contents."""
    text = json.dumps(
        {"scenario": identity(resolved_scenario), "data": [f["sha256"] for f in files]},
        sort_keys=True,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _flat(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for key, value in obj.items():
            out.update(_flat(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: obj}


def difference(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """The first way the study recorded in ``old`` (a ``run.json``) differs from ``new``, in
    words, or None when they are the same study."""
    if old.get("fingerprint") and old.get("fingerprint") == new.get("fingerprint"):
        return None
    if not isinstance(old.get("resolved_scenario"), dict):
        return "its run.json records no scenario"
    was, now = _flat(identity(old["resolved_scenario"])), _flat(identity(new["resolved_scenario"]))
    for key in ("name", "seed", "replicates", *sorted(set(was) | set(now))):
        if was.get(key, "(unset)") != now.get(key, "(unset)"):
            label = "scenario name" if key == "name" else key
            return f"{label} {was.get(key, '(unset)')!r} there, {now.get(key, '(unset)')!r} here"
    if "data_files" not in old:  # written by an older marketsim: no data hashes to compare
        return None
    for before, after in zip(old["data_files"], new["data_files"], strict=False):
        if before.get("sha256") != after.get("sha256"):
            return (f"replayed data {Path(after['path']).name} differs "
                    f"({before.get('bytes')} bytes there, {after['bytes']} here)")
    if len(old["data_files"]) != len(new["data_files"]):
        return "replayed data files differ"
    return None


def check_data_unchanged(recorded: list[dict[str, Any]], scenario: Scenario) -> None:
    """Refuse to resume a replay whose data files changed since the run started."""
    for before, after in zip(recorded, data_files(scenario), strict=False):
        if before.get("sha256") != after["sha256"]:
            raise InputError(
                f"changed since the run started ({before.get('bytes')} bytes, sha256 "
                f"{str(before.get('sha256'))[:12]}... then; {after['bytes']} bytes, "
                f"{after['sha256'][:12]}... now): resuming would mix two data sets",
                source=after["path"],
            )


def require_unedited(toml: Path, meta: dict[str, Any]) -> None:
    """Refuse to resume when the folder's ``scenario.toml`` was edited after the run began."""
    recorded = meta.get("scenario_sha256")
    if recorded and toml.is_file() and file_sha256(toml) != recorded:
        raise InputError(
            "edited since the run started (run.json records the scenario it began with); "
            "undo the edit to resume, or run the edited scenario into another --out folder",
            source=str(toml),
        )
