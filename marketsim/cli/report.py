"""``marketsim report RUN_DIR``: re-render summary.json, the plots and report.md of a run."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from marketsim.errors import EXIT_OK, InputError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``report`` subcommand."""
    p = sub.add_parser(
        "report",
        help="re-render summary.json, plots and report.md from a run folder's curves.csv",
        description="Rebuild summary.json and write error_vs_budget.png/.svg and report.md "
        "from the curves.csv of a finished or interrupted (partial) run (rebuilt first from the "
        "unit checkpoints of a run that was killed). For a sweep folder "
        "every point under points/ is rendered.",
        epilog="examples:\n"
        "  python -m marketsim report reports/30-workers/20261122T050000Z\n"
        "  python -m marketsim report /tmp/run --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="run folder (holds curves.csv)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object listing the folders rendered")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")


def _folders(run_dir: Path) -> list[Path]:
    """The run folder itself, or the points of a sweep folder."""
    if not run_dir.is_dir():
        raise InputError("run folder not found", source=str(run_dir))
    if (run_dir / "curves.csv").is_file() or any((run_dir / "units").glob("r*_a*.json")):
        return [run_dir]
    points = sorted(p.parent for p in run_dir.glob("points/p*/curves.csv"))
    if points:
        return points
    raise InputError("no curves.csv here: not a marketsim run folder, or no results written "
                     "yet", source=str(run_dir))


def execute(args: argparse.Namespace) -> int:
    """Render every folder; a bad folder or malformed curves.csv raises InputError."""
    from marketsim.report.render import render_report
    from marketsim.study.run_folder import scenario_setup, sync_curves

    done = []
    for folder in _folders(Path(args.run_dir)):
        sync_curves(folder)  # a killed run: curves.csv from its unit checkpoints
        summary = render_report(folder, fallback=scenario_setup)
        done.append({"run_dir": str(folder), "complete": summary["complete"],
                     "report": str(folder / "report.md")})
    if args.json:
        print(json.dumps({"rendered": done}))
    elif not args.quiet:
        for d in done:
            note = "" if d["complete"] else " (partial run)"
            print(f"marketsim: report written to {d['report']}{note}", file=sys.stderr)
    return EXIT_OK
