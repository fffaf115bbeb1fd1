"""Per-unit checkpoints ``units/rNNNNNN_aNNN.json``: written atomically, checked when read.

A checkpoint that cannot be trusted (truncated, a string or NaN where a number belongs, rows that
do not make the arm's curve, the wrong arm) is never used: it is named through ``on_damaged``
and its unit is treated as not done, so a resume simulates it again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from marketsim.policies.base import is_worker_aware
from marketsim.record.curves import CurveRow
from marketsim.record.files import write_json_atomic
from marketsim.record.units import STOP_CAUSES, Stop, UnitResult
from marketsim.scenario.specs import Scenario

#: Numbers in a checkpoint row: edges, then the metrics (older checkpoints have fewer).
ROW_LENGTHS = range(4, 13)

#: ``on_damaged(path, reason)``: told about every checkpoint that is not used.
Damaged = Callable[[Path, str], None]

#: A unit that took at least this many seconds has its checkpoint flushed to the disk (fsync,
#: :func:`~marketsim.record.files.write_bytes_atomic`): an fsync (about 5 ms measured on
#: the project's machine, tens on a slow disk) is then at most about 1 % of the unit's time. A
#: cheaper unit's checkpoint is not flushed: a power cut within the system's write-back delay
#: (30 s on Linux) may lose it or leave it empty, and a resume simulates such a unit again
#: (:func:`load_units` finds it missing or damaged), which costs less than the fsync saved
#: on every unit of a small study (lesson 6's units take 5 to 100 ms).
DURABLE_UNIT_SECONDS = 1.0


def _json_number(x: float) -> float | None:
    """A float for JSON: NaN (a metric the market does not have) is written as null."""
    return x if math.isfinite(x) else None


def unit_path(run_dir: Path, replicate: int, arm: int) -> Path:
    """Checkpoint file of one unit."""
    return run_dir / "units" / f"r{replicate:06d}_a{arm:03d}.json"


def save_unit(run_dir: Path, scenario: Scenario, unit: UnitResult) -> None:
    """Checkpoint a finished unit atomically (floats round-trip exactly through JSON), flushed
    to the disk when the unit took :data:`DURABLE_UNIT_SECONDS` or more."""
    write_json_atomic(
        unit_path(run_dir, unit.replicate, unit.arm),
        {
            "replicate": unit.replicate,
            "arm": unit.arm,
            "arm_name": scenario.arms[unit.arm].name,
            "seconds": unit.seconds,
            **({} if unit.stop is None else {"stop": {
                "labels": unit.stop.labels, "causes": list(unit.stop.causes),
                "detail": unit.stop.detail}}),
            "rows": [
                [r.edges, *r.metrics()[:3], *(_json_number(x) for x in r.metrics()[3:])]
                for r in unit.rows
            ],
        },
        durable=unit.seconds >= DURABLE_UNIT_SECONDS,
    )


def _number(x: Any, *, null: bool) -> bool:
    """A finite JSON number (or null, where a metric may be missing)."""
    if x is None:
        return null
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _stop(data: Any) -> Stop | str | None:
    """The recorded early stop of a checkpoint (None without one), or why it is damaged."""
    if data is None:
        return None
    if not (isinstance(data, dict) and isinstance(data.get("labels"), int)
            and isinstance(data.get("detail"), str) and isinstance(data.get("causes"), list)
            and data["causes"] and all(c in STOP_CAUSES for c in data["causes"])):
        return f"'stop' is not a recorded stop: {data!r}"
    return Stop(data["labels"], tuple(data["causes"]), data["detail"])


def _row_problem(rows: Any, scenario: Scenario, stop: Stop | None = None,
                 closes: bool = False) -> str | None:
    """Why ``rows`` cannot be an arm's curve in ``scenario`` (that stopped early at
    ``stop.labels`` when ``stop`` is given), or None (``closes``: the arm's policy chooses per
    worker, so it may close every task and end the run under budget)."""
    if not isinstance(rows, list) or not rows:
        return "no rows"
    for idx, row in enumerate(rows):
        if not isinstance(row, list) or len(row) not in ROW_LENGTHS:
            return f"row {idx} is not a list of {ROW_LENGTHS[0]}-{ROW_LENGTHS[-1]} numbers"
        if not isinstance(row[0], int) or isinstance(row[0], bool) or row[0] < 0:
            return f"row {idx}: edges {row[0]!r} is not a count"
        bad = [x for i, x in enumerate(row[1:]) if not _number(x, null=i >= 3)]
        if bad:
            return f"row {idx}: {bad[0]!r} where a number belongs"
    return curve_problem([row[0] for row in rows], scenario,
                         None if stop is None else stop.labels, closes)


def curve_problem(edges: list[int], scenario: Scenario, stopped_at: int | None = None,
                  closes: bool = False) -> str | None:
    """Why a unit's curve ending at ``edges[-1]`` labels (the label counts of its rows) cannot
    be an arm's full curve in ``scenario``, or None: it must step by ``budget.batch`` and end
    at ``budget.edges``, or earlier where the unit recorded a stop (``stopped_at``), a money
    budget or a policy that closes tasks (``closes``) may end it."""
    steps = [b - a for a, b in zip(edges, edges[1:], strict=False)]
    batch, budget = scenario.budget.batch, scenario.budget.edges
    # The market refreshes every ``batch`` labels and once more when the budget is spent.
    if any(s != batch for s in steps[:-1]) or (steps and not 0 < steps[-1] <= batch):
        return f"{len(edges)} rows that do not step by budget.batch = {batch}"
    # A money budget (budget.money) may end a curve before budget.edges, never after it, and
    # so may running out of workers, when the unit recorded that it stopped there, or a policy
    # that closed every task (a platform preset).
    if stopped_at is not None and edges[-1] != stopped_at:
        return f"rows ending at {edges[-1]} labels, but the unit stopped at {stopped_at}"
    early = (scenario.budget.money is not None or stopped_at is not None or closes) and \
        edges[-1] <= budget
    if not early and (edges[-1] < budget or (len(edges) > 1 and edges[-1] != budget)):
        return f"{len(edges)} rows ending at {edges[-1]} labels, not budget.edges = {budget}"
    return None


def may_close(scenario: Scenario, arm: int) -> bool:
    """Whether arm ``arm``'s policy chooses per worker, so it may close every task and end
    a unit under budget."""
    policy = scenario.arms[arm].policy
    return is_worker_aware(policy.cls or policy.obj)


def _read_unit(path: Path, scenario: Scenario) -> UnitResult | str | None:
    """The checkpoint's unit, the reason it is damaged, or None when it is not this
    scenario's (a replicate or arm beyond the scenario's)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        return "not UTF-8 text"
    except ValueError as exc:
        return f"not valid JSON ({exc}): truncated?"
    if not isinstance(data, dict):
        return "not a JSON object"
    missing = [k for k in ("replicate", "arm", "arm_name", "rows") if k not in data]
    if missing:
        return f"no {missing[0]!r}"
    rep, arm = data["replicate"], data["arm"]
    if not (isinstance(rep, int) and isinstance(arm, int)) or rep < 0 or arm < 0:
        return f"replicate {rep!r} / arm {arm!r} are not indices"
    if path.name != unit_path(path.parent.parent, rep, arm).name:
        return f"holds replicate {rep}, arm {arm}, not the unit its name says"
    if rep >= scenario.replicates or arm >= len(scenario.arms):
        return None
    name = scenario.arms[arm].name
    if data["arm_name"] != name:
        return f"is for arm {data['arm_name']!r}, the scenario's arm {arm} is {name!r}"
    stop = _stop(data.get("stop"))
    if isinstance(stop, str):
        return stop
    problem = _row_problem(data["rows"], scenario, stop, closes=may_close(scenario, arm))
    if problem:
        return problem
    seconds = data.get("seconds", 0.0)
    rows = tuple(
        CurveRow(r[0], float(r[1]), float(r[2]), float(r[3]),
                 *(float("nan") if x is None else float(x) for x in r[4:]),
                 arm=name, replicate=rep)
        for r in data["rows"]
    )
    return UnitResult(rep, arm, rows, float(seconds) if _number(seconds, null=False) else 0.0,
                      stop)


def load_units(
    run_dir: Path, scenario: Scenario, on_damaged: Damaged | None = None
) -> list[UnitResult]:
    """Every sound checkpoint of this scenario in ``run_dir``; damaged ones are reported to
    ``on_damaged`` and left out (their units count as not done)."""
    units: list[UnitResult] = []
    for path in sorted((run_dir / "units").glob("r*_a*.json")):
        try:
            got = _read_unit(path, scenario)
        except OSError as exc:
            got = f"cannot be read ({exc.strerror})"
        if isinstance(got, UnitResult):
            units.append(got)
        elif got is not None and on_damaged is not None:
            on_damaged(path, got)
    return units
