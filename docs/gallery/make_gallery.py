"""The gallery's figures (``docs/gallery/``): run the shipped scenarios its pages show, with a
small replicate count, and copy the figures of their run folders into ``docs/gallery/images/``.

    python docs/gallery/make_gallery.py                 # every figure, about 2 CPU minutes
    python docs/gallery/make_gallery.py --only sweep --out /tmp/gallery --runs /tmp/runs
    python docs/gallery/make_gallery.py --list          # the images it writes, one a line

A build of the site never runs a study: the PNGs are committed, and this script writes them
again after a change to what a figure shows (a policy, a plot, a scenario); commit them then.
Each study runs ``python -m marketsim run SCENARIO --replicates N`` on the source tree this
script sits in, exactly the command its page shows. The calibration fit and the presets
frontier are not made here: their pages show the figures their own full-scale commands wrote
(``scenarios/calibrated_rte.fit.png``, ``docs/images/platform_presets_frontier.png``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
IMAGES = HERE / "images"


@dataclass(frozen=True)
class Study:
    """One shipped scenario run for the gallery and the figures taken from its run folder."""

    name: str  #: what ``--only`` selects
    page: str  #: the gallery page that shows its figures (``docs/gallery/<page>.md``)
    scenario: str  #: the shipped scenario, relative to the project root
    replicates: int  #: fewer than the scenario's own: enough for the figure's shape
    figures: tuple[tuple[str, str], ...]  #: (file in the run folder, image name under images/)

    def command(self, out: Path | str, jobs: int = 1) -> list[str]:
        """The command that runs the study into ``out`` (the one its page shows)."""
        return ["python", "-m", "marketsim", "run", self.scenario, "--replicates",
                str(self.replicates), "--jobs", str(jobs), "--quiet", "--out", str(out)]


STUDIES = (
    Study("prices", "error-labels-money-time", "scenarios/prices.toml", 3,
          (("error_vs_budget.png", "prices_error_vs_labels.png"),
           ("error_vs_money.png", "prices_error_vs_money.png"),
           ("error_vs_time.png", "prices_error_vs_time.png"))),
    Study("sweep", "sweep", "scenarios/sweep_workers.toml", 2,
          (("labels_needed_vs_sweep.png", "sweep_workers_labels_needed.png"),)),
)


def images() -> list[str]:
    """Every image name the script writes, in the order of ``STUDIES``."""
    return [image for study in STUDIES for _, image in study.figures]


def make(study: Study, out: Path, jobs: int, runs: Path | None = None) -> list[Path]:
    """Run ``study`` from the project root and copy its figures into ``out``; return the images
    written. Its run folder is ``runs/<name>`` when ``runs`` is given (kept), else temporary."""
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    with tempfile.TemporaryDirectory(prefix=f"gallery-{study.name}-") as tmp:
        run = (runs if runs is not None else Path(tmp)) / study.name
        command = [sys.executable, *study.command(run, jobs)[1:]]
        subprocess.run(command, cwd=ROOT, env=env, check=True)
        written = []
        for produced, image in study.figures:
            shutil.copyfile(run / produced, out / image)
            written.append(out / image)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=[s.name for s in STUDIES], action="append",
                        help="make only this study's figures (repeatable)")
    parser.add_argument("--out", type=Path, default=IMAGES,
                        help="folder for the images (default: docs/gallery/images)")
    parser.add_argument("--jobs", type=int, default=1, help="processes per study run")
    parser.add_argument("--runs", type=Path,
                        help="keep each study's run folder here, as runs/<name> (default: "
                             "temporary folders, removed)")
    parser.add_argument("--list", action="store_true", help="print the image names and stop")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(images()))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for study in STUDIES:
        if args.only is None or study.name in args.only:
            for path in make(study, args.out, args.jobs, args.runs):
                print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
