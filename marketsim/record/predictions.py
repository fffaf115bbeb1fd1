"""Result files of an inference: per-task posteriors or means, per-worker estimates (CSV).

Every file is written atomically (:func:`marketsim.record.files.write_csv_atomic`). Numbers
are written with 10 significant digits; a missing value is an empty cell.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from marketsim.aggregation.bad_annotators import plain_means
from marketsim.aggregation.base import BaseAggregator
from marketsim.data.labels import LabelSet
from marketsim.errors import InputError
from marketsim.record.files import write_csv_atomic


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file: the same resolved path (symlinks, ``./`` and ``..``
    followed), or the same file (``os.path.samefile``, e.g. a hard link) when both exist."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    return os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)


def check_output_files(
    outputs: dict[str, str | os.PathLike[str] | None],
    inputs: dict[str, str | os.PathLike[str] | None],
) -> None:
    """InputError, before anything is computed, when an output file (option -> path) is a
    folder or in a folder that does not exist or is not writable, or is one of the input files
    (what -> path) or another output: written one after the other, the last would silently
    replace the first."""
    given = [(opt, out) for opt, out in outputs.items() if out is not None]
    for i, (opt, out) in enumerate(given):
        folder = os.path.dirname(out) or "."
        if os.path.isdir(out) or not str(out):
            raise InputError(f"{opt} {str(out)!r} is a folder; give a file name")
        if not os.path.isdir(folder):
            raise InputError(f"{opt} {str(out)!r}: folder {folder!r} does not exist")
        if not os.access(folder, os.W_OK):
            raise InputError(f"{opt} {str(out)!r}: folder {folder!r} is not writable")
        for what, inp in inputs.items():
            if inp is not None and _same_file(out, inp):
                raise InputError(f"{opt} {str(out)!r} is the {what} file, an input: choose "
                                 "another output file name")
        for other, path in given[:i]:
            if _same_file(out, path):
                raise InputError(f"{other} {str(path)!r} and {opt} {str(out)!r} are the same "
                                 "file: give each output its own file name")


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

    write_table(path, header, rows())


def worker_table(est: BaseAggregator, data: LabelSet) -> tuple[list[str], list[list[str]]]:
    """Header and rows of per-worker estimates.

    ``accuracy`` is ``skill_`` for one-coin models, ``sum_c prior_c C[c, c]`` for confusion
    models (followed by every ``C[c, l]`` as ``conf_<c>_<l>``) and, for majority vote, the
    fraction of the worker's labels that agree with the predicted class. A crowd of humans and
    models has a ``source`` column after ``worker`` (``human`` or the model's name).
    """
    class_ids = [str(c) for c in data.class_ids]
    degree = data.worker_degree
    sources = data.worker_sources if data.has_models else None
    header = ["worker", *(["source"] if sources else []), "n_labels", "accuracy"]
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
        row = [str(data.worker_ids[j]), *([sources[j]] if sources else []),
               str(int(degree[j])), _num(float(accuracy[j]))]
        if confusion is not None:
            row.extend(_num(v) for v in np.asarray(confusion[j]).ravel().tolist())
        rows.append(row)
    return header, rows


def write_table(path: str, header: list[str], rows: Iterable[Sequence[str]]) -> None:
    """Write a CSV atomically; an unwritable file is an InputError naming it."""
    try:
        write_csv_atomic(path, header, rows)
    except OSError as exc:
        raise InputError(f"cannot write file ({exc.strerror or exc})", source=path) from None


def _cell(x: float) -> str:
    """A number for a CSV cell; empty when missing (NaN)."""
    return "" if math.isnan(x) else _num(x)


def write_means(path: str, est: BaseAggregator, data: LabelSet,
                truth: np.ndarray | None) -> None:
    """CSV per task: ``task, mean, plain_mean, n_scores[, truth]`` (empty = no estimate)."""
    header = ["task", "mean", "plain_mean", "n_scores"] + (["truth"] if truth is not None else [])
    scored = ~np.isnan(np.asarray(data.scores))
    n_scores = np.bincount(data.tasks[scored], minlength=data.n_tasks).tolist()
    means = np.asarray(est.means_, dtype=np.float64).tolist()
    plain = plain_means(data).tolist()
    known = truth.tolist() if truth is not None else None

    def rows() -> Iterator[list[str]]:
        for i in range(data.n_tasks):
            row = [str(data.task_ids[i]), _cell(means[i]), _cell(plain[i]), str(n_scores[i])]
            if known is not None:
                row.append(_cell(known[i]))
            yield row

    write_table(path, header, rows())


def score_worker_table(est: BaseAggregator, data: LabelSet) -> tuple[list[str], list[list[str]]]:
    """Header and rows ``worker, p_good, n_scores`` (``p_good`` is ``pi`` for annotators
    without any score)."""
    scored = ~np.isnan(np.asarray(data.scores))
    n_scores = np.bincount(data.workers[scored], minlength=data.n_workers).tolist()
    p_good = np.asarray(est.good_proba_, dtype=np.float64).tolist()
    rows = [[str(data.worker_ids[j]), _num(p_good[j]), str(n_scores[j])]
            for j in range(data.n_workers)]
    return ["worker", "p_good", "n_scores"], rows
