"""The shape of ``summary.json``, declared once: what :mod:`marketsim.record.summary` builds,
what the run folder holds and what every reader (reports, the Python API, the command line)
reads, as attributes instead of string keys.

``summary.schema.json`` beside this module is generated from these models
(``python -m marketsim.record.schemas --write``; ``tests/record/test_output_schemas.py`` fails when
it drifts). A key that only some markets have (money, gold, blocking, continuous scores) is an
optional field that is left out of the file, not written as ``null``: the file is dumped
without unset fields, so its bytes are those the plain dicts of earlier versions gave.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from marketsim.errors import InputError

#: A JSON record model read by :func:`read_model`.
ModelT = TypeVar("ModelT", bound=BaseModel)

__all__ = [
    "ArmComparison", "ArmSummary", "Checkpoint", "Comparisons", "Difference", "Interval",
    "ReachInterval", "Summary", "migrate_summary_v1", "read_model", "read_summary",
    "summary_json",
]

#: The headline metric: the error rate of a class market, the RMSE of a continuous one.
MetricKey = Literal["error_rate", "rmse"]
#: The version :class:`Summary` writes. A file without ``record_version`` is version 1, whose
#: arms named their headline error ``error_rate`` even when it was an RMSE
#: (:func:`migrate_summary_v1`).
SUMMARY_VERSION: Literal[2] = 2
#: Version 1's names of an arm's fields -> version 2's.
_V1_ARM_FIELDS = {"error_rate": "error", "error_rate_ci95": "error_ci95",
                  "error_rate_low": "error_low", "error_rate_high": "error_high",
                  "final_error_rate": "final_error_mean"}
#: A target error as its key (``f"{target:g}"``, e.g. ``"0.05"``) -> a value at that target.
Targets = dict[str, int | None]


class _Record(BaseModel):
    """A frozen part of ``summary.json`` that refuses unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Interval(_Record):
    """A mean over replicates and its 95 % Student-t interval (null ends with one replicate,
    null everywhere when unknown)."""

    mean: float | None
    low: float | None
    high: float | None
    n: int = Field(description="values averaged")


class ReachInterval(Interval):
    """An interval of values to a target, with how many replicates reached it (the mean is
    null unless all did)."""

    reached: int
    of: int


class StoppedEarly(_Record):
    """A replicate of an arm that stopped buying before ``budget.edges``: a recorded result
    (its curve stops there), not an error."""

    replicate: int
    labels: int = Field(description="labels bought when it stopped (gold included)")
    causes: list[Literal["money", "blocking", "capacity", "sessions", "abandonment",
                         "closed"]] = Field(
        description="money: the money budget was spent; closed: a platform preset closed "
        "every task; otherwise what left no worker who may work: the worker rules, and "
        "abandonment when the workers left had abandoned the tasks they could still be given")
    detail: str


class ArmSummary(_Record):
    """One arm: its mean curve per edge count (only counts every replicate reached) with the
    interval, and the labels (money, simulated time) to each target error."""

    metric: MetricKey
    replicates: int
    replicate_ids: list[int]
    edges: list[int]
    error: list[float] = Field(description="mean headline error per edge count: the task error "
                               "rate when metric = error_rate, the task-mean RMSE when metric = "
                               "rmse")
    error_ci95: list[float | None] = Field(description="interval half-width")
    error_low: list[float | None]
    error_high: list[float | None]
    ability_error: list[float]
    confusion_error: list[float | None]
    final_error_mean: float | None = Field(
        description="mean over replicates of each replicate's own last headline error "
        "(final_error.mean; the mean curve's last point when every replicate ended there)")
    edges_to_reach: Targets = Field(description="read off the mean curve")
    edges_to_reach_replicates: dict[str, list[int | None]]
    edges_to_reach_ci95: dict[str, ReachInterval]
    money_to_reach_replicates: dict[str, list[float | None]] | None = Field(
        default=None, description="only when every curve row has money")
    money_to_reach_ci95: dict[str, ReachInterval] | None = None
    time_to_reach_replicates: dict[str, list[float | None]]
    time_to_reach_ci95: dict[str, ReachInterval]
    sim_time: list[float]
    gold_labels: Interval | None = Field(default=None, description="gold answers at the end "
                                         "of each replicate; only when curves.csv has it")
    gold_money: Interval | None = None
    blocked_workers: Interval | None = None
    money: list[float] | None = Field(default=None, description="mean money per edge count")
    ended_under_budget: int | None = Field(default=None, description="replicates that ended "
                                           "before budget.edges (every task closed, or the "
                                           "money ran out); only when some did")
    final_edges: Interval | None = Field(default=None, description=(
        "labels at the end of each replicate's run (its last point), mean and interval; "
        "written for every arm (files of earlier versions: only when some replicate ended "
        "under budget)"))
    final_money: Interval | None = Field(default=None, description="money at the end of each "
                                         "replicate's run; only when curves.csv has money")
    final_error: Interval | None = Field(default=None, description="headline error at the end "
                                         "of each replicate's run, interval clipped to the "
                                         "metric's range")
    final_time: Interval | None = Field(default=None, description="simulated time at the end "
                                        "of each replicate's run")
    rmse: list[float | None] | None = Field(default=None, description="continuous markets only")
    plain_rmse: list[float | None] | None = None
    good_accuracy: list[float | None] | None = None
    stopped: list[StoppedEarly] = Field(
        default_factory=list, description="replicates that stopped before budget.edges")

    def final(self, what: Literal["edges", "error", "money", "time"]) -> Interval | None:
        """The one figure "final" means: each replicate's value at its own last point (where
        its run ended), their mean and interval (``final_<what>``). A ``summary.json`` of an
        earlier version has these only when some replicate ended under budget; otherwise
        every replicate ended at the mean curve's last point, which is read (no interval for
        money and time, which the mean curve holds as means only). None when unknown."""
        stored = {"edges": self.final_edges, "error": self.final_error,
                  "money": self.final_money, "time": self.final_time}[what]
        if stored is not None or self.ended_under_budget:
            return stored
        n = self.replicates
        if what == "error":  # final_error_mean was the mean curve's last point
            if self.final_error_mean is None:
                return None
            low, high = (v[-1] if v else None for v in (self.error_low,
                                                        self.error_high))
            return Interval(mean=self.final_error_mean, low=low, high=high, n=n)
        if not self.edges:
            return None
        i = len(self.edges) - 1
        if what == "edges":
            end = float(self.edges[i])
            return Interval(mean=end, low=end if n > 1 else None,
                            high=end if n > 1 else None, n=n)
        values = self.money if what == "money" else self.sim_time
        return None if values is None else Interval(mean=values[i], low=None, high=None, n=n)

    def to_reach_ci95(self, axis: str) -> dict[str, ReachInterval]:
        """``<axis>_to_reach_ci95`` of ``axis`` (``edges``, ``money``, ``time``); empty when
        the arm has no such axis."""
        return {"edges": self.edges_to_reach_ci95, "money": self.money_to_reach_ci95,
                "time": self.time_to_reach_ci95}.get(axis) or {}

    def to_reach_replicates(self, axis: str) -> dict[str, list[float | None]]:
        """``<axis>_to_reach_replicates`` of ``axis``; empty when the arm has no such axis."""
        found: dict[str, list[int | None]] | dict[str, list[float | None]] | None = {
            "edges": self.edges_to_reach_replicates, "money": self.money_to_reach_replicates,
            "time": self.time_to_reach_replicates}.get(axis)
        return {k: list(v) for k, v in (found or {}).items()}

    def axis_values(self, key: str) -> list[float] | None:
        """The x values of a plot axis: ``edges``, ``money`` or ``sim_time`` per point."""
        values = {"edges": self.edges, "money": self.money, "sim_time": self.sim_time}[key]
        return None if values is None else [float(v) for v in values]


class Difference(_Record):
    """One paired comparison: the arm minus the reference over the shared replicates."""

    difference: float | None
    low: float | None
    high: float | None
    p_value: float | None
    replicates: int
    detected: bool
    replicates_needed: int | None
    verdict: str


class Checkpoint(_Record):
    """A paired comparison of the error at one edge count both arms reached."""

    edges: int
    difference: float | None
    low: float | None
    high: float | None
    p_value: float | None
    replicates: int
    detected: bool
    replicates_needed: int | None
    verdict: str


class ArmComparison(_Record):
    """One arm against the reference: at each shared checkpoint, on the final error, and per
    target on labels (money, simulated time) to reach it where both arms have that axis."""

    checkpoints: list[Checkpoint]
    final_error: Difference | None = Field(default=None, description=(
        "each replicate's own final error (its last point, where its run ended) minus the "
        "reference's on the same replicate; the last checkpoint is instead the error at the "
        "last label count both arms' replicates all reached"))
    edges_to_reach: dict[str, Difference] | None = None
    money_to_reach: dict[str, Difference] | None = None
    time_to_reach: dict[str, Difference] | None = None

    def to_reach(self, axis: str) -> dict[str, Difference]:
        """``<axis>_to_reach`` (empty when absent)."""
        return {"edges": self.edges_to_reach, "money": self.money_to_reach,
                "time": self.time_to_reach}.get(axis) or {}


class Comparisons(_Record):
    """Paired comparisons of every arm against ``reference`` (the first arm); an empty object
    with fewer than two arms."""

    reference: str | None = None
    arms: dict[str, ArmComparison] = Field(default_factory=dict)


class Summary(_Record):
    """``summary.json``: a study's finished units summarised per arm."""

    model_config = ConfigDict(
        frozen=True, extra="forbid",
        json_schema_extra={"description": "summary.json of a marketsim run folder"})

    record_version: Literal[2] = Field(
        default=SUMMARY_VERSION, description="2; a file without it is version 1, whose arms "
        "named the headline error error_rate (also when it was an RMSE): read by migration")
    scenario: str
    metric: MetricKey
    seed: int | None
    replicates: int
    complete: bool = Field(description="false for an interrupted run")
    units_finished: int
    units_total: int
    seconds: float | None = Field(description="wall-clock run time, summed over the "
                                  "invocations that simulated units (a resume adds its own); "
                                  "null when re-rendered without an earlier summary.json")
    arms: dict[str, ArmSummary]
    comparisons: Comparisons
    cost_axes: list[Literal["money", "time"]] = Field(
        description="axes that tell more than the labels")


def summary_json(summary: Summary) -> dict[str, object]:
    """``summary`` as the JSON object written to ``summary.json`` (absent keys left out)."""
    return {"record_version": summary.record_version,
            **summary.model_dump(mode="json", exclude_unset=True)}


def migrate_summary_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A version 1 ``summary.json`` object as version 2: each arm's headline error under the
    neutral names (``error``, ``error_ci95``, ``error_low``, ``error_high``,
    ``final_error_mean``; the arm's ``metric`` says whether it is an error rate or an RMSE)."""
    arms = data.get("arms")
    if isinstance(arms, dict):
        arms = {name: {_V1_ARM_FIELDS.get(k, k): v for k, v in arm.items()}
                if isinstance(arm, dict) else arm for name, arm in arms.items()}
    return {"record_version": SUMMARY_VERSION, **data, "arms": arms}


def validation_message(exc: ValidationError) -> str:
    """The first error of ``exc`` as ``key: message`` (``arms.uniform.edges: ...``)."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else str(err["msg"])


def read_model(path: str | Path, model: type[ModelT], what: str) -> ModelT:
    """The JSON file at ``path`` as ``model``; a missing or unreadable file is ``OSError``, a
    file that is not a valid ``what`` an :class:`InputError` naming the file and the first bad
    key."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        return model.model_validate_json(text, strict=True)
    except ValidationError as exc:
        raise InputError(f"not a valid {what}: {validation_message(exc)}",
                         source=str(path)) from None


def read_summary(path: str | Path) -> Summary:
    """``summary.json`` at ``path`` as a :class:`Summary`, migrated when it is of version 1
    (:func:`migrate_summary_v1`; otherwise see :func:`read_model`)."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and "record_version" not in data:
        text = json.dumps(migrate_summary_v1(data))
    try:
        return Summary.model_validate_json(text, strict=True)
    except ValidationError as exc:
        raise InputError(f"not a valid summary.json: {validation_message(exc)}",
                         source=str(path)) from None
