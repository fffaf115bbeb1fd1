"""A study on disk: the run folder, per-unit checkpoints, and the final files.

Layout of a run folder::

    scenario.toml      byte copy of the scenario (written first, so a run can be resumed)
    run.json           seed, replicates, resolved scenario, versions
    units/             one JSON checkpoint per finished (replicate, arm) unit, written atomically
    curves.csv         all finished units, canonical order
    summary.json       per-arm summary; ``complete`` is false for an interrupted run
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from marketsim._version import __version__
from marketsim.errors import InputError
from marketsim.record.curves import CurveRow, read_curves, write_curves
from marketsim.record.files import write_bytes_atomic, write_json_atomic
from marketsim.record.summary import build_summary as summarise_study
from marketsim.record.units import UnitResult, canonical_rows
from marketsim.scenario.parser import load_scenario
from marketsim.scenario.specs import Scenario

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


def start_run(run_dir: Path, scenario: Scenario) -> None:
    """Create the folder and write what a resume needs: the scenario copy and run.json."""
    run_dir.mkdir(parents=True, exist_ok=True)
    src = Path(scenario.source)
    if src.is_file() and not (run_dir / "scenario.toml").exists():
        write_bytes_atomic(run_dir / "scenario.toml", src.read_bytes())
    write_json_atomic(
        run_dir / "run.json",
        {
            "scenario": scenario.name,
            "seed": scenario.seed,
            "replicates": scenario.replicates,
            "versions": versions(),
            "resolved_scenario": json.loads(json.dumps(scenario.to_dict(), default=str)),
        },
    )


def _json_number(x: float) -> float | None:
    """A float for JSON: NaN (a metric the market does not have) is written as null."""
    return x if math.isfinite(x) else None


def _float(x: float | None) -> float:
    """Inverse of :func:`_json_number`."""
    return float("nan") if x is None else float(x)


def unit_path(run_dir: Path, replicate: int, arm: int) -> Path:
    """Checkpoint file of one unit."""
    return run_dir / "units" / f"r{replicate:06d}_a{arm:03d}.json"


def save_unit(run_dir: Path, scenario: Scenario, unit: UnitResult) -> None:
    """Checkpoint a finished unit atomically (floats round-trip exactly through JSON)."""
    write_json_atomic(
        unit_path(run_dir, unit.replicate, unit.arm),
        {
            "replicate": unit.replicate,
            "arm": unit.arm,
            "arm_name": scenario.arms[unit.arm].name,
            "seconds": unit.seconds,
            "rows": [
                [r.edges, *r.metrics()[:3], *(_json_number(x) for x in r.metrics()[3:])]
                for r in unit.rows
            ],
        },
    )


def load_units(run_dir: Path, scenario: Scenario) -> list[UnitResult]:
    """Read every checkpoint that belongs to this scenario; skip unreadable ones (a unit whose
    checkpoint is broken is simply run again)."""
    units: list[UnitResult] = []
    for path in sorted((run_dir / "units").glob("r*_a*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            rep, arm = int(data["replicate"]), int(data["arm"])
            if rep >= scenario.replicates or arm >= len(scenario.arms):
                continue
            name = scenario.arms[arm].name
            if data["arm_name"] != name:
                raise InputError(
                    f"checkpoint is for arm {data['arm_name']!r}, scenario has {name!r}",
                    source=str(path),
                )
            rows = tuple(
                CurveRow(int(r[0]), float(r[1]), float(r[2]), float(r[3]),
                         *(_float(x) for x in r[4:8]),  # older checkpoints: fewer columns
                         arm=name, replicate=rep)
                for r in data["rows"]
            )
            units.append(UnitResult(rep, arm, rows, float(data.get("seconds", 0.0))))
        except (ValueError, KeyError, TypeError):
            continue
    return units


def resume_scenario(run_dir: Path) -> Scenario:
    """The scenario of an earlier run, with the seed and replicates it ran with."""
    if not run_dir.is_dir():
        raise InputError("run folder not found", source=str(run_dir))
    src = run_dir / "scenario.toml"
    if not src.is_file():
        raise InputError("no scenario.toml here: not a marketsim run folder", source=str(run_dir))
    scenario = load_scenario(src)
    try:
        meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        return scenario.with_overrides(
            replicates=int(meta["replicates"]), seed=int(meta["seed"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return scenario


def scenario_setup(run_dir: Path) -> dict[str, Any] | None:
    """The run's scenario (from its ``scenario.toml`` copy) as a plain dict, or None when it
    cannot be read: what a report needs when ``run.json`` is gone."""
    try:
        return json.loads(json.dumps(resume_scenario(run_dir).to_dict(), default=str))
    except InputError:
        return None


def build_summary(
    scenario: Scenario, results: list[UnitResult], seconds: float, complete: bool
) -> dict[str, Any]:
    """The ``summary.json`` content of ``scenario``'s finished units."""
    return summarise_study(
        name=scenario.name, seed=scenario.seed, replicates=scenario.replicates,
        arm_names=[a.name for a in scenario.arms], results=results, seconds=seconds,
        complete=complete,
    )


def sync_curves(run_dir: Path) -> bool:
    """Rewrite ``curves.csv`` and ``summary.json`` from the unit checkpoints when those hold
    more finished units than ``curves.csv`` (a run killed by SIGKILL, or by a power cut, has
    written only its checkpoints). Returns True when the files were rewritten."""
    if not any((run_dir / "units").glob("r*_a*.json")):
        return False
    if not (run_dir / "scenario.toml").is_file():
        return False
    scenario = resume_scenario(run_dir)
    units = load_units(run_dir, scenario)
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


def write_run(
    run_dir: Path,
    scenario: Scenario,
    results: list[UnitResult],
    started: float,
    *,
    complete: bool,
) -> dict[str, Any]:
    """Write curves.csv and summary.json (each atomically); return the summary."""
    run_dir.mkdir(parents=True, exist_ok=True)
    write_curves(run_dir / "curves.csv", canonical_rows(results))
    summary = build_summary(scenario, results, time.perf_counter() - started, complete)
    write_json_atomic(run_dir / "summary.json", summary)
    return summary
