"""Issue #28's check on data the project does not ship: does a calibrated twin's "as collected"
arm give the real labels' Dawid–Skene error within ±2 points on binary data sets?

For each data set the script reads the labels and the truth with marketsim's own loaders
(:func:`marketsim.data.load.load_labels`; ``--columns`` and ``--delimiter`` as for ``infer``),
computes Dawid–Skene's error on the real labels (tasks with a known truth), runs ``marketsim
calibrate`` (with ``--truth`` and, with ``--modes truth,posterior``, also without it: the
workers' matrices then come from the Dawid–Skene posterior) and the written scenario's "as
collected" arm for ``--replicates`` replicates (its own seed and streams, as ``marketsim run``
draws them: :func:`marketsim.study.twin.simulated_labels`), and prints a markdown table: set,
tasks, workers, labels, real D&S error, the twin's mean error [95 % t-interval], the
difference, the world chosen (its number of task types by the errors each one's twin
reproduces on replicates 10-14, or by held-out likelihood without a truth; then the lowest
BIC) and pass/fail at ``--tolerance`` points.

A data set is given as

- a folder holding ``answer.csv`` and ``truth.csv`` (the layout of Zheng et al.'s benchmark,
  github.com/zhydhkcws/crowd_truth_infer ``datasets/``, and of the active-crowd-toolkit
  conversions), named after the folder;
- a folder of ``NAME_crowd.txt`` / ``NAME_truth.txt`` pairs (Zhang et al.'s layout, such as
  ``../shared/data/zhang2014``): one data set per pair;
- ``LABELS[:TRUTH]``, two files.

Sets with more than two classes are listed as skipped (the acceptance is for binary sets;
``--all-classes`` runs them too). The data are not part of the project; see
docs/explanation/models/calibration/other-data-sets.md ("Calibration on data sets not in
../shared") for where each set comes from. Run, e.g.::

    python benchmarks/calibrate_twins.py /work/twin-data/sets/* --replicates 10 --jobs 2

(``--duplicates first`` reads files that repeat a (task, worker) pair, such as ZenCrowd's,
keeping each pair's first answer, in the real D&S error and in ``calibrate`` alike.)

Every scenario and its ``.fit.json`` are kept under ``--work DIR`` (default: a temporary
folder). Slow: each calibration fits eight worlds, six task-type mixtures and the 5-fold
cross-validation of 1 to 4 types (minutes on a set of 10,000 labels), each replicate runs the
market once.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from marketsim.aggregation.registry import make_estimator
from marketsim.cli import main as marketsim_main
from marketsim.data.columns import delimiter_name, parse_columns
from marketsim.data.load import load_labels
from marketsim.errors import InputError
from marketsim.scenario.parser import load_scenario
from marketsim.study.twin import simulated_labels


@dataclass(frozen=True)
class DataSet:
    """One labels file with its (optional) truth file."""

    name: str
    labels: Path
    truth: Path | None


def data_sets(items: list[str]) -> Iterator[DataSet]:
    """The data sets the command line names (folders or ``LABELS[:TRUTH]``)."""
    for item in items:
        path = Path(item)
        if path.is_dir():
            if (path / "answer.csv").is_file():
                truth = path / "truth.csv"
                yield DataSet(path.name, path / "answer.csv", truth if truth.is_file() else None)
                continue
            pairs = sorted(path.glob("*_crowd.txt"))
            if not pairs:
                sys.exit(f"calibrate_twins: {item}: no answer.csv nor *_crowd.txt files")
            for crowd in pairs:
                stem = crowd.name.removesuffix("_crowd.txt")
                truth = crowd.with_name(f"{stem}_truth.txt")
                yield DataSet(stem, crowd, truth if truth.is_file() else None)
        else:
            labels, _, truth_text = item.partition(":")
            yield DataSet(Path(labels).stem, Path(labels), Path(truth_text) if truth_text
                          else None)


def _replicate_error(args: tuple[str, int]) -> float:
    scenario = load_scenario(args[0])
    return simulated_labels(scenario, replicate=args[1], arm=0)[2]


def interval(errors: list[float]) -> tuple[float, float, float]:
    """Mean and 95 % t-interval of the replicates' errors."""
    arr = np.asarray(errors, dtype=np.float64)
    mean = float(arr.mean())
    if arr.size < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.975, arr.size - 1) * arr.std(ddof=1) / math.sqrt(arr.size))
    return mean, mean - half, mean + half


def calibrate(ds: DataSet, out: Path, with_truth: bool, options: list[str]) -> str:
    """Run ``marketsim calibrate`` quietly; the world it chose (from its ``.fit.json``)."""
    argv = ["calibrate", str(ds.labels), "--out", str(out), *options]
    if with_truth and ds.truth is not None:
        argv += ["--truth", str(ds.truth)]
    log = io.StringIO()
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        code = marketsim_main(argv)
    if code != 0:
        raise RuntimeError(f"calibrate {ds.name} exited {code}: {log.getvalue().strip()}")
    fit = json.loads(out.with_suffix(".fit.json").read_text())
    world = str(fit["world"])
    return world if fit.get("difficulty_sigma", 0) == 0 else \
        f"{world} (sigma {fit['difficulty_sigma']:.2f})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sets", nargs="+", help="folders or LABELS[:TRUTH] pairs")
    p.add_argument("--replicates", type=int, default=10)
    p.add_argument("--tolerance", type=float, default=2.0, help="points (default 2)")
    p.add_argument("--modes", default="truth", help="truth, posterior or truth,posterior")
    p.add_argument("--columns", help="--columns of calibrate (e.g. task=id)")
    p.add_argument("--delimiter", help="--delimiter of calibrate")
    p.add_argument("--duplicates", default="error",
                   help="--duplicates of calibrate: error (default), first or last (a worker "
                   "who answered a task twice, as in ZenCrowd's files)")
    p.add_argument("--task-types", default="auto",
                   help="--task-types of calibrate (default auto: by the twins' errors with a "
                   "truth, else by held-out likelihood); a number forces it (a diagnosis, not "
                   "the acceptance check)")
    p.add_argument("--jobs", type=int, default=1, help="processes for the replicates")
    p.add_argument("--work", help="folder to keep the scenarios in (default: temporary)")
    p.add_argument("--all-classes", action="store_true", help="also run non-binary sets")
    args = p.parse_args()
    modes = args.modes.split(",")
    if not set(modes) <= {"truth", "posterior"}:
        p.error(f"--modes: truth and/or posterior, got {args.modes!r}")
    options: list[str] = []
    columns = parse_columns(args.columns) if args.columns else None
    delimiter = delimiter_name(args.delimiter) if args.delimiter else None
    if args.columns:
        options += ["--columns", args.columns]
    if args.delimiter:
        options += ["--delimiter", args.delimiter]
    if args.duplicates != "error":
        options += ["--duplicates", args.duplicates]
    if args.task_types != "auto":
        options += ["--task-types", args.task_types]
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="twins-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"| set | classes from | tasks | workers | labels | real D&S error | twin mean "
          f"[95 % CI], {args.replicates} replicates | difference | world chosen | "
          f"±{args.tolerance:g} pt |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|")
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for ds in data_sets(args.sets):
            try:
                data, truth = load_labels(ds.labels, ds.truth, delimiter=delimiter,
                                          columns=columns, duplicates=args.duplicates)
            except InputError as exc:  # e.g. a worker who labelled a task twice
                print(f"| {ds.name} | | | | | | | | refused: {exc} | |", flush=True)
                continue
            if data.n_classes > 2 and not args.all_classes:
                print(f"| {ds.name} | | {data.n_tasks} | {data.n_workers} | {data.n_labels} "
                      f"| | | | skipped: {data.n_classes} classes | |")
                continue
            known = np.zeros(data.n_tasks, bool) if truth is None else truth >= 0
            predicted = np.asarray(make_estimator("ds").fit(data).labels_)
            real = 100 * float(np.mean(predicted[known] != truth[known])) \
                if truth is not None and known.any() else math.nan
            for mode in modes:
                if mode == "truth" and ds.truth is None:
                    continue
                out = work / f"{ds.name}.{mode}.toml"
                world = calibrate(ds, out, mode == "truth", options)
                errors = list(pool.map(_replicate_error, [(str(out), r) for r in
                                                          range(args.replicates)]))
                mean, low, high = (100 * v for v in interval(errors))
                diff = mean - real
                ok = "pass" if abs(diff) <= args.tolerance else "**fail**"
                source = "truth" if mode == "truth" else "D&S posterior"
                print(f"| {ds.name} | {source} | {data.n_tasks:,} | {data.n_workers} | "
                      f"{data.n_labels:,} | {real:.2f} % | {mean:.2f} % [{low:.2f}, "
                      f"{high:.2f}] | {diff:+.2f} | {world} | {ok} |", flush=True)
    print(f"scenarios in {work}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
