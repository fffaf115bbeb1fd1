"""``marketsim report RUN_DIR``: re-render summary.json, the plots and report.md of a run."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marketsim.cli.interrupts import import_plotting
from marketsim.errors import EXIT_OK, InputError
from marketsim.scenario.run_migration import read_run
from marketsim.scenario.run_record import recorded_scenario
from marketsim.scenario.sweep import point_label


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``report`` subcommand."""
    p = sub.add_parser(
        "report",
        help="re-render summary.json, plots and report.md from a run folder's curves.csv",
        description="Rebuild summary.json and write error_vs_budget.png/.svg and report.md "
        "from the curves.csv of a finished or interrupted (partial) run (rebuilt first from the "
        "unit checkpoints of a run that was killed). For a sweep folder "
        "every point under points/ is rendered, and the points not finished are named with "
        "the command that finishes them.",
        epilog="examples:\n"
        "  python -m marketsim report reports/30-workers/20261122T050000Z\n"
        "  python -m marketsim report /tmp/run --json\n"
        "  python -m marketsim report /tmp/run --html --slides",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="run folder (holds curves.csv)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object listing the folders rendered")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    p.add_argument("--html", action="store_true",
                   help="also write report.html: one self-contained page (interactive chart, "
                   "the tables, the glossary; opens without network); needs plotly and Jinja2: "
                   'pip install "marketsim[html]"')
    p.add_argument("--allow-imports", action="store_true",
                   help="import the run's `package.module:Class` components again (a worker "
                   "model from outside marketsim: the report reads its facts and words); only "
                   "for a run folder you trust")
    p.add_argument("--no-figures", action="store_true",
                   help="write no figure (PNG/SVG) and remove those an earlier render wrote: "
                   "report.md then links none (the figures are most of a small run's "
                   "rendering time)")
    p.add_argument("--slides", action="store_true",
                   help="also write the figures slide-sized (16:9, 1920x1080, larger type) "
                   "into plots/slides/")


def _sweep_points(run_dir: Path) -> dict[str, str]:
    """Folder name -> label of every grid point a sweep run folder's ``run.json`` lists
    (empty for a single study)."""
    try:
        grid = recorded_scenario(read_run(run_dir / "run.json")).sweep
    except (OSError, InputError):
        return {}
    keys = [key for key, _ in grid]
    return {
        f"p{idx:03d}": point_label(tuple(zip(keys, values, strict=True)))
        for idx, values in enumerate(itertools.product(*(v for _, v in grid)))
    }


def _import_components(folder: Path) -> None:
    """Import the import-path components the folder's run recorded (``--allow-imports``), so
    that reading its scenario finds them imported; a folder whose record does not read is
    left to the report's own errors."""
    from marketsim.scenario.parser import parse_scenario

    try:
        record = read_run(folder / "run.json")
        parse_scenario(dict(record.resolved_scenario), str(folder / "run.json"),
                       allow_imports=True)
    except (OSError, InputError):
        return


def _has_results(folder: Path) -> bool:
    return (folder / "curves.csv").is_file() or any((folder / "units").glob("r*_a*.json"))


def _folders(run_dir: Path) -> tuple[list[Path], dict[str, str]]:
    """The run folder itself, or the points of a sweep folder that have results and the
    points (folder name -> label) that have none."""
    if not run_dir.is_dir():
        raise InputError("run folder not found", source=str(run_dir))
    if _has_results(run_dir):
        return [run_dir], {}
    expected = _sweep_points(run_dir)
    points = sorted({p for p in run_dir.glob("points/p*") if _has_results(p)} |
                    {run_dir / "points" / name for name in expected
                     if _has_results(run_dir / "points" / name)})
    missing = {k: v for k, v in expected.items() if run_dir / "points" / k not in points}
    if points:
        return points, missing
    if missing:
        raise InputError(f"no sweep point has finished yet ({len(missing)} to run); finish "
                         f"them with: python -m marketsim run --resume {run_dir}",
                         source=str(run_dir))
    raise InputError("no curves.csv here: not a marketsim run folder, or no results written "
                     "yet", source=str(run_dir))


@dataclass(frozen=True)
class Rendered:
    """One folder ``report`` rendered: whether its run is complete, and the page and slide
    figures written when asked for (None when not)."""

    folder: Path
    complete: bool
    html: Path | None
    slides: list[Path] | None

    def json_object(self) -> dict[str, Any]:
        """The folder's entry of ``report --json``'s ``rendered`` list."""
        out: dict[str, Any] = {"run_dir": str(self.folder), "complete": self.complete,
                               "report": str(self.folder / "report.md")}
        if self.html is not None:
            out.update(html=str(self.html))
        if self.slides is not None:
            out.update(slides=[str(p) for p in self.slides])
        return out


def _warn_damaged(path: Path, reason: str) -> None:
    """One line on stderr for a checkpoint the report leaves out."""
    print(f"marketsim: warning: {path}: damaged checkpoint ({reason}); left out of the "
          "report ('run --resume' simulates the unit again)", file=sys.stderr)


def execute(args: argparse.Namespace) -> int:
    """Render every folder; a bad folder or malformed curves.csv raises InputError."""
    from marketsim.report.html import require_html_extra, write_html_report
    from marketsim.report.render import render_report
    from marketsim.report.slides import write_slides, write_sweep_slides
    from marketsim.study.run_folder import check_curves, scenario_setup, sync_curves

    run_dir = Path(args.run_dir)
    if args.slides and args.no_figures:
        raise InputError("--slides writes figures: give --slides or --no-figures, not both")
    if args.html:
        require_html_extra()  # no plotly or Jinja2: one line saying what to install, first
    folders, missing = _folders(run_dir)
    if not args.no_figures or args.slides:
        import_plotting()
    done: list[Rendered] = []
    for folder in folders:
        if args.allow_imports:
            _import_components(folder)
        sync_curves(folder, _warn_damaged)  # a killed run: curves.csv from its unit checkpoints
        check_curves(folder)  # a report of what the run saved, never of a truncated file
        summary = render_report(folder, fallback=scenario_setup, figures=not args.no_figures)
        done.append(Rendered(
            folder, summary.complete,
            write_html_report(folder, fallback=scenario_setup) if args.html else None,
            write_slides(folder, fallback=scenario_setup) if args.slides else None))
    sweep_slides = ([str(p) for p in write_sweep_slides(run_dir)]
                    if args.slides and folders != [run_dir] else [])
    unfinished = dict(missing)
    labels = _sweep_points(run_dir) if missing or folders != [run_dir] else {}
    for d in done:
        if not d.complete and folders != [run_dir]:
            unfinished[d.folder.name] = labels.get(d.folder.name, d.folder.name)
    if args.json:
        extra = {"sweep_slides": sweep_slides} if sweep_slides else {}
        print(json.dumps({"rendered": [d.json_object() for d in done],
                          "unfinished_points": sorted(unfinished), **extra}))
    elif not args.quiet:
        for d in done:
            note = "" if d.complete else " (partial run)"
            print(f"marketsim: report written to {d.folder / 'report.md'}{note}",
                  file=sys.stderr)
            if d.html is not None:
                print(f"marketsim: page written to {d.html}", file=sys.stderr)
            if d.slides:
                print(f"marketsim: slide figures written to {d.slides[0].parent}",
                      file=sys.stderr)
        if sweep_slides:
            print(f"marketsim: sweep slide figure written to {sweep_slides[0]}",
                  file=sys.stderr)
        if args.html and folders != [run_dir]:
            print("marketsim: note: a sweep folder gets one report.html per grid point (no "
                  "page for the sweep as a whole: see sweep.md)", file=sys.stderr)
    if unfinished and not args.quiet:
        names = ", ".join(f"{k} ({v})" for k, v in sorted(unfinished.items()))
        print(f"marketsim: note: sweep points not finished: {names}; finish them with: "
              f"python -m marketsim run --resume {run_dir}", file=sys.stderr)
    return EXIT_OK
