"""``marketsim infer``: aggregate crowd labels from a file with one inference method.

Prints a table (or one JSON object with ``--json``) with the fit's size, iterations, time,
final objective and, when a truth file is given, the error rate over tasks with known truth.
``--output`` writes per-task posteriors, ``--workers`` per-worker estimates (atomic writes).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.aggregation.base import BaseAggregator
from marketsim.aggregation.majority_vote import fractional_tie_error
from marketsim.aggregation.metrics import error_rate
from marketsim.aggregation.registry import METHODS, make_estimator
from marketsim.data.labels import LabelSet
from marketsim.data.loaders import DATA_ENV, DATASETS, FORMATS, dataset_paths, load_labels
from marketsim.errors import EXIT_OK, InputError
from marketsim.report.files import write_csv_atomic

#: Method used when ``--method`` is not given: Dawid-Skene EM from majority vote (MV-D&S).
DEFAULT_METHOD = "ds"

EPILOG = f"""methods: {', '.join(METHODS)} (default {DEFAULT_METHOD})
examples:
  python -m marketsim infer labels.csv --truth truth.csv --method ds --json
  python -m marketsim infer --dataset rte --method opt-ds --data-dir ../shared/data/zhang2014
  python -m marketsim infer crowd.txt --method mv --output posteriors.csv --workers workers.csv
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
                   help=f"reference dataset instead of LABELS: {', '.join(DATASETS)}")
    p.add_argument("--data-dir", metavar="DIR",
                   help=f"folder of the reference datasets (default: ${DATA_ENV})")
    p.add_argument("--truth", metavar="FILE", help="ground-truth file (same format as LABELS)")
    p.add_argument("--method", default=DEFAULT_METHOD, metavar="NAME",
                   help=f"inference method (default {DEFAULT_METHOD}); one of {', '.join(METHODS)}")
    p.add_argument("--format", metavar="FMT",
                   help="file format: zhang or csv (default: csv for .csv files, else zhang)")
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
    if args.method not in METHODS:
        raise InputError(
            f"unknown method {args.method!r}; choose one of: {', '.join(METHODS)}"
        )
    if args.format is not None and args.format not in FORMATS:
        raise InputError(f"unknown --format {args.format!r}; choose one of: {', '.join(FORMATS)}")
    if args.max_iter is not None and args.max_iter < 1:
        raise InputError(f"--max-iter must be >= 1, got {args.max_iter}")
    if args.tol is not None and not (math.isfinite(args.tol) and args.tol >= 0):
        raise InputError(f"--tol must be a finite number >= 0, got {args.tol}")
    if args.seed is not None and args.seed < 0:
        raise InputError(f"--seed must be >= 0, got {args.seed}")
    if args.labels is None and args.dataset is None:
        raise InputError("give a LABELS file or --dataset NAME")
    if args.labels is not None and args.dataset is not None:
        raise InputError(f"give either a LABELS file or --dataset, not both (got {args.labels!r} "
                         f"and --dataset {args.dataset})")
    if args.dataset is not None:
        if args.dataset not in DATASETS:
            raise InputError(
                f"unknown dataset {args.dataset!r}; choose one of: {', '.join(DATASETS)}"
            )
        if args.truth is not None:
            raise InputError("--truth cannot be combined with --dataset (its truth file is used)")
        if args.format not in (None, "zhang"):
            raise InputError("--format csv cannot be combined with --dataset (zhang format)")
    elif args.data_dir is not None:
        raise InputError("--data-dir only applies with --dataset")
    for opt, value in (("--output", args.output), ("--workers", args.workers)):
        if value is not None and Path(value).is_dir():
            raise InputError(f"{opt} {value!r} is a folder; give a file name")


def load_input(args: argparse.Namespace) -> tuple[LabelSet, np.ndarray | None, str, str | None]:
    """Load labels and truth; return them with the file names used."""
    if args.dataset is not None:
        crowd, truth = dataset_paths(args.dataset, args.data_dir)
        data, truth_arr = load_labels(crowd, truth, "zhang")
        return data, truth_arr, str(crowd), str(truth)
    data, truth_arr = load_labels(args.labels, args.truth, args.format)
    return data, truth_arr, str(args.labels), args.truth


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
def fit(est: BaseAggregator, data: LabelSet, method: str) -> tuple[float, list[str]]:
    """Fit ``est``; return the seconds taken and one-line notes for warnings raised."""
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.perf_counter()
        try:
            est.fit(data)
        except ValueError as exc:
            raise InputError(f"method {method!r} cannot fit these labels: {exc}") from None
        seconds = time.perf_counter() - started
    for w in caught:
        text = " ".join(str(w.message).split())
        if text not in notes:
            notes.append(text)
    return seconds, notes


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def summary(
    est: BaseAggregator,
    data: LabelSet,
    truth: np.ndarray | None,
    *,
    method: str,
    seconds: float,
    labels_file: str,
    truth_file: str | None,
) -> dict[str, Any]:
    """The result as a JSON-ready dict."""
    history = list(getattr(est, "log_likelihood_", []) or [])
    result: dict[str, Any] = {
        "method": method,
        "labels_file": labels_file,
        "truth_file": truth_file,
        "n_tasks": data.n_tasks,
        "n_workers": data.n_workers,
        "n_labels": data.n_labels,
        "n_classes": data.n_classes,
        "iterations": int(getattr(est, "n_iter_", 0)),
        "converged": bool(getattr(est, "converged_", True)),
        "seconds": round(seconds, 6),
        "log_likelihood": _finite(history[-1]) if history else None,
    }
    if getattr(est, "init_used_", None) is not None:
        result["init"] = est.init_used_
    if truth is not None:
        known = truth >= 0
        result["n_tasks_with_truth"] = int(known.sum())
        result["error_rate"] = _finite(error_rate(est.labels_, truth))
        if method == "mv":
            result["error_rate_fractional_ties"] = _finite(
                fractional_tie_error(data.vote_counts(), truth)
            )
    return result


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def print_table(result: dict[str, Any]) -> None:
    """Print the result as a rich table on stdout."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"marketsim infer: {result['method']}", show_header=False)
    table.add_column("quantity", style="bold")
    table.add_column("value", justify="right", overflow="fold")
    rows = [
        ("method", result["method"]),
        ("labels file", result["labels_file"]),
        ("tasks / workers / labels / classes",
         f"{result['n_tasks']} / {result['n_workers']} / {result['n_labels']} / "
         f"{result['n_classes']}"),
        ("iterations", result["iterations"]),
        ("converged", "yes" if result["converged"] else "no"),
        ("seconds", f"{result['seconds']:.3f}"),
        ("log-likelihood", result["log_likelihood"]),
    ]
    if "error_rate" in result:
        err = result["error_rate"]
        rows.append((f"error rate ({result['n_tasks_with_truth']} tasks with truth)",
                     "-" if err is None else f"{100 * err:.2f}%"))
    if "error_rate_fractional_ties" in result:
        err = result["error_rate_fractional_ties"]
        rows.append(("error rate, fractional ties", "-" if err is None else f"{100 * err:.2f}%"))
    for key, value in rows:
        table.add_row(key, _fmt(value))
    Console(soft_wrap=False).print(table)


def _num(x: float) -> str:
    return f"{x:.10g}"


def write_posteriors(path: str, est: BaseAggregator, data: LabelSet,
                     truth: np.ndarray | None) -> None:
    """CSV per task: ``task, predicted, [truth,] p_<class id>...`` (atomic)."""
    class_ids = [str(c) for c in data.class_ids]
    header = ["task", "predicted"] + (["truth"] if truth is not None else [])
    header += [f"p_{c}" for c in class_ids]
    proba = np.asarray(est.proba_)
    predicted = np.asarray(est.labels_)

    def rows() -> Iterator[list[str]]:
        for i in range(data.n_tasks):
            row = [str(data.task_ids[i]), class_ids[predicted[i]]]
            if truth is not None:
                row.append(class_ids[truth[i]] if truth[i] >= 0 else "")
            row.extend(_num(p) for p in proba[i].tolist())
            yield row

    _write(path, header, rows())


def worker_table(est: BaseAggregator, data: LabelSet) -> tuple[list[str], list[list[str]]]:
    """Header and rows of per-worker estimates.

    ``accuracy`` is ``skill_`` for one-coin models, ``sum_c prior_c C[c, c]`` for confusion
    models (followed by every ``C[c, l]`` as ``conf_<c>_<l>``) and, for majority vote, the
    fraction of the worker's labels that agree with the predicted class.
    """
    class_ids = [str(c) for c in data.class_ids]
    degree = data.worker_degree
    header = ["worker", "n_labels", "accuracy"]
    confusion = getattr(est, "confusion_", None)
    if getattr(est, "skill_", None) is not None:
        accuracy = np.asarray(est.skill_, dtype=np.float64)
    elif confusion is not None:
        conf = np.asarray(confusion, dtype=np.float64)
        diag = np.diagonal(conf, axis1=1, axis2=2)
        accuracy = diag @ np.asarray(est.prior_, dtype=np.float64)
        header += [f"conf_{c}_{lab}" for c in class_ids for lab in class_ids]
    else:
        agree = (data.labels == np.asarray(est.labels_)[data.tasks]).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            accuracy = np.bincount(data.workers, agree, minlength=data.n_workers) / degree
    rows: list[list[str]] = []
    for j in range(data.n_workers):
        row = [str(data.worker_ids[j]), str(int(degree[j])), _num(float(accuracy[j]))]
        if confusion is not None:
            row.extend(_num(v) for v in np.asarray(confusion[j]).ravel().tolist())
        rows.append(row)
    return header, rows


def _write(path: str, header: list[str], rows: Any) -> None:
    try:
        write_csv_atomic(path, header, rows)
    except OSError as exc:
        raise InputError(f"cannot write file ({exc.strerror or exc})", source=path) from None


def execute(args: argparse.Namespace) -> int:
    """Run ``infer``: check options, load, fit, report, write files."""
    check_options(args)
    started = time.perf_counter()
    data, truth, labels_file, truth_file = load_input(args)
    load_seconds = time.perf_counter() - started
    est, ignored = build_estimator(args)
    for opt in ignored:
        print(f"marketsim: note: {opt} is ignored by method {args.method!r}", file=sys.stderr)
    seconds, notes = fit(est, data, args.method)
    for note in notes:
        print(f"marketsim: note: {note}", file=sys.stderr)
    result = summary(est, data, truth, method=args.method, seconds=seconds,
                     labels_file=labels_file, truth_file=truth_file)
    result["load_seconds"] = round(load_seconds, 6)
    if args.output:
        write_posteriors(args.output, est, data, truth)
        result["output"] = args.output
    if args.workers:
        header, rows = worker_table(est, data)
        _write(args.workers, header, rows)
        result["workers_file"] = args.workers
    if args.json:
        sys.stdout.write(json.dumps(result, allow_nan=False) + "\n")
    else:
        print_table(result)
    return EXIT_OK
