"""Headed CSV files of continuous scores in [0, 1], and of true task means."""

from __future__ import annotations

import os

import numpy as np

from marketsim.data.assembly import DropNote, _assemble, _codes, _truth_conflict
from marketsim.data.columns import ColumnMap
from marketsim.data.labels import LabelSet
from marketsim.data.parsing import _gc_paused, _parse_numbers, _read_csv_table
from marketsim.errors import InputError

_SCORE_COLUMNS = {"task": ("task", "question"), "worker": ("worker",), "score": ("score",)}
_MEAN_COLUMNS = {"task": ("task", "question"), "mean": ("mean", "value")}


@_gc_paused()
def load_scores(
    labels_path: str | os.PathLike[str],
    truth_path: str | os.PathLike[str] | None = None,
    *,
    delimiter: str | None = None,
    columns: ColumnMap | None = None,
    duplicates: str = "error",
    on_drop: DropNote | None = None,
) -> tuple[LabelSet, np.ndarray | None]:
    """Load a headed CSV of continuous scores in [0, 1] (and true task means).

    Columns (case-insensitive, any order): ``task`` or ``question``, ``worker``, ``score``.
    A ``label``/``answer`` column, as in the ``task,worker,label,score`` layout, is ignored,
    like any other column. An empty score cell is a missing score: the row still claims its
    (task, worker) pair but adds no evidence. Truth files hold ``task`` and ``mean`` (or
    ``value``), finite numbers in [0, 1]; identical repeated truth rows are allowed.

    Returns the scores as a :class:`LabelSet` (``scores`` set, every label 0, one class) and
    the true mean per task (NaN where unknown) or None. A truth row for a task without
    scores adds that task (its estimate is then missing). ``delimiter`` and ``columns`` as
    for :func:`~marketsim.data.csv_labels.load_csv` (a mapped ``label`` role is ignored);
    ``duplicates`` and ``on_drop`` as there.
    """
    source = str(labels_path)
    cols, lines = _read_csv_table(labels_path, _SCORE_COLUMNS, (), frozenset({"score"}),
                                  delimiter=delimiter, columns=columns)
    if not lines.size:
        raise InputError("no scores (only a header)", source=source)
    scores = _parse_numbers(cols["score"], lines, source, "score", unit=True, allow_empty=True)
    if np.isnan(scores).all():
        raise InputError("no scores (every score cell is empty)", source=source)
    task_codes: dict[str, int] = {}
    tasks = _codes(cols["task"], task_codes)
    worker_codes: dict[str, int] = {}
    workers = _codes(cols["worker"], worker_codes)
    truth_source = None if truth_path is None else str(truth_path)
    truth_tasks = np.zeros(0, dtype=np.int64)
    if truth_path is not None:
        tcols, tlines = _read_csv_table(truth_path, _MEAN_COLUMNS, (), frozenset(),
                                       delimiter=delimiter, columns=columns, strict=False)
        if not tlines.size:
            raise InputError("no truth rows (only a header)", source=truth_source)
        means = _parse_numbers(tcols["mean"], tlines, str(truth_path), "mean", unit=True,
                               allow_empty=False)
        truth_tasks = _codes(tcols["task"], task_codes)
    n = tasks.size
    data, _, _ = _assemble(
        source=source,
        tasks=tasks,
        workers=workers,
        labels=np.zeros(n, dtype=np.int64),
        lines=lines,
        task_ids=np.array(list(task_codes), dtype=str),
        worker_ids=np.array(list(worker_codes), dtype=str),
        class_ids=np.zeros(1, dtype=np.int64),
        scores=scores,
        truth_source=None,
        truth_tasks=truth_tasks,
        truth_labels=truth_tasks,
        truth_lines=truth_tasks,
        duplicates=duplicates,
        on_drop=on_drop,
    )
    if truth_path is None:
        return data, None
    # identical repeats are fine; a task given two different means is not
    _, distinct = np.unique(np.stack([truth_tasks.astype(np.float64), means]), axis=1,
                            return_index=True)
    conflict = _truth_conflict(truth_tasks, distinct)
    if conflict is not None:
        first, again = conflict
        raise InputError(
            f"conflicting truth for task {str(data.task_ids[truth_tasks[again]])!r}: "
            f"{tcols['mean'][again]!r} here, {tcols['mean'][first]!r} at line "
            f"{int(tlines[first])}",
            source=truth_source,
            where=str(int(tlines[again])),
        )
    truth = np.full(data.n_tasks, np.nan)
    truth[truth_tasks] = means
    return data, truth
