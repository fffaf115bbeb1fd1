"""Headed CSV files of class labels and truth.

A header row names the columns ``task,worker,label`` (or ``question,worker,answer``; any
order, extra columns ignored, optional ``score``, optional ``source`` and ``confidence``:
who gave each label, a human or a model, and the confidence a model stated,
:mod:`marketsim.data.sources`); truth ``task,label`` (or
``question,truth``; a two-column truth file whose header names its columns otherwise, such
as ``q,truth``, is read by position: task, then class). Ids and classes may be arbitrary
strings. :func:`load_csv_timed` also reads the ``time`` column (:mod:`marketsim.data.timestamps`)
that every other reader ignores.
"""

from __future__ import annotations

import os
from dataclasses import replace
from itertools import chain

import numpy as np

from marketsim.data.assembly import (
    MAX_CLASSES,
    DropNote,
    Truth,
    _assemble,
    _codes,
    _too_many_classes,
)
from marketsim.data.class_values import class_table
from marketsim.data.columns import ColumnMap
from marketsim.data.labels import LabelSet
from marketsim.data.parsing import _gc_paused, _parse_numbers, _read_csv_named, _read_csv_table
from marketsim.data.sources import CONFIDENCE_ALIASES, SOURCE_ALIASES, worker_sources
from marketsim.data.timestamps import TIME_ALIASES, Timestamps, parse_times
from marketsim.errors import InputError

_LABEL_COLUMNS = {"task": ("task", "question"), "worker": ("worker",), "label": ("label", "answer")}
_TRUTH_COLUMNS = {"task": ("task", "question"), "label": ("label", "truth", "answer")}


class ScoreFileError(InputError):
    """A labels file with a ``score`` column and no class label: a file of continuous scores.
    The command that read it says what reads such a file (``infer --scores``)."""


def load_csv(
    labels_path: str | os.PathLike[str],
    truth_path: str | os.PathLike[str] | None = None,
    *,
    delimiter: str | None = None,
    columns: ColumnMap | None = None,
    duplicates: str = "error",
    on_drop: DropNote | None = None,
) -> tuple[LabelSet, Truth]:
    """Load a headed CSV of labels (and truth); ids are strings coded in order of appearance.

    Class labels are read exactly (:mod:`~marketsim.data.class_values`): sorted numerically when
    all are numbers (``"1"`` and ``"1.0"`` are the same class, spelled as first written), else
    lexicographically; ``class_ids`` maps indices back, as the files spell them. A ``score``
    column, when present, becomes ``LabelSet.scores`` (empty cells are NaN), a source column
    ``LabelSet.sources`` (``human`` or a model's name, per worker; a model's repeated answers
    to a task are kept whatever ``duplicates`` says) and a confidence column
    ``LabelSet.confidence`` (in [0, 1]; empty cells are NaN). Fields are
    separated by ``delimiter`` (default: detected per file from its header line). ``columns``
    maps roles (task, worker, label, score, source, confidence) to the labels file's column
    names; in the truth file the mapped name is accepted beside the usual ones. A time column
    is ignored. A repeated (task, worker) pair is an error, or ``duplicates`` keeps its
    ``first`` or ``last`` answer (``on_drop`` is told how many were dropped; see
    :func:`~marketsim.data.assembly._assemble`).
    """
    data, truth, _ = _load(labels_path, truth_path, delimiter, columns, timed=False,
                           duplicates=duplicates, on_drop=on_drop)
    return data, truth


def load_csv_timed(
    labels_path: str | os.PathLike[str],
    truth_path: str | os.PathLike[str] | None = None,
    *,
    delimiter: str | None = None,
    columns: ColumnMap | None = None,
    duplicates: str = "error",
    on_drop: DropNote | None = None,
) -> tuple[LabelSet, Truth, Timestamps | None]:
    """:func:`load_csv` and each label's time (aligned with the label set's rows: the rows a
    ``duplicates`` rule drops are dropped from the times too) from the ``time`` column — a
    header named one of :data:`~marketsim.data.timestamps.TIME_ALIASES` or mapped with
    ``columns`` — or ``None`` when the file has none."""
    return _load(labels_path, truth_path, delimiter, columns, timed=True,
                 duplicates=duplicates, on_drop=on_drop)


@_gc_paused()
def _load(
    labels_path: str | os.PathLike[str],
    truth_path: str | os.PathLike[str] | None,
    delimiter: str | None,
    columns: ColumnMap | None,
    *,
    timed: bool,
    duplicates: str,
    on_drop: DropNote | None,
) -> tuple[LabelSet, Truth, Timestamps | None]:
    """The labels (and truth) and, when ``timed`` and the file has a time column, the times."""
    source = str(labels_path)
    try:
        optional = {"score": ("score",), "source": SOURCE_ALIASES,
                    "confidence": CONFIDENCE_ALIASES,
                    **({"time": TIME_ALIASES} if timed else {})}
        cols, lines, names = _read_csv_named(labels_path, _LABEL_COLUMNS, optional,
                                             frozenset(optional) - {"source"},
                                             delimiter=delimiter, columns=columns)
    except InputError as exc:
        if exc.detail.startswith("missing column 'label'") and "'score'" in exc.detail.lower():
            raise ScoreFileError(exc.detail, source=exc.source, where=exc.where) from None
        raise
    if not lines.size:
        raise InputError("no labels (only a header)", source=source)
    truth_source = None if truth_path is None else str(truth_path)
    if truth_path is not None:
        tcols, tlines = _read_csv_table(truth_path, _TRUTH_COLUMNS, (), delimiter=delimiter,
                                       columns=columns, strict=False, by_position=True)
        if not tlines.size:
            raise InputError("no truth rows (only a header)", source=truth_source)
    else:
        tcols, tlines = {"task": [], "label": []}, np.zeros(0, dtype=np.int64)

    task_codes: dict[str, int] = {}
    tasks = _codes(cols["task"], task_codes)
    truth_tasks = _codes(tcols["task"], task_codes)
    worker_codes: dict[str, int] = {}
    workers = _codes(cols["worker"], worker_codes)

    distinct = set(cols["label"]).union(tcols["label"])
    if len(distinct) > MAX_CLASSES:
        _too_many_classes(cols["label"], lines, tcols["label"], tlines, source, truth_source)
    class_index, class_ids = class_table(chain(cols["label"], tcols["label"]))
    labels = np.fromiter(map(class_index.__getitem__, cols["label"]), np.int64, len(lines))
    truth_labels = np.fromiter(map(class_index.__getitem__, tcols["label"]), np.int64,
                               len(tlines))

    scores = None
    if "score" in cols:
        scores = _parse_numbers(cols["score"], lines, source, "score", unit=False,
                                allow_empty=True)

    confidence = None
    if "confidence" in cols:
        confidence = _parse_numbers(cols["confidence"], lines, source,
                                    f"confidence (column {names['confidence']!r})", unit=True,
                                    allow_empty=True)
    sources = None
    if "source" in cols:
        sources = worker_sources(workers, np.array(list(worker_codes), dtype=str),
                                 cols["source"], lines, source, names["source"])
    times = None if "time" not in cols else parse_times(cols["time"], lines, source,
                                                        names["time"])
    data, truth, kept = _assemble(
        source=source,
        tasks=tasks,
        workers=workers,
        labels=labels,
        lines=lines,
        task_ids=np.array(list(task_codes), dtype=str),
        worker_ids=np.array(list(worker_codes), dtype=str),
        class_ids=class_ids,
        scores=scores,
        truth_source=truth_source,
        truth_tasks=truth_tasks,
        truth_labels=truth_labels,
        truth_lines=tlines,
        duplicates=duplicates,
        on_drop=on_drop,
        confidence=confidence,
        sources=sources,
    )
    if times is not None and kept is not None:
        times = replace(times, values=times.values[kept] - times.values[kept].min())
    return data, truth, times
