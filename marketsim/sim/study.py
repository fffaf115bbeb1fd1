"""A study on disk: the run folder, its files, and what is written when a run ends or stops."""

from __future__ import annotations

import importlib.metadata
import json
import platform
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from marketsim import __version__
from marketsim.report.curves import summarise, write_curves
from marketsim.report.files import write_bytes_atomic, write_json_atomic
from marketsim.sim.runner import UnitResult, canonical_rows
from marketsim.sim.scenario import Scenario

DEPENDENCIES = ("numpy", "scipy", "scikit-learn", "networkx", "simpy", "rich", "joblib")


def default_run_dir(scenario: Scenario, root: str | Path = "reports") -> Path:
    """``reports/<scenario-slug>/<UTC timestamp>/`` (a suffix keeps it unique)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
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


def build_summary(
    scenario: Scenario, results: list[UnitResult], seconds: float, complete: bool
) -> dict[str, Any]:
    """The ``summary.json`` content."""
    rows = canonical_rows(scenario, results)
    return {
        "scenario": scenario.name,
        "seed": scenario.seed,
        "replicates": scenario.replicates,
        "complete": complete,
        "units_finished": len(results),
        "units_total": scenario.replicates * len(scenario.arms),
        "seconds": round(seconds, 3),
        "arms": summarise(rows, [a.name for a in scenario.arms]),
    }


def write_run(
    run_dir: Path,
    scenario: Scenario,
    results: list[UnitResult],
    started: float,
    *,
    complete: bool,
) -> dict[str, Any]:
    """Write curves, summary, scenario copy and versions (each atomically); return the summary."""
    run_dir.mkdir(parents=True, exist_ok=True)
    write_curves(run_dir / "curves.csv", canonical_rows(scenario, results))
    summary = build_summary(scenario, results, time.perf_counter() - started, complete)
    write_json_atomic(run_dir / "summary.json", summary)
    src = Path(scenario.source)
    if src.is_file() and not (run_dir / "scenario.toml").exists():
        write_bytes_atomic(run_dir / "scenario.toml", src.read_bytes())
    write_json_atomic(
        run_dir / "run.json",
        {"seed": scenario.seed, "replicates": scenario.replicates, "versions": versions(),
         "resolved_scenario": json.loads(json.dumps(scenario.to_dict(), default=str))},
    )
    return summary
