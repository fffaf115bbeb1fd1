"""The shape of ``run.json``, declared once: what a run folder records about its study (see
:mod:`marketsim.study.identity` for what each part is for), written by the study layer and
read there, by the reports and by the command line through :func:`read_run`.

``run.schema.json`` beside this module is generated from :class:`RunRecord`
(``python -m marketsim.record.schemas --write``). The resolved scenario and the decoded TOML
document are kept as JSON objects: their shape is the scenario's own
(``scenario.schema.json`` for the document).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from marketsim.record.summary_model import read_model

__all__ = ["DataFile", "RunRecord", "read_run", "run_json"]


class DataFile(BaseModel):
    """A replayed file: where it was, its size and its SHA-256."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    bytes: int
    sha256: str


class RunRecord(BaseModel):
    """``run.json``: what the study is and what resuming it needs."""

    model_config = ConfigDict(
        frozen=True, extra="forbid",
        json_schema_extra={"description": "run.json of a marketsim run folder"})

    scenario: str
    seed: int
    replicates: int
    fingerprint: str = Field(description="SHA-256 of the study's identity and data")
    data_files: list[DataFile] = Field(description="replayed files (none for a simulation)")
    versions: dict[str, str] = Field(description="marketsim, Python and dependencies")
    resolved_scenario: dict[str, Any] = Field(
        description="the scenario with defaults, as Scenario.to_dict() gives it")
    document: dict[str, Any] = Field(
        description="the decoded TOML with absolute replay paths, what a resume parses")
    scenario_sha256: str | None = Field(
        default=None, description="hash of the folder's scenario.toml copy (absent without one)")

    def with_copy_hash(self, sha256: str) -> RunRecord:
        """This record with the hash of the folder's ``scenario.toml`` copy."""
        return self.model_copy(update={"scenario_sha256": sha256})


def run_json(record: RunRecord) -> dict[str, Any]:
    """``record`` as the JSON object written to ``run.json`` (absent keys left out)."""
    return record.model_dump(mode="json", exclude_unset=True)


def read_run(path: str | Path) -> RunRecord:
    """``run.json`` at ``path`` as a :class:`RunRecord` (see
    :func:`~marketsim.record.summary_model.read_model`)."""
    return read_model(path, RunRecord, "run.json")
