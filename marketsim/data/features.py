"""Binary task features: a headed CSV ``task,<feature>,...`` of 0/1 values."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from marketsim.data.assembly import _first_repeat
from marketsim.data.columns import ColumnMap, map_columns
from marketsim.data.parsing import _INT_RE, _columns, _gc_paused, _read_records, _resolve_columns
from marketsim.errors import InputError


@dataclass(frozen=True)
class FeatureTable:
    """Binary task features aligned with a label set's tasks.

    Attributes
    ----------
    values : (n_tasks, k) float array of 0/1, NaN for a missing feature (an empty cell, or
        every feature of a task without a row in the file).
    names : the k feature column names, in file order.
    has_row : (n_tasks,) bool, whether the file has a row for the task.
    """

    values: np.ndarray
    names: tuple[str, ...]
    has_row: np.ndarray


@_gc_paused()
def load_features(
    path: str | os.PathLike[str],
    task_ids: np.ndarray,
    *,
    delimiter: str | None = None,
    columns: ColumnMap | None = None,
) -> FeatureTable:
    """Load a headed CSV ``task,<feature>,...`` of 0/1 values for the tasks ``task_ids``.

    The ``task`` (or ``question``) column may be anywhere; every other column is a feature and
    needs a name. Cells are ``0`` or ``1`` (any number equal to them, e.g. ``1.0``), or empty
    for a missing feature. Task ids are matched to ``task_ids`` as text, or as integers when
    ``task_ids`` are integers (Zhang-format labels: ``007`` is task 7). A task id not in
    ``task_ids`` or a task given two rows is an error; tasks without a row get all features
    missing (``has_row`` is False), which the estimator skips like missing labels.
    ``delimiter`` as for :func:`~marketsim.data.csv_labels.load_csv`; a ``task`` name mapped by
    ``columns`` is accepted beside ``task``/``question``.
    """
    source = str(path)
    header_line, header, rows, lines = _read_records(path, delimiter)
    wanted: dict[str, tuple[str, ...]] = {"task": ("task", "question")}
    if columns:
        wanted, _ = map_columns(wanted, {}, columns, header, source, header_line, strict=False)
    cols = _resolve_columns(header, wanted, (), source, header_line)
    task_col = cols["task"]
    features = [i for i in range(len(header)) if i != task_col]
    if not features:
        raise InputError(
            "no feature columns (expected a header task,<feature>,<feature>...)",
            source=source, where=str(header_line),
        )
    for i in features:
        if not header[i]:
            raise InputError(
                f"feature column {i + 1} has no name in the header", source=source,
                where=str(header_line),
            )
    names = tuple(header[i] for i in features)
    fcols = {"task": task_col, **{f"feature {i}": i for i in features}}
    out, lines = _columns(rows, lines, len(header), fcols, frozenset(fcols) - {"task"}, source)
    if not lines.size:
        raise InputError("no feature rows (only a header)", source=source)

    ids = np.asarray(task_ids)
    integer_ids = ids.dtype.kind in "iu" or (  # zhang ids beyond int64 are Python ints
        ids.dtype == object and all(isinstance(t, int) for t in ids.tolist()))
    index = {str(t): i for i, t in enumerate(ids.tolist())}
    keys = out["task"]
    if integer_ids:
        keys = [str(int(k)) if _INT_RE.fullmatch(k) else k for k in keys]
    rows_task = np.fromiter((index.get(k, -1) for k in keys), np.int64, len(keys))
    unknown = np.flatnonzero(rows_task < 0)
    if unknown.size:
        k = int(unknown[0])
        raise InputError(
            f"task {out['task'][k]!r} is not in the labels file", source=source,
            where=str(int(lines[k])),
        )
    repeat = _first_repeat(rows_task)
    if repeat is not None:
        first, again = repeat
        raise InputError(
            f"task {out['task'][again]!r} already has a feature row (first at line "
            f"{int(lines[first])})", source=source, where=str(int(lines[again])),
        )

    cells = np.array([out[f"feature {i}"] for i in features], dtype=str).T.reshape(len(keys), -1)
    values = np.full(cells.shape, np.nan)
    values[cells == "0"] = 0.0
    values[cells == "1"] = 1.0
    other = (cells != "0") & (cells != "1") & (cells != "")
    if other.any():
        rest = cells[other].tolist()
        try:
            parsed = np.array(rest, dtype=np.float64).reshape(len(rest))
        except (ValueError, OverflowError):
            parsed = np.fromiter((_float_or_nan(v) for v in rest), np.float64, len(rest))
        bad = (parsed != 0.0) & (parsed != 1.0)
        if bad.any():
            r, c = (int(v[np.flatnonzero(bad)[0]]) for v in np.nonzero(other))
            raise InputError(
                f"feature {names[c]!r}: {str(cells[r, c])!r} is not 0 or 1 (leave the cell "
                "empty for a missing feature)", source=source, where=str(int(lines[r])),
            )
        values[other] = parsed
    full = np.full((len(ids), len(features)), np.nan)
    full[rows_task] = values
    has_row = np.zeros(len(ids), dtype=bool)
    has_row[rows_task] = True
    return FeatureTable(full, names, has_row)


def _float_or_nan(text: str) -> float:
    """``float(text)``, or NaN if the text is not a number (error path of a feature file)."""
    try:
        return float(text)
    except ValueError:
        return math.nan
