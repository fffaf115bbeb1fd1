"""``marketsim calibrate``: fit a world to a label file and write a scenario that runs as it is.

The world (:mod:`marketsim.aggregation.confusion_fit`): the class prior; each worker's matrix
(or one ability) and labels in the file (an arrival deck); look-alike tasks and task difficulty
(also on the design curve: :mod:`marketsim.aggregation.curve_difficulty`); or task types, one
matrix per worker and type (:mod:`marketsim.aggregation.task_types`), their number chosen
(:mod:`marketsim.aggregation.type_selection`) by the errors each one's twin reproduces where
the file has a truth, else by held-out likelihood; each task's class from ``--truth``, else the
Dawid–Skene posterior; the one nearest the design curve is written
(:mod:`marketsim.scenario.calibration`; its first arm, "as collected", gives the tasks the
file's labels per task). It runs that arm once and prints the goodness of fit (per-worker
accuracy, labels per task and per worker, agreement, Dawid–Skene error), saved as ``.fit.json``
with one plot, ``<out>.fit.png``. A CSV file's time column (:mod:`marketsim.data.timestamps`)
adds the arrival process: the labels' Poisson rate (:mod:`marketsim.aggregation.arrival_fit`)
and real against simulated gaps between labels (the rows: :mod:`marketsim.cli.twin_fit`).

Options and output files are checked before anything is read (a bad ``--name``, ``--seed`` or
``--out`` would otherwise fail after the fit); the twin's classes are those workers gave
(:func:`~marketsim.data.calibration_input.worker_classes_only`); warnings show as ``infer``'s."""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.aggregation.arrival_fit import ArrivalFit, fit_arrivals
from marketsim.aggregation.confusion_fit import candidate_worlds
from marketsim.aggregation.crowd_stats import crowd_stats
from marketsim.aggregation.curve_choice import curve_draws, curve_lines, off_warnings
from marketsim.aggregation.design_curve import real_curve
from marketsim.aggregation.fit_reference import reference
from marketsim.aggregation.task_types import MAX_TYPES, TypesFit, type_candidates
from marketsim.aggregation.type_selection import (
    FOLDS,
    MOMENT_REPLICATES,
    select_types,
)
from marketsim.cli.calibrate_models import fit_models, model_rows, split_models
from marketsim.cli.duplicates import add_duplicates_option, check_duplicates_option, warn
from marketsim.cli.interrupts import import_plotting
from marketsim.cli.notes import warnings_as_notes
from marketsim.cli.twin_fit import FitRow, fit_rows, poor_fit_warning, spread_record, time_rows
from marketsim.data.calibration_input import (
    calibration_warnings,
    check_calibratable,
    labelled_only,
    worker_classes_only,
)
from marketsim.data.columns import delimiter_name, parse_columns
from marketsim.data.csv_labels import ScoreFileError
from marketsim.data.datasets import DATA_ENV, DATASETS, dataset_paths
from marketsim.data.labels import LabelSet
from marketsim.data.load import FORMATS, load_labels_timed
from marketsim.data.timestamps import TIME_ALIASES, Timestamps
from marketsim.data.truth import check_truth_coverage
from marketsim.errors import EXIT_OK, InputError
from marketsim.record.files import write_json_atomic, write_text_atomic
from marketsim.record.predictions import check_output_files
from marketsim.report.calibration_plot import plot_fit
from marketsim.report.step_progress import Steps, make_steps
from marketsim.scenario.calibration import (
    Calibration,
    check_header,
    check_text,
    fit_record,
    labels_per_task,
)
from marketsim.scenario.calibration_text import calibrated_text, types_summary
from marketsim.scenario.crowd_specs import MAX_RATE, MIN_RATE
from marketsim.study.backends import process_map
from marketsim.study.curve_sized_worlds import crowd_shrunk, shared_errors
from marketsim.study.resources import MAX_FIT_JOBS, fit_jobs
from marketsim.study.twin import final_error, moment_choice, simulated_labels, type_counts
from marketsim.study.twin_curve import WRITTEN_CHUNKS, choose_twin, curve_units, written_twin

#: Tasks with a truth a file needs for the number of task types to be chosen by the errors
#: each one's twin reproduces (fewer: by held-out likelihood; the errors would be noise).
MIN_KNOWN_FOR_MOMENTS = 50

EPILOG = """examples:
  python -m marketsim calibrate labels.csv --truth truth.csv --out twin.toml
  python -m marketsim calibrate --dataset rte --out scenarios/calibrated_rte.toml
  python -m marketsim calibrate labels.csv --columns time=submitted --out twin.toml

a time column (header """ + "/".join(TIME_ALIASES) + """,
or --columns time=COL) fits the arrival rate: numbers are read in their own unit (which becomes
the unit of simulated time), ISO-8601 date-times in hours.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``calibrate`` subcommand."""
    p = sub.add_parser(
        "calibrate", help="fit a simulated twin of a crowd to its labels; write a scenario",
        description="Fit a world (class prior, each worker's ability and labels, "
        "task difficulty) to crowd labels and write a scenario whose first arm reproduces how "
        "they were collected; print and save the goodness of fit.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("labels", nargs="?", help="labels file (.csv: headed CSV; else zhang format)")
    p.add_argument("--dataset", metavar="NAME",
                   help=f"reference dataset instead of LABELS: {', '.join(DATASETS)}")
    p.add_argument("--data-dir", metavar="DIR",
                   help=f"folder of the reference datasets (default: ${DATA_ENV})")
    p.add_argument("--truth", metavar="FILE", help="ground-truth file (same format as LABELS)")
    p.add_argument("--out", metavar="SCENARIO.toml", required=True,
                   help="the scenario to write (with <out>.fit.json and <out>.fit.png)")
    p.add_argument("--name", metavar="TEXT", help="the scenario's name (default: from LABELS)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="the scenario's seed (default 0)")
    p.add_argument("--format", metavar="FMT",
                   help="file format: zhang or csv (default: csv for .csv and .tsv files, "
                   "else zhang)")
    p.add_argument("--delimiter", metavar="SEP",
                   help="field separator of the CSV inputs: comma, tab, semicolon or pipe")
    p.add_argument("--columns", metavar="MAP",
                   help="LABELS' column names by role, e.g. task=item,time=submitted (roles: "
                   "task, worker, label, time, source, confidence)")
    add_duplicates_option(p)
    p.add_argument("--quiet", action="store_true",
                   help="no progress display (a bar per long step on a terminal's stderr, "
                   "else one line per step)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help=f"worker processes for the independent fits and twins (default: the "
                   f"CPUs available, at most {MAX_FIT_JOBS}; the results do not depend on it)")
    p.add_argument("--task-types", metavar="K", default="auto",
                   help=f"task types of the world: auto (default: 1 to {MAX_TYPES}, by the "
                        "errors each one's twin reproduces where the truth is known, else by "
                        "held-out likelihood) or "
                   f"a number 1-{MAX_TYPES} (e.g. the number of sources the tasks came from)")


def check_options(args: argparse.Namespace) -> None:
    """Raise InputError for any bad option value (before any file is read)."""
    if (args.labels is None) == (args.dataset is None):
        raise InputError("give either a LABELS file or --dataset NAME")
    if args.dataset is not None:
        if args.dataset not in DATASETS:
            raise InputError(f"unknown dataset {args.dataset!r}; choose one of: "
                             f"{', '.join(DATASETS)}")
        for opt in ("truth", "format", "delimiter", "columns"):
            if getattr(args, opt) is not None:
                raise InputError(f"--{opt} cannot be combined with --dataset")
    elif args.data_dir is not None:
        raise InputError("--data-dir only applies with --dataset")
    if args.format is not None and args.format not in FORMATS:
        raise InputError(f"unknown --format {args.format!r}; choose one of: {', '.join(FORMATS)}")
    if args.seed < 0:
        raise InputError(f"--seed must be >= 0, got {args.seed}")
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs must be >= 1, got {args.jobs}")
    check_duplicates_option(args)
    if args.task_types != "auto" and args.task_types not in [str(k) for k in
                                                              range(1, MAX_TYPES + 1)]:
        raise InputError(f"--task-types must be auto or a number from 1 to {MAX_TYPES}, got "
                         f"{args.task_types!r}")
    if args.delimiter is not None:
        args.delimiter = delimiter_name(args.delimiter)
    if args.columns is not None:
        args.columns = parse_columns(args.columns)
    if args.name is not None and not args.name.strip():
        raise InputError(f"--name {args.name!r} is blank; give the scenario a name (or leave "
                         "--name out for one from LABELS)")
    name = scenario_name(args)
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in name):
        raise InputError(f"--name {name!r} is not UTF-8 text (undecodable bytes)")
    for opt, table in (("--name", {"name": name}), ("--seed", {"seed": args.seed})):
        try:  # what the written scenario's parser would refuse after the fit
            check_header(table)
        except InputError as exc:
            raise InputError(f"{opt}: {exc.detail}") from None
    if not args.out or Path(args.out).is_dir():
        raise InputError(f"--out {args.out!r} is a folder; give a file name")


def scenario_name(args: argparse.Namespace) -> str:
    """``--name``, else ``calibrated <dataset or labels file's stem>``."""
    return args.name or f"calibrated {args.dataset or Path(args.labels).stem}"


def output_files(out: Path) -> tuple[Path, Path]:
    """``<out>.fit.json`` and ``<out>.fit.png``: the goodness of fit beside the scenario."""
    return out.with_suffix(".fit.json"), out.with_suffix(".fit.png")


def command_line(args: argparse.Namespace, labels: str, truth: str | None) -> str:
    """The command as written in the scenario's header."""
    parts = ["python", "-m", "marketsim", "calibrate"]
    parts += ["--dataset", args.dataset] if args.dataset else [labels]
    parts += ["--truth", truth] if truth and not args.dataset else []
    for opt in ("format", "delimiter", "name"):
        if getattr(args, opt) is not None:
            parts += [f"--{opt}", str(getattr(args, opt))]
    if args.columns is not None:
        parts += ["--columns", ",".join(f"{k}={v}" for k, v in args.columns.items())]
    if args.seed:
        parts += ["--seed", str(args.seed)]
    if args.duplicates != "error":
        parts += ["--duplicates", args.duplicates]
    if args.task_types != "auto":
        parts += ["--task-types", args.task_types]
    return shlex.join([*parts, "--out", args.out])


def arrivals_fit(times: Timestamps, source: str) -> ArrivalFit:
    """The arrival process of the file's times; InputError when its rate is outside what a
    scenario accepts (numbers in too small or too large a unit)."""
    fit = fit_arrivals(times, source)
    if not MIN_RATE <= fit.rate <= MAX_RATE:
        raise InputError(
            f"column {times.column!r}: {fit.rate:.3g} labels per {fit.unit} is outside "
            f"[{MIN_RATE:g}, {MAX_RATE:g}], the arrival rates a scenario accepts; give the "
            f"times in a {'larger' if fit.rate < MIN_RATE else 'smaller'} unit (e.g. "
            f"{'seconds, not milliseconds' if fit.rate < MIN_RATE else 'seconds, not hours'})",
            source=source)
    return fit


def checked_input(data: LabelSet, truth: np.ndarray | None, labels_file: str
                  ) -> tuple[LabelSet, np.ndarray | None]:
    """The labelled tasks of ``data`` (and their truth), refused when there is nothing to fit;
    one ``marketsim: warning:`` line on stderr per thing the fit cannot learn."""
    data, truth, dropped = labelled_only(data, truth)
    data, truth, taken_out = worker_classes_only(data, truth)
    check_calibratable(data, truth, labels_file)
    for note in [*taken_out, *calibration_warnings(data, truth, dropped)]:
        print(f"marketsim: warning: {note}", file=sys.stderr)
    return data, truth


def load(args: argparse.Namespace, labels_file: str, truth_file: str | None, fmt: str | None
         ) -> tuple[LabelSet, np.ndarray | None, Timestamps | None]:
    """The labels, truth and times of the file; a file of scores is refused in one line."""
    try:
        return load_labels_timed(labels_file, truth_file, fmt, delimiter=args.delimiter,
                                 columns=args.columns, duplicates=args.duplicates, on_drop=warn)
    except ScoreFileError as exc:
        raise InputError(f"{exc.detail}; a file of continuous scores cannot be calibrated "
                         "(calibrate fits class labels; marketsim infer reads score files)",
                         source=exc.source, where=exc.where) from None


def execute(args: argparse.Namespace) -> int:
    """Run ``calibrate``: load, fit, write the scenario, simulate it once, report the fit.
    Every check of the options and output files comes before the fit; the fit's Python
    warnings are printed as ``marketsim: note:`` lines, as ``infer`` prints them."""
    check_options(args)
    if args.dataset is not None:
        crowd, truth_path = dataset_paths(args.dataset, args.data_dir)
        labels_file, truth_file, fmt = str(crowd), str(truth_path), "zhang"
    else:
        labels_file, truth_file, fmt = args.labels, args.truth, args.format
    out = Path(args.out)
    fit_json, fit_png = output_files(out)
    check_output_files({"--out": out, "--out (fit)": fit_json, "--out (plot)": fit_png},
                       {"labels": labels_file, "truth": truth_file})
    with warnings_as_notes():
        cal, rows, arrivals = fit_twin(args, labels_file, truth_file, fmt,
                                       make_steps(args.quiet))
    chosen, forced = cal.chosen, cal.forced_types
    how = (f"with --task-types {forced}" if forced is not None else
           f"with {' or '.join(map(str, cal.judged_types))} type(s), by "
           + ("the twins' errors" if cal.moments is not None else "held-out likelihood"))
    how = ("nearest the design curve " if cal.curve is not None else "lowest ") + how
    print(f"wrote {out} (world: {chosen.name}; BIC {chosen.bic:.1f}, {how})")
    print(types_summary(cal))
    if cal.curve is not None:
        print("\n".join(curve_lines(cal.curve, cal.labels_per_task)))
        for line in off_warnings(cal.curve):
            print(f"marketsim: warning: {line}", file=sys.stderr)
    width = max(len(r.statistic) for r in rows)
    print(f"{'goodness of fit':<{width}}  {'real':>28}  simulated")
    for r in rows:
        print(f"{r.statistic:<{width}}  {r.real:>28}  {r.simulated}")
    if arrivals is not None:
        print(f"arrivals: {arrivals.rate:.6g} labels per {arrivals.unit} (1 unit of simulated "
              f"time = 1 {arrivals.unit} of column {arrivals.column!r})")
        if arrivals.poor:
            print(poor_fit_warning(arrivals))
    print(f"saved {fit_json} and {fit_png}", file=sys.stderr)
    return EXIT_OK


def fit_twin(args: argparse.Namespace, labels_file: str, truth_file: str | None,
             fmt: str | None, steps: Steps) -> tuple[Calibration, list[FitRow],
                                                     ArrivalFit | None]:
    """Load, fit (a mixed file's models too), write the scenario and its goodness of fit
    (``<out>.fit.json``, ``.png``); the calibration, the goodness-of-fit rows and the arrival
    fit, for the printed summary. Each long step is shown to ``steps`` (a progress bar)."""
    out = Path(args.out)
    fit_json, fit_png = output_files(out)
    data, truth, times = load(args, labels_file, truth_file, fmt)
    data, answers, times = split_models(data, times, labels_file)  # a mixed file's humans
    if truth is not None and truth_file is not None:
        check_truth_coverage(data, truth, truth_file=truth_file, labels_file=labels_file)
    if data.n_labels == 0:
        raise InputError("has no labels", source=labels_file)
    arrivals = None if times is None else arrivals_fit(times, labels_file)  # errors first,
    data, truth = checked_input(data, truth, labels_file)  # then the fit's warnings
    mapper = process_map(fit_jobs(args.jobs))
    weights, prior, ref, source, ds_labels = reference(data, truth)
    with steps.step("fitting the worlds of one matrix per worker", 8) as advance:
        fits = candidate_worlds(data.tasks, data.workers, data.labels, weights, data.n_workers,
                                advance=advance, mapper=mapper)
    forced = None if args.task_types == "auto" else int(args.task_types)
    counts = tuple(range(2, MAX_TYPES + 1)) if forced is None else (forced,) * (forced > 1)
    types: tuple[TypesFit, ...] = ()
    if counts:
        with steps.step("fitting the mixtures of task types", 2 * len(counts)) as advance:
            types = type_candidates(data.tasks, data.workers, data.labels, weights, data.n_workers,
                                    seed=args.seed, counts=counts, advance=advance, mapper=mapper)
    known = np.zeros(data.n_tasks, dtype=bool) if truth is None else truth >= 0
    real_error = float(np.mean(ds_labels[known] != ref[known])) if known.any() else np.nan
    by_moments = forced is None and int(known.sum()) >= MIN_KNOWN_FOR_MOMENTS
    held = None
    if forced is None and not by_moments:
        with steps.step("choosing the number of task types by held-out likelihood",
                        FOLDS * MAX_TYPES) as advance:
            held = select_types(data.tasks, data.workers, data.labels, weights, known, prior,
                                data.n_workers, min(fits, key=lambda f: f.bic), seed=args.seed,
                                advance=advance)
    name = scenario_name(args)
    with steps.step("drawing the data's own design curve", 1):
        real = real_curve(data, truth, seed=args.seed, draws=curve_draws(known))
    with steps.step("fitting the crowd-shrunk worlds", 4) as advance:
        crowd, bases = crowd_shrunk(data, weights, ref, known, real, args.seed, advance, mapper)
    per_worker = np.bincount(data.workers, minlength=data.n_workers)  # the arrival deck
    cal = Calibration(name, data.n_tasks, max(data.n_classes, 2), data.n_labels, prior,
                      per_worker, fits, source, labels_per_task(data.tasks, data.n_tasks),
                      arrivals, types, forced, held, crowd_fits=crowd)
    with steps.step("fitting the ambiguous share of the look-alike worlds to the "
                    "majority's profile, the pulls of ambiguous tasks and the spread of "
                    "the labels following the look-alike", 4) as advance:
        cal = replace(cal, crowd_fits=shared_errors(cal, bases, fits, data, weights, ref, known,
                                                    real, args.seed, advance, mapper))
    if by_moments:
        with steps.step("choosing the number of task types: simulating each one's twin "
                        f"({MOMENT_REPLICATES} replicates)",
                        len(type_counts(cal)) * MOMENT_REPLICATES) as advance:
            cal = replace(cal, moments=moment_choice(cal, data, ref, known, real_error,
                                                     args.seed, advance, real.mix))
    with steps.step("simulating each candidate's twin on the design curve",
                    curve_units(cal)) as advance:
        cal = choose_twin(cal, real, args.seed, advance=advance, mapper=mapper)
    with steps.step("running the chosen twin with arrivals from a deck", WRITTEN_CHUNKS) as advance:
        cal = written_twin(cal, real, args.seed, advance=advance, mapper=mapper)
    cal = fit_models(cal, data, truth, ref, answers)
    text = calibrated_text(cal, command_line(args, labels_file, truth_file), args.seed)
    scenario = check_text(text, str(out))
    write_text_atomic(out, text)
    with steps.step("simulating the twin as collected", 1):
        sim, sim_truth, sim_error, sim_times = simulated_labels(scenario,
                                                                times=arrivals is not None)
    k = scenario.tasks.classes
    on_truth = real.mix is not None  # judged as the real file's tasks with a truth are mixed
    real_stats = crowd_stats(data.tasks, data.workers, data.labels, ref, data.n_tasks,
                             data.n_workers, k, truth if on_truth else None, real.mix)
    twin_stats = crowd_stats(sim.tasks, sim.workers, sim.labels, sim_truth, sim.n_tasks,
                             sim.n_workers, k, mix=real.mix)
    note = "1 replicate"
    if on_truth:
        sim_error = final_error(scenario, sim, sim_truth, 0, real.mix)
        note += ", weighted to the truth's class mix"
    rows = (fit_rows(real_stats, twin_stats, real_error, sim_error, note, on_truth)
            + model_rows(scenario, cal, sim))
    if arrivals is not None and times is not None:
        more, arrivals_record = time_rows(arrivals, times.values, sim_times)
        rows += more
    record: dict[str, Any] = {"scenario": str(out), **fit_record(cal), "goodness_of_fit": [
        asdict(row) for row in rows], "labels_per_task": spread_record(real_stats, twin_stats)}
    if arrivals is not None and times is not None:
        record["arrivals"] = arrivals_record
    write_json_atomic(fit_json, record)
    with steps.step("drawing the fit's plot", 1):
        import_plotting()
        plot_fit(fit_png, real_stats, twin_stats, f"{name}: real crowd against its twin",
                 cal.curve)
    return cal, rows, arrivals
