"""One study run from start to summary, watched by a progress observer: what ``marketsim run``
and ``marketsim.run`` share.

With a run folder, finished units are checkpointed there (and reloaded when the folder already
holds some of this study's units), and ``curves.csv`` / ``summary.json`` are written at the end
or on Ctrl-C; without one, nothing is written and the summary is built in memory.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from marketsim.errors import SimulationError
from marketsim.record.summary_model import Summary
from marketsim.record.units import UnitResult
from marketsim.scenario.specs import Scenario
from marketsim.study.checkpoints import Damaged
from marketsim.study.run_folder import (
    build_summary,
    check_same_study,
    earlier_seconds,
    load_units,
    run_record,
    save_unit,
    start_run,
    write_run,
)
from marketsim.study.runner import run_study


def run_observed(
    scenario: Scenario,
    run_dir: Path | None,
    observer: Any,
    *,
    jobs: int = 1,
    backend: str = "local",
    scheduler: str | None = None,
    allow_imports: bool = False,
    on_damaged: Damaged | None = None,
) -> tuple[Summary, list[UnitResult]]:
    """Run ``scenario``'s units not yet checkpointed in ``run_dir`` (``None``: no folder) and
    return the summary and every unit. ``observer`` has the four methods of
    :class:`marketsim.report.progress.RunObserver` (start, refresh, unit_done, stop)."""
    started = time.perf_counter()
    done: list[UnitResult] = []
    earlier = 0.0  # the run time earlier invocations measured (resumed or re-run folder)
    if run_dir is not None:
        record = run_record(scenario)
        check_same_study(run_dir, record)
        done = load_units(run_dir, scenario, on_damaged)
        earlier = earlier_seconds(run_dir, done)
        start_run(run_dir, scenario, record)
    results: list[UnitResult] = list(done)
    total = scenario.replicates * len(scenario.arms)
    observer.start(scenario.outline, run_dir)
    for count, unit in enumerate(done, start=1):
        observer.unit_done(unit, count, total)

    def finished(unit: UnitResult, count: int, total: int) -> None:
        if run_dir is not None:
            save_unit(run_dir, scenario, unit)
        results.append(unit)
        observer.unit_done(unit, count, total)

    try:
        run_study(
            scenario,
            jobs=max(1, min(jobs, total - len(done))),
            backend=backend,
            scheduler=scheduler,
            allow_imports=allow_imports,
            done=done,
            on_unit=finished,
            on_refresh=observer.refresh,
            graph_dir=None if run_dir is None else str(run_dir),
        )
    except KeyboardInterrupt:
        observer.stop(interrupted=True)
        if run_dir is not None:
            write_run(run_dir, scenario, results, started, complete=False, earlier=earlier)
        raise
    except SimulationError:  # a policy failed: finished units stay checkpointed
        observer.stop(interrupted=False)
        raise
    observer.stop(interrupted=False)
    if run_dir is None:
        return build_summary(scenario, results, time.perf_counter() - started, True), results
    return write_run(run_dir, scenario, results, started, complete=True, earlier=earlier,
                     ran=len(results) > len(done)), results
