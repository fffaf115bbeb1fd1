"""``marketsim run SCENARIO.toml``: simulate every arm of a study and write its report folder."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from marketsim.errors import EXIT_INTERRUPTED, EXIT_OK, InputError
from marketsim.sim.runner import UnitResult, run_study
from marketsim.sim.scenario import load_scenario
from marketsim.sim.study import default_run_dir, write_run


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``run`` subcommand."""
    p = sub.add_parser(
        "run",
        help="simulate a scenario (the default when the first argument is a .toml file)",
        description="Simulate every arm of SCENARIO for its replicates and write "
        "curves.csv and summary.json into the run folder.",
        epilog="example: python -m marketsim run scenarios/30_workers.toml --replicates 4 --json",
    )
    p.add_argument("scenario", help="scenario TOML file")
    p.add_argument("--replicates", type=int, help="override scenario.replicates")
    p.add_argument("--seed", type=int, help="override scenario.seed")
    p.add_argument("--out", help="run folder (default reports/<scenario>/<timestamp>/)")
    p.add_argument("--jobs", type=int, default=1, help="parallel worker processes (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object with the result")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument(
        "--allow-imports",
        action="store_true",
        help="allow policies given as 'package.module:Class' (runs that code)",
    )


def execute(args: argparse.Namespace) -> int:
    """Run the study; on Ctrl-C keep and report the finished units."""
    if args.replicates is not None and args.replicates < 1:
        raise InputError(f"--replicates must be >= 1, got {args.replicates}")
    if args.seed is not None and args.seed < 0:
        raise InputError(f"--seed must be >= 0, got {args.seed}")
    if args.jobs < 1:
        raise InputError(f"--jobs must be >= 1, got {args.jobs}")
    scenario = load_scenario(args.scenario).with_overrides(
        replicates=args.replicates, seed=args.seed
    )
    from marketsim.policies.registry import policy_class

    for arm in scenario.arms:
        policy_class(arm.policy.name, allow_imports=args.allow_imports, source=scenario.source)
    run_dir = Path(args.out) if args.out else default_run_dir(scenario)
    started = time.perf_counter()
    results: list[UnitResult] = []

    def progress(unit: UnitResult, finished: int, total: int) -> None:
        if not args.quiet:
            arm = scenario.arms[unit.arm].name
            err = unit.rows[-1].error_rate if unit.rows else float("nan")
            print(
                f"[{finished}/{total}] replicate {unit.replicate} arm '{arm}': "
                f"final error {err:.4f} ({unit.seconds:.1f}s)",
                file=sys.stderr,
                flush=True,
            )

    if not args.quiet:
        print(
            f"marketsim: '{scenario.name}': {scenario.replicates} replicates x "
            f"{len(scenario.arms)} arms -> {run_dir}",
            file=sys.stderr,
            flush=True,
        )
    try:
        results = run_study(
            scenario, jobs=args.jobs, allow_imports=args.allow_imports,
            on_unit=lambda u, f, t: (results.append(u), progress(u, f, t)),
        )
    except KeyboardInterrupt:
        write_run(run_dir, scenario, results, started, complete=False)
        print(
            f"marketsim: interrupted; {len(results)} finished units kept in {run_dir}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    summary = write_run(run_dir, scenario, results, started, complete=True)
    if args.json:
        out = {
            "scenario": scenario.name,
            "seconds": summary["seconds"],
            "run_dir": str(run_dir),
            "arms": {
                name: {"edges": a["edges"], "error_rate": a["error_rate"]}
                for name, a in summary["arms"].items()
            },
        }
        print(json.dumps(out))
    elif not args.quiet:
        print(f"marketsim: done in {summary['seconds']:.1f}s; results in {run_dir}",
              file=sys.stderr)
    return EXIT_OK
