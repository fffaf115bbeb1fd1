"""``marketsim infer``: aggregate crowd labels from a file with one inference method.

Prints a table (or one JSON object with ``--json``) with the fit's size, iterations, time,
final objective and, when a truth file is given, the error rate over tasks with known truth.
``--output`` writes per-task posteriors, ``--workers`` per-worker estimates (atomic writes).

Two further inputs:

- ``--scores``: the labels file holds a continuous score in [0, 1] per (task, worker); a
  score method (``gaussian-em``, the default, or ``gaussian-hard-em``) estimates each task's
  mean and each annotator's P(good); with ``--truth`` (true means) the RMSE is reported beside
  the plain mean's.
- ``--features FILE``: binary task features (``task,<feature>...``) for methods that use them
  (``ds-features``).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import sys
import time
from typing import Any

import numpy as np

from marketsim.aggregation.base import BaseAggregator
from marketsim.aggregation.model_repeats import count_model_answers_once
from marketsim.aggregation.registry import CLASS_METHODS, METHODS, SCORE_METHODS, make_estimator
from marketsim.aggregation.summary import class_summary, score_summary
from marketsim.cli.duplicates import add_duplicates_option, check_duplicates_option, warn
from marketsim.cli.infer_table import print_score_table, print_table
from marketsim.cli.notes import print_notes, warnings_as_notes
from marketsim.data.columns import delimiter_name, parse_columns
from marketsim.data.csv_labels import ScoreFileError
from marketsim.data.datasets import DATA_ENV, DATASETS, dataset_paths
from marketsim.data.espinosa2024 import FOLDER as MIXED_DATASET
from marketsim.data.espinosa2024 import espinosa_folder, load_espinosa2024
from marketsim.data.features import FeatureTable, load_features
from marketsim.data.labels import LabelSet
from marketsim.data.load import FORMATS, load_labels
from marketsim.data.scores import load_scores
from marketsim.data.truth import check_truth_coverage
from marketsim.errors import EXIT_OK, InputError
from marketsim.record.infer_result import InferResult
from marketsim.record.predictions import (
    check_output_files,
    score_worker_table,
    worker_table,
    write_means,
    write_posteriors,
    write_table,
)

#: Method used when ``--method`` is not given: Dawid-Skene EM from majority vote (MV-D&S).
DEFAULT_METHOD = "ds"
#: Method used with ``--scores`` when ``--method`` is not given: Hoiem's bad-annotator soft EM.
DEFAULT_SCORE_METHOD = "gaussian-em"
#: The data sets ``--dataset`` reads: the crowd sets, and one of models' labels.
INFER_DATASETS = (*DATASETS, MIXED_DATASET)


def feature_methods() -> tuple[str, ...]:
    """Class methods whose ``fit`` takes task features (a ``features`` parameter)."""
    return tuple(
        name for name in CLASS_METHODS
        if "features" in inspect.signature(make_estimator(name).fit).parameters
    )


EPILOG = f"""class methods: {', '.join(CLASS_METHODS)} (default {DEFAULT_METHOD})
score methods (--scores): {', '.join(SCORE_METHODS)} (default {DEFAULT_SCORE_METHOD})
examples:
  python -m marketsim infer labels.csv --truth truth.csv --method ds --json
  python -m marketsim infer --dataset rte --method opt-ds --data-dir ../shared/data/zhang2014
  python -m marketsim infer crowd.txt --method mv --output posteriors.csv --workers workers.csv
  python -m marketsim infer scores.csv --scores --truth means.csv --json
  python -m marketsim infer labels.csv --method ds-features --features features.csv
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``infer`` subcommand."""
    p = sub.add_parser(
        "infer",
        help="aggregate crowd labels from a file (or a reference dataset) with one method",
        description="Fit an inference method to crowd labels and report iterations, time, "
        "log-likelihood and, with a truth file, the error rate.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("labels", nargs="?", help="labels file (.csv: headed CSV; else zhang format)")
    p.add_argument("--dataset", metavar="NAME",
                   help=f"reference dataset instead of LABELS: {', '.join(INFER_DATASETS)} "
                   f"({MIXED_DATASET}: language models' labels, "
                   f"docs/explanation/infer/mixed-crowds.md)")
    p.add_argument("--data-dir", metavar="DIR",
                   help=f"folder of the reference datasets (default: ${DATA_ENV})")
    p.add_argument("--truth", metavar="FILE",
                   help="ground-truth file (same format as LABELS; with --scores a CSV "
                   "task,mean or task,value of true means)")
    p.add_argument("--method", metavar="NAME",
                   help=f"inference method (default {DEFAULT_METHOD}, with --scores "
                   f"{DEFAULT_SCORE_METHOD}); one of {', '.join(METHODS)}")
    p.add_argument("--scores", action="store_true",
                   help="LABELS is a CSV of continuous scores in [0, 1] (columns task, worker, "
                   "score; a label column is ignored; empty = missing)")
    p.add_argument("--features", metavar="FILE",
                   help="CSV task,<feature>... of 0/1 task features (empty = missing), for "
                   "methods that use them (ds-features)")
    p.add_argument("--format", metavar="FMT",
                   help="file format: zhang or csv (default: csv for .csv and .tsv files, "
                   "else zhang)")
    p.add_argument("--delimiter", metavar="SEP",
                   help="field separator of the CSV inputs: comma, tab, semicolon or pipe (or "
                   "the character; default: detected from each file's header line)")
    p.add_argument("--columns", metavar="MAP",
                   help="column names of LABELS by role, e.g. task=item,worker=annotator,"
                   "label=answer (roles: task, worker, label, score)")
    add_duplicates_option(p)
    p.add_argument("--max-iter", type=int, metavar="N",
                   help="maximum EM iterations (default: the method's, 100)")
    p.add_argument("--tol", type=float, metavar="X",
                   help="convergence tolerance per label (default: the method's, 1e-7)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="random seed for ties, random starts, spectral restarts (default 0)")
    p.add_argument("--output", metavar="FILE",
                   help="write per-task predictions and posteriors (CSV)")
    p.add_argument("--workers", metavar="FILE", help="write per-worker estimates (CSV)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


# --------------------------------------------------------------------------------------------
# option checks and loading
# --------------------------------------------------------------------------------------------
def check_options(args: argparse.Namespace) -> None:
    """Raise InputError for any bad option value (before any file is read)."""
    if args.method is None:
        args.method = DEFAULT_SCORE_METHOD if args.scores else DEFAULT_METHOD
    if args.method not in METHODS:
        raise InputError(
            f"unknown method {args.method!r}; choose one of: {', '.join(METHODS)}"
        )
    if args.scores and args.method not in SCORE_METHODS:
        raise InputError(
            f"method {args.method!r} estimates classes from class labels; with --scores "
            f"choose one of: {', '.join(SCORE_METHODS)}"
        )
    if not args.scores and args.method in SCORE_METHODS:
        raise InputError(
            f"method {args.method!r} needs continuous scores: add --scores (a CSV task,worker,"
            f"score), or choose a class method: {', '.join(CLASS_METHODS)}"
        )
    if args.features is not None and args.method not in feature_methods():
        raise InputError(
            f"--features only applies to methods that use task features "
            f"({', '.join(feature_methods())}); got --method {args.method}"
        )
    if args.scores and args.dataset is not None:
        raise InputError(
            "--scores cannot be combined with --dataset (the reference data sets hold class "
            "labels); give a score CSV as LABELS"
        )
    if args.scores and args.format == "zhang":
        raise InputError("--format zhang cannot be combined with --scores (score files are "
                         "CSV: task,worker,score)")
    if args.format is not None and args.format not in FORMATS:
        raise InputError(f"unknown --format {args.format!r}; choose one of: {', '.join(FORMATS)}")
    if args.max_iter is not None and args.max_iter < 1:
        raise InputError(f"--max-iter must be >= 1, got {args.max_iter}")
    if args.tol is not None and not (math.isfinite(args.tol) and args.tol >= 0):
        raise InputError(f"--tol must be a finite number >= 0, got {args.tol}")
    if args.seed is not None and args.seed < 0:
        raise InputError(f"--seed must be >= 0, got {args.seed}")
    check_duplicates_option(args)
    if args.labels is None and args.dataset is None:
        raise InputError("give a LABELS file or --dataset NAME")
    if args.labels is not None and args.dataset is not None:
        raise InputError(f"give either a LABELS file or --dataset, not both (got {args.labels!r} "
                         f"and --dataset {args.dataset})")
    if args.dataset is not None:
        if args.dataset not in INFER_DATASETS:
            raise InputError(
                f"unknown dataset {args.dataset!r}; choose one of: {', '.join(INFER_DATASETS)}"
            )
        if args.truth is not None:
            raise InputError("--truth cannot be combined with --dataset (its truth file is used)")
        if args.format not in (None, "zhang"):
            raise InputError("--format csv cannot be combined with --dataset (zhang format)")
        for opt in ("delimiter", "columns"):
            if getattr(args, opt) is not None:
                raise InputError(f"--{opt} cannot be combined with --dataset (zhang format)")
    elif args.data_dir is not None:
        raise InputError("--data-dir only applies with --dataset")
    if args.delimiter is not None:
        args.delimiter = delimiter_name(args.delimiter)
    if args.columns is not None:
        args.columns = parse_columns(args.columns)


def input_files(args: argparse.Namespace) -> tuple[str, str | None]:
    """The labels and truth files to read (a ``--dataset``'s files found by its folder)."""
    if args.dataset == MIXED_DATASET:
        return str(espinosa_folder(args.data_dir)), None
    if args.dataset is not None:
        crowd, truth = dataset_paths(args.dataset, args.data_dir)
        return str(crowd), str(truth)
    return str(args.labels), args.truth


def load_input(
    args: argparse.Namespace, labels_file: str, truth_file: str | None
) -> tuple[LabelSet, np.ndarray | None]:
    """Load labels (or scores) and truth.

    With ``--scores`` the truth is a float array of true means (NaN = unknown), else an int
    array of class indices (-1 = unknown).
    """
    csv_options = {"delimiter": args.delimiter, "columns": args.columns,
                   "duplicates": args.duplicates, "on_drop": warn}
    if args.scores:
        return load_scores(labels_file, truth_file, **csv_options)
    if args.dataset == MIXED_DATASET:
        return load_espinosa2024(args.data_dir)
    fmt = "zhang" if args.dataset is not None else args.format
    try:
        return load_labels(labels_file, truth_file, fmt, **csv_options)
    except ScoreFileError as exc:
        raise InputError(f"{exc.detail}; a file of continuous scores needs --scores",
                         source=exc.source, where=exc.where) from None


def build_estimator(args: argparse.Namespace) -> tuple[BaseAggregator, list[str]]:
    """The estimator for ``--method`` with the options it accepts; also the ignored options."""
    est = make_estimator(args.method)
    accepted = est.get_params()
    wanted = {"max_iter": args.max_iter, "tol": args.tol, "random_state": args.seed}
    params = {k: v for k, v in wanted.items() if v is not None and k in accepted}
    ignored = [
        "--" + k.replace("_", "-")
        for k, v in wanted.items()
        if v is not None and k not in accepted and k != "random_state"
    ]
    est.set_params(**params)
    return est, ignored


# --------------------------------------------------------------------------------------------
# fitting and results
# --------------------------------------------------------------------------------------------
def fit(est: BaseAggregator, data: LabelSet, method: str, **fit_params: Any) -> float:
    """Fit ``est`` (with ``fit_params``, e.g. ``features``); return the seconds taken. The
    warnings raised are printed as ``marketsim: note:`` lines (:mod:`marketsim.cli.notes`)."""
    with warnings_as_notes():
        started = time.perf_counter()
        try:
            est.fit(data, **fit_params)
        except ValueError as exc:
            raise InputError(f"method {method!r} cannot fit these labels: {exc}") from None
        seconds = time.perf_counter() - started
    return seconds


# --------------------------------------------------------------------------------------------
# task features
# --------------------------------------------------------------------------------------------
def load_task_features(
    path: str, data: LabelSet, args: argparse.Namespace
) -> tuple[FeatureTable, list[str]]:
    """Features for ``data``'s tasks, and a note when some tasks have no row in the file."""
    table = load_features(path, data.task_ids, delimiter=args.delimiter, columns=args.columns)
    notes = []
    missing = int(np.count_nonzero(~table.has_row))
    if missing:
        notes.append(f"{missing} of {data.n_tasks} tasks have no row in {path}; their "
                     "features count as missing")
    return table, notes


def execute(args: argparse.Namespace) -> int:
    """Run ``infer``: check options, load, fit, report, write files."""
    check_options(args)
    labels_file, truth_file = input_files(args)
    check_output_files(
        {"--output": args.output, "--workers": args.workers},
        {"labels": labels_file, "truth": truth_file, "features": args.features},
    )
    started = time.perf_counter()
    data, truth = load_input(args, labels_file, truth_file)
    coverage = None
    if truth is not None and truth_file is not None:
        coverage = check_truth_coverage(data, truth, truth_file=truth_file,
                                        labels_file=labels_file)
    fit_params: dict[str, Any] = {}
    features: FeatureTable | None = None
    if args.features is not None:
        features, notes = load_task_features(args.features, data, args)
        fit_params.update(features=features.values)
        print_notes(notes)
    data, dropped = count_model_answers_once(data)
    if dropped:
        print_notes([f"{labels_file}: {dropped} repeated answer{'s' * (dropped != 1)} of a "
                     "model to a task counted once (same source, same task, same answer)"])
    load_seconds = time.perf_counter() - started
    est, ignored = build_estimator(args)
    print_notes([f"{opt} is ignored by method {args.method!r}" for opt in ignored])
    seconds = fit(est, data, args.method, **fit_params)
    make_summary = score_summary if args.scores else class_summary
    fitted = make_summary(est, data, truth, method=args.method, seconds=seconds,
                          labels_file=labels_file, truth_file=truth_file)
    extra: dict[str, Any] = {"load_seconds": round(load_seconds, 6)}
    if data.has_models:
        extra.update(model_repeats_dropped=dropped)
    if coverage is not None:
        extra.update(truth_coverage=coverage.as_dict())
    if features is not None:
        extra.update(features_file=args.features, n_features=len(features.names),
                     n_tasks_with_features=int(np.count_nonzero(features.has_row)))
    result = InferResult.model_validate({**fitted, **extra})
    if coverage is not None:
        warning = coverage.warning(str(truth_file), "RMSE" if args.scores else "error rate",
                                   result.n_tasks_with_truth or 0)
        if warning:
            print(f"marketsim: warning: {warning}", file=sys.stderr)
    written: dict[str, Any] = {}
    if args.output:
        (write_means if args.scores else write_posteriors)(args.output, est, data, truth)
        written.update(output=args.output)
    if args.workers:
        header, rows = (score_worker_table if args.scores else worker_table)(est, data)
        write_table(args.workers, header, rows)
        written.update(workers_file=args.workers)
    if written:
        result = InferResult.model_validate({**result.json_object(), **written})
    if args.json:
        sys.stdout.write(json.dumps(result.json_object(), allow_nan=False) + "\n")
    elif args.scores:
        print_score_table(result)
    else:
        print_table(result)
    return EXIT_OK
