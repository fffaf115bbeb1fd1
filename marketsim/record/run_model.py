"""The shape of ``run.json``, declared once and versioned: what a run folder records about
its study (see :mod:`marketsim.study.identity` for what each part is for).
:class:`RunRecord` is the current file (``record_version`` 2), whose resolved scenario is in
the scenario file's own schema and reads back as a typed ``Scenario``
(:func:`marketsim.scenario.run_record.recorded_scenario`); :class:`RunRecordV1` is the shape
earlier versions wrote (no ``record_version``), read only to be migrated
(:func:`marketsim.scenario.run_migration.read_run`, the one reader of either).

``run.schema.json`` beside this module is generated from :class:`RunRecord`
(``python -m marketsim.record.schemas --write``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PATH_KEYS", "RECORD_VERSION", "DataFile", "ObjectRecord", "RunRecord", "RunRecordV1",
           "run_json"]

#: The version :class:`RunRecord` writes (a file without ``record_version`` is version 1).
RECORD_VERSION: Literal[2] = 2
#: Replay keys holding file or folder paths (recorded absolute; not part of the identity).
PATH_KEYS = ("labels", "truth", "data_dir")


class DataFile(BaseModel):
    """A replayed file: where it was, its size and its SHA-256."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    bytes: int
    sha256: str


class ObjectRecord(BaseModel):
    """A policy or estimator object an arm ran with (given in Python): its class's full name
    and its parameters, what determines its results (null when they cannot be known)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True,
                              serialize_by_alias=True)

    class_name: str = Field(alias="class", description="module.Class")
    params: dict[str, Any] | None = Field(
        description="get_params() or the options model, as JSON data; null when unknowable")


class RunRecord(BaseModel):
    """``run.json``: what the study is and what resuming it needs."""

    model_config = ConfigDict(
        frozen=True, extra="forbid",
        json_schema_extra={"description": "run.json of a marketsim run folder"})

    record_version: Literal[2] = Field(
        default=RECORD_VERSION, description="2; a file without it is version 1, read by migration")
    scenario: str
    seed: int
    replicates: int
    fingerprint: str = Field(description="SHA-256 of the study's identity and data")
    data_files: list[DataFile] = Field(description="replayed files (none for a simulation)")
    versions: dict[str, str] = Field(description="marketsim, Python and dependencies")
    resolved_scenario: dict[str, Any] = Field(
        description="the resolved scenario in the scenario file's own schema "
        "(marketsim/scenario.schema.json): every default filled in, replay paths absolute; "
        "it validates back into the run's Scenario")
    objects: dict[str, ObjectRecord] = Field(
        default_factory=dict, description="arms[i].policy / arms[i].inference -> the Python "
        "object the arm ran (its entry in resolved_scenario is a stand-in)")
    sweep_point: dict[str, Any] = Field(
        default_factory=dict, description="the grid point this run is: dotted key -> value")
    document: dict[str, Any] = Field(
        description="the decoded TOML with absolute replay paths, what a resume parses")
    scenario_sha256: str | None = Field(
        default=None, description="hash of the folder's scenario.toml copy (absent without one)")

    def with_copy_hash(self, sha256: str) -> RunRecord:
        """This record with the hash of the folder's ``scenario.toml`` copy."""
        return self.model_copy(update={"scenario_sha256": sha256})


def run_json(record: RunRecord) -> dict[str, Any]:
    """``record`` as the JSON object written to ``run.json`` (absent keys left out)."""
    return {"record_version": record.record_version,
            **record.model_dump(mode="json", exclude_unset=True)}


class RunRecordV1(BaseModel):
    """``run.json`` as versions before ``record_version`` 2 wrote it: the resolved scenario
    in the flat layout of the old ``Scenario.to_dict()`` (header keys at the top, some keys
    written flat or only when set)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenario: str
    seed: int
    replicates: int
    fingerprint: str
    data_files: list[DataFile]
    versions: dict[str, str]
    resolved_scenario: dict[str, Any]
    document: dict[str, Any]
    scenario_sha256: str | None = None
