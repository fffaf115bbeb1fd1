"""A study on disk: the run folder, per-unit checkpoints, and the final files.

Layout of a run folder::

    .lock              held (flock) by the run writing into the folder
    scenario.toml      byte copy of the scenario (written first, so a run can be resumed)
    run.json           seed, replicates, resolved scenario, versions, and what a resume from
                       any working directory needs (see :mod:`marketsim.study.identity`)
    units/             one JSON checkpoint per finished (replicate, arm) unit, written atomically
    curves.csv         all finished units, canonical order
    summary.json       per-arm summary; ``complete`` is false for an interrupted run
"""

from __future__ import annotations

import importlib.metadata
import platform
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from marketsim._version import __version__
from marketsim.errors import InputError
from marketsim.record.curves import CurveRow, read_curves, write_curves
from marketsim.record.files import write_bytes_atomic, write_json_atomic
from marketsim.record.run_model import RunRecord, run_json
from marketsim.record.summary import TARGETS
from marketsim.record.summary import build_summary as summarise_study
from marketsim.record.summary_model import Summary, read_summary, summary_json
from marketsim.record.units import UnitResult, canonical_rows
from marketsim.scenario.parser import load_scenario, parse_scenario
from marketsim.scenario.run_migration import read_run
from marketsim.scenario.run_record import recorded_document
from marketsim.scenario.specs import Scenario
from marketsim.study.checkpoints import (
    Damaged,
    curve_problem,
    load_units,
    may_close,
    save_unit,
    unit_path,
)
from marketsim.study.identity import (
    absolute_document,
    check_data_unchanged,
    data_files,
    difference,
    file_sha256,
    fingerprint,
    identity,
    objects,
    require_unedited,
    unknowable,
)

__all__ = [
    "build_summary", "check_curves", "check_same_study", "default_run_dir", "earlier_seconds",
    "load_units", "resume_scenario", "run_record", "save_unit", "scenario_setup", "start_run",
    "sync_curves", "unit_path", "write_run",
]

DEPENDENCIES = (
    "numpy", "scipy", "scikit-learn", "networkx", "simpy", "rich", "joblib", "matplotlib",
    "distributed",
)


def default_run_dir(scenario: Scenario, root: str | Path = "reports") -> Path:
    """``reports/<scenario-slug>/<UTC timestamp>/`` (a suffix keeps it unique)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = Path(root) / scenario.slug / stamp
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{stamp}-{n}")
    return path


def versions() -> dict[str, str]:
    """Versions of marketsim, Python and the dependencies, for reproducibility."""
    out = {"marketsim": __version__, "python": platform.python_version()}
    for dist in DEPENDENCIES:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def run_record(scenario: Scenario) -> RunRecord:
    """The ``run.json`` content of ``scenario``: what it is (fingerprint, resolved scenario,
    data files) and what resuming it needs (the document with absolute data paths)."""
    setup, files, arm_objects = recorded_document(scenario), data_files(scenario), \
        objects(scenario)
    point = dict(scenario.sweep_point)
    return RunRecord(
        scenario=scenario.name, seed=scenario.seed, replicates=scenario.replicates,
        fingerprint=fingerprint(identity(setup, arm_objects, point), files),
        data_files=files, versions=versions(), resolved_scenario=setup, objects=arm_objects,
        sweep_point=point, document=absolute_document(scenario),
    )


def _read_meta(run_dir: Path, replay_at: Mapping[str, Any] | None = None
               ) -> RunRecord | None:
    """``run.json`` as its model (migrated from an earlier version, its replay's data read at
    ``replay_at``'s paths when given), or None when it is missing, unreadable or not a valid
    record (a damaged file)."""
    try:
        return read_run(run_dir / "run.json", replay_at)
    except (OSError, InputError):
        return None


def check_same_study(run_dir: Path, record: RunRecord) -> None:
    """Refuse to write ``record``'s study into a folder that holds another one."""
    replay = record.resolved_scenario.get("replay")
    meta = _read_meta(run_dir, replay if isinstance(replay, dict) else None)
    if meta is None:
        if (run_dir / "run.json").exists():
            raise InputError("run.json is unreadable or not a valid record: not a run folder "
                             "this run can continue (choose another --out folder)",
                             source=str(run_dir))
        return
    for recorded in (record, meta):
        where = unknowable(recorded)
        if where is not None:
            raise InputError(
                f"{run_dir} already holds a run, and {where} has parameters that cannot be "
                "known (no get_params() or options model), so its results cannot be matched: "
                "choose another --out folder")
    what = difference(meta, record)
    if what is not None:
        raise InputError(
            f"{run_dir} holds another study ({what}); resume it with "
            f"'python -m marketsim run --resume {run_dir}', or choose another --out folder"
        )


def start_run(run_dir: Path, scenario: Scenario, record: RunRecord | None = None) -> None:
    """Create the folder and write what a resume needs: the scenario copy and run.json."""
    run_dir.mkdir(parents=True, exist_ok=True)
    record = record or run_record(scenario)
    src, copy = Path(scenario.source), run_dir / "scenario.toml"
    if src.is_file() and not (copy.exists() and src.samefile(copy)):  # not when resuming
        write_bytes_atomic(copy, src.read_bytes())
    if copy.is_file():
        record = record.with_copy_hash(file_sha256(copy))
    write_json_atomic(run_dir / "run.json", run_json(record))


def resume_scenario(run_dir: Path, data_dir: str | None = None, *,
                    allow_imports: bool = False) -> Scenario:
    """The scenario of an earlier run, with the seed and replicates it ran with: parsed from
    the document ``run.json`` recorded (absolute data paths, ``data_dir`` replacing
    ``replay.data_dir``), else (folders of older versions) from the ``scenario.toml`` copy;
    ``allow_imports`` (``--allow-imports``) imports its import-path components again."""
    if not run_dir.is_dir():
        raise InputError("run folder not found", source=str(run_dir))
    src = run_dir / "scenario.toml"
    meta = _read_meta(run_dir, None if data_dir is None else
                      {"data_dir": str(Path(data_dir).absolute())})
    objects = _objects(meta)
    if objects is not None:
        raise InputError(f"{run_dir} was run from Python with {objects}: resume it from "
                         "Python, with marketsim.run(scenario, out=...)")
    if meta is not None:
        require_unedited(src, meta)
        document = dict(meta.document)
        if data_dir is not None and isinstance(document.get("replay"), dict):
            document["replay"] = {**document["replay"], "data_dir": str(Path(data_dir).absolute())}
        scenario = parse_scenario(document, str(src), allow_imports=allow_imports)
        check_data_unchanged(meta.data_files, scenario)
        return scenario.with_overrides(replicates=meta.replicates, seed=meta.seed)
    if not src.is_file():
        raise InputError("no scenario.toml here: not a marketsim run folder", source=str(run_dir))
    # run.json gone: the copy's own seed and replicates
    return load_scenario(src, allow_imports=allow_imports)


def _objects(meta: RunRecord | None) -> str | None:
    """``arms[i].policy`` (or ``.inference``) of the first arm run with a Python object."""
    first = next(iter(meta.objects), None) if meta is not None else None
    return None if first is None else f"an object as {first}"


def scenario_setup(run_dir: Path) -> Scenario | None:
    """The run's scenario (from its ``scenario.toml`` copy), or None when it cannot be read:
    what a report needs when ``run.json`` is gone."""
    try:
        return resume_scenario(run_dir)
    except InputError:
        return None


def build_summary(
    scenario: Scenario, results: list[UnitResult], seconds: float, complete: bool
) -> Summary:
    """The ``summary.json`` content of ``scenario``'s finished units."""
    return summarise_study(
        name=scenario.name, seed=scenario.seed, replicates=scenario.replicates,
        arm_names=[a.name for a in scenario.arms], results=results, seconds=seconds,
        complete=complete, targets=scenario.targets or TARGETS,
        budget_edges=scenario.budget.edges,
    )


def sync_curves(run_dir: Path, on_damaged: Damaged | None = None) -> bool:
    """Rewrite ``curves.csv`` and ``summary.json`` from the unit checkpoints when those hold
    more finished units than ``curves.csv`` (a run killed by SIGKILL, or by a power cut, has
    written only its checkpoints). Returns True when the files were rewritten."""
    if not any((run_dir / "units").glob("r*_a*.json")):
        return False
    if not (run_dir / "scenario.toml").is_file():
        return False
    scenario = resume_scenario(run_dir)
    units = load_units(run_dir, scenario, on_damaged)
    if not units:
        return False
    curves = run_dir / "curves.csv"
    if curves.is_file():
        try:
            have = {(r.arm, r.replicate) for r in read_curves(curves)}
        except InputError:
            have = set()
        if len(have) >= len(units):
            return False
    total = scenario.replicates * len(scenario.arms)
    seconds = sum(u.seconds for u in units)
    write_run(run_dir, scenario, units, time.perf_counter() - seconds,
              complete=len(units) >= total)
    return True


def _recorded_stops(run_dir: Path) -> dict[tuple[str, int], int]:
    """(arm, replicate) -> labels of every early stop the folder's ``summary.json`` records."""
    try:
        summary = read_summary(run_dir / "summary.json")
    except (OSError, InputError):
        return {}
    return {(name, s.replicate): s.labels for name, arm in summary.arms.items()
            for s in arm.stopped or ()}


def check_curves(run_dir: Path) -> None:
    """Refuse a ``curves.csv`` that is not what the run saved, before a report is built from
    it: an :class:`InputError` (one line naming the file and the unit) when a unit's rows
    differ from its checkpoint in ``units/`` (a truncated or edited file), or, for a unit
    without a checkpoint, when its curve does not step by ``budget.batch`` or ends before
    ``budget.edges`` where no early stop is recorded. A folder whose scenario cannot be read
    is not checked."""
    curves = run_dir / "curves.csv"
    if not curves.is_file():
        return
    try:
        scenario = resume_scenario(run_dir)
    except InputError:
        return
    index = {arm.name: i for i, arm in enumerate(scenario.arms)}
    saved = {(u.arm, u.replicate): u for u in load_units(run_dir, scenario)}
    units: dict[tuple[str, int], list[CurveRow]] = {}
    for row in read_curves(curves):
        units.setdefault((row.arm, row.replicate), []).append(row)
    stops = _recorded_stops(run_dir)
    for (name, rep), rows in units.items():
        arm = index.get(name)
        if arm is None:  # an arm the scenario does not have: the report names it
            continue
        where = f"replicate {rep} of arm {name!r}"
        unit = saved.get((arm, rep))
        if unit is not None:
            if [_headline(r) for r in rows] != [_headline(r) for r in unit.rows]:
                raise InputError(
                    f"{where} is not what its checkpoint {unit_path(run_dir, rep, arm).name} "
                    f"holds ({len(rows)} rows ending at {rows[-1].edges} labels, the checkpoint "
                    f"{len(unit.rows)} ending at {unit.rows[-1].edges}): truncated or edited? "
                    "Delete curves.csv and run 'report' again to rebuild it from the "
                    "checkpoints", source=str(curves))
            continue
        problem = curve_problem([r.edges for r in rows], scenario, stops.get((name, rep)),
                                closes=may_close(scenario, arm))
        if problem:
            raise InputError(f"{where}: {problem}, and no checkpoint or early stop is recorded "
                             "for it: truncated or edited?", source=str(curves))


def _headline(row: CurveRow) -> tuple[Any, ...]:
    """What a report reads of a row (the columns every ``curves.csv`` has)."""
    return row.edges, *row.metrics()[:3]


def earlier_seconds(run_dir: Path, done: list[UnitResult]) -> float:
    """The run time earlier invocations measured for the units ``done`` that a resume (or a
    re-run into the folder) found checkpointed: the ``seconds`` of the folder's
    ``summary.json`` (which they wrote on finishing or on Ctrl-C), else, when they were killed
    before writing it, the units' own simulation times; 0 without units."""
    if not done:
        return 0.0
    try:
        seconds = read_summary(run_dir / "summary.json").seconds
    except (OSError, InputError):
        seconds = None
    return seconds if seconds is not None else sum(u.seconds for u in done)


def write_run(
    run_dir: Path,
    scenario: Scenario,
    results: list[UnitResult],
    started: float,
    *,
    complete: bool,
    earlier: float = 0.0,
    ran: bool = True,
) -> Summary:
    """Write curves.csv and summary.json (each atomically); return the summary. Its run time
    is the sum over invocations: ``earlier`` (:func:`earlier_seconds`) plus this one's since
    ``started`` when it simulated a unit (``ran``)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    write_curves(run_dir / "curves.csv", canonical_rows(results))
    seconds = earlier + (time.perf_counter() - started if ran else 0.0)
    summary = build_summary(scenario, results, seconds, complete)
    write_json_atomic(run_dir / "summary.json", summary_json(summary))
    return summary
