"""``marketsim run SCENARIO.toml``: simulate every arm of a study and write its run folder."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from marketsim.cli.interrupts import import_plotting
from marketsim.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SIMULATION_ERROR,
    ClusterError,
    InputError,
    SimulationError,
)
from marketsim.record.summary_model import Summary
from marketsim.report.sweep import SweepPoint, write_sweep_report
from marketsim.scenario.parser import load_scenario
from marketsim.scenario.specs import Scenario
from marketsim.scenario.sweep import expand, point_label
from marketsim.study.backends import BACKENDS, require_distributed
from marketsim.study.lock import folder_lock
from marketsim.study.resources import available_cpus, capped_jobs, check_memory, default_jobs
from marketsim.study.run_folder import (
    check_same_study,
    default_run_dir,
    resume_scenario,
    run_record,
    start_run,
)
from marketsim.study.session import run_observed

#: Bounds of the command-line overrides: those of ``scenario.replicates`` and ``scenario.seed``.
MAX_REPLICATES = 100_000
MAX_SEED = 2**63 - 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``run`` subcommand."""
    p = sub.add_parser(
        "run",
        help="simulate a scenario (the default when the first argument is a .toml file)",
        description="Simulate every arm of SCENARIO for its replicates and write "
        "curves.csv, summary.json and the report into the run folder. Every finished "
        "(replicate, arm) unit is checkpointed, so an interrupted run can be resumed.",
        epilog="examples:\n"
        "  python -m marketsim scenarios/30_workers.toml\n"
        "  python -m marketsim run scenarios/30_workers.toml --replicates 4 --jobs 2 --json\n"
        "  python -m marketsim run --resume reports/30-workers/20261122T050000Z\n"
        "  python -m marketsim run scenarios/replay_rte.toml --data-dir ../shared/data\n"
        "  python -m marketsim run scenarios/30_workers.toml --backend dask "
        "--scheduler tcp://10.0.0.5:8786",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("scenario", nargs="?", help="scenario TOML file")
    p.add_argument("--resume", metavar="RUN_DIR", help="finish an interrupted run in RUN_DIR")
    p.add_argument("--replicates", type=int, help="override scenario.replicates")
    p.add_argument("--seed", type=int, help="override scenario.seed")
    p.add_argument("--out", help="run folder (default reports/<scenario>/<timestamp>/)")
    p.add_argument("--jobs", type=int, default=None,
                   help="parallel worker processes (default: the CPUs this process may use, "
                   f"{available_cpus()} here, as far as the units to run and the memory allow; "
                   "a larger value is capped to the units and the CPUs; units run in this process "
                   "while the rest is too small for starting workers to pay). Results are the "
                   "same for any value")
    p.add_argument("--data-dir", metavar="DIR",
                   help="folder of the replayed reference data set (replaces replay.data_dir; "
                   "with --resume: where the data moved to)")
    p.add_argument("--backend", choices=BACKENDS, default="local",
                   help="local processes (joblib) or a Dask cluster (default local)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="Dask scheduler address; without it --backend dask starts a LocalCluster")
    p.add_argument("--json", action="store_true", help="print one JSON object with the result")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--no-figures", action="store_true",
                   help="write no figure (PNG/SVG): report.md then links none; most of a "
                   "small run's time is drawing them. `marketsim report RUN_DIR` draws them "
                   "later")
    p.add_argument(
        "--allow-imports",
        action="store_true",
        help="allow policies given as 'package.module:Class' (runs that code)",
    )


def _check_numbers(args: argparse.Namespace) -> None:
    """Refuse out-of-range overrides in one line (a huge --replicates would never finish)."""
    if args.replicates is not None and not 1 <= args.replicates <= MAX_REPLICATES:
        raise InputError(f"--replicates must be between 1 and {MAX_REPLICATES}, "
                         f"got {args.replicates}")
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        raise InputError(f"--seed must be between 0 and 2**63 - 1, got {args.seed}")
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs must be >= 1, got {args.jobs}")
    if args.scheduler and args.backend != "dask":
        raise InputError("--scheduler only applies with --backend dask")


def _resolve(args: argparse.Namespace) -> tuple[Scenario, Path]:
    """Scenario and run folder from the arguments (a fresh run or a resume)."""
    _check_numbers(args)
    if args.resume:
        if args.scenario or args.out or args.seed is not None or args.replicates is not None:
            raise InputError("--resume takes only the run folder (no scenario, --out, --seed "
                             "or --replicates: they come from the folder)")
        run_dir = Path(args.resume)
        scenario = resume_scenario(run_dir, args.data_dir, allow_imports=args.allow_imports)
    else:
        if not args.scenario:
            raise InputError("give a scenario file, or --resume RUN_DIR")
        scenario = load_scenario(args.scenario, data_dir=args.data_dir,
                                 allow_imports=args.allow_imports).with_overrides(
            replicates=args.replicates, seed=args.seed
        )
        run_dir = Path(args.out) if args.out else default_run_dir(scenario)
    if args.data_dir is not None and (scenario.replay is None or scenario.replay.dataset is None):
        raise InputError("--data-dir only applies to a replay of a reference data set "
                         "(replay.dataset)", source=scenario.source)
    return scenario, run_dir


def _observer(args: argparse.Namespace):  # noqa: ANN202 - duck-typed observer
    from marketsim.report.progress import make_observer

    return make_observer(quiet=args.quiet or args.json)


def execute(args: argparse.Namespace) -> int:
    """Run (or resume) the study or sweep; on Ctrl-C keep finished units and say where."""
    if args.backend == "dask":
        require_distributed()
    scenario, run_dir = _resolve(args)
    scenario = scenario.resolve_imports(args.allow_imports)
    points = expand(scenario)
    if args.jobs is None:  # the default: every CPU, as far as the units and memory go
        args.jobs = default_jobs([p.outline for p in points])
    elif not args.scheduler:  # a remote cluster's size is its own
        args.jobs, note = capped_jobs(args.jobs, max(p.replicates * len(p.arms) for p in points))
        if note and not args.quiet:
            print(f"marketsim: note: {note}", file=sys.stderr)
    if args.backend == "local":  # a Dask cluster's workers have their own memory
        check_memory([p.outline for p in points], args.jobs)
    with folder_lock(run_dir):
        return _execute_locked(args, scenario, points, run_dir)


def _execute_locked(
    args: argparse.Namespace, scenario: Scenario, points: list[Scenario], run_dir: Path
) -> int:
    """:func:`execute` once the run folder is locked."""
    total_units = sum(p.replicates * len(p.arms) for p in points)
    invoked = time.perf_counter()
    try:
        if not scenario.sweep:
            summary = _run_one(args, scenario, run_dir)
            seconds, arms = summary.seconds, summary.arms  # over every invocation
        else:
            record = run_record(scenario)
            check_same_study(run_dir, record)
            start_run(run_dir, scenario, record)
            started = time.perf_counter()
            done_points: list[SweepPoint] = []
            for idx, point in enumerate(points):
                folder = f"points/p{idx:03d}"
                if not args.quiet:
                    print(f"marketsim: sweep point {idx + 1}/{len(points)}: "
                          f"{point_label(point.sweep_point)}", file=sys.stderr, flush=True)
                summary = _run_one(args, point, run_dir / folder)
                done_points.append(SweepPoint(folder, point.sweep_point, summary))
            write_sweep_report(run_dir, [k for k, _ in scenario.sweep], done_points,
                               figures=not args.no_figures)
            seconds = round(time.perf_counter() - started, 3)
            arms = {
                f"{name} [{point_label(p.values)}]": a
                for p in done_points for name, a in p.summary.arms.items()
            }
    except KeyboardInterrupt:
        kept = sum(1 for _ in run_dir.rglob("units/*.json"))
        print(
            f"marketsim: interrupted; {kept} of {total_units} units kept in {run_dir} "
            f"(finish with: python -m marketsim run --resume {run_dir})",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    except ClusterError as exc:  # the cluster went away: the finished units are kept
        kept = sum(1 for _ in run_dir.rglob("units/*.json"))
        print(f"marketsim: error: {' '.join(exc.message.split())}; {kept} of {total_units} "
              f"units kept in {run_dir} (finish with: python -m marketsim run --resume "
              f"{run_dir})", file=sys.stderr)
        return EXIT_SIMULATION_ERROR
    except SimulationError as exc:
        # One line naming the arm, replicate and policy; a policy's own traceback below it.
        print(f"marketsim: error: {' '.join(exc.message.split())}", file=sys.stderr)
        if exc.details:
            print(exc.details, file=sys.stderr)
        return EXIT_SIMULATION_ERROR
    if args.json:
        out = {
            "scenario": scenario.name,
            # error below is the headline error named by metric (error_rate or rmse)
            "metric": scenario.worker_model.metric,
            "seconds": seconds,
            "run_dir": str(run_dir),
            "arms": {
                name: {"edges": a.edges, "error": a.error}
                for name, a in arms.items()
            },
        }
        print(json.dumps(out))
    elif not args.quiet:
        this = time.perf_counter() - invoked
        total = (f" (run time over all invocations: {seconds:.1f}s)"
                 if seconds is not None and seconds > this + 0.05 else "")
        print(f"marketsim: done in {this:.1f}s{total}; results in {run_dir}", file=sys.stderr)
    return EXIT_OK


def _run_one(args: argparse.Namespace, scenario: Scenario, run_dir: Path) -> Summary:
    """One study into ``run_dir``, resuming from its checkpoints; write the folder on Ctrl-C
    (then re-raise) and at the end; return the summary."""
    try:
        summary, _ = run_observed(
            scenario, run_dir, _observer(args), jobs=args.jobs, backend=args.backend,
            scheduler=args.scheduler, allow_imports=args.allow_imports,
            on_damaged=_warn_damaged,
        )
    except KeyboardInterrupt:
        if (run_dir / "curves.csv").is_file():  # before the first results there is no report
            _render(run_dir, figures=not args.no_figures)
        raise
    _render(run_dir, figures=not args.no_figures)
    return summary


def _warn_damaged(path: Path, reason: str) -> None:
    """One line on stderr for a checkpoint that is not used."""
    print(f"marketsim: warning: {path}: damaged checkpoint ({reason}); the unit is simulated "
          "again", file=sys.stderr)


def _render(run_dir: Path, *, figures: bool) -> None:
    """Plots (unless not ``figures``) and report.md (skipped with a note if the report
    module is unavailable)."""
    try:
        from marketsim.report.render import render_report
    except ImportError as exc:  # matplotlib missing
        print(f"marketsim: report not rendered ({exc})", file=sys.stderr)
        return
    if figures:
        import_plotting()
    render_report(run_dir, figures=figures)
