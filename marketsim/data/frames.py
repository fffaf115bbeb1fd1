"""Labels with arbitrary ids: encoding to integer codes, and the optional pandas boundary.

Estimators only see integer codes (:class:`~marketsim.data.labels.LabelSet`). This module turns
``(task, worker, label)`` values of any hashable type into codes and back:

- tasks and workers are numbered in order of first appearance (no ordering needed, so ids of
  mixed types work);
- classes are numbered in sorted order of their values when the values can be sorted (so
  ``"no" < "yes"``, ``1 < 2 < 3``), else in order of first appearance.

pandas is optional: it is imported only when a DataFrame is converted (:func:`frame_columns`)
or a result is built as a Series or DataFrame; without it those calls raise one
:class:`ImportError` line saying how to install it. Records (plain iterables) need no pandas.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from marketsim.data.sources import worker_sources
from marketsim.errors import InputError

PANDAS_HINT = 'the DataFrame API needs pandas: pip install "marketsim[pandas]"'


def pandas() -> Any:
    """The pandas module, or an ImportError saying how to install it.

    Imported here, lazily, because pandas is an optional third-party dependency (the
    ``marketsim[pandas]`` extra): the LabelSet and records paths must work without it.
    """
    try:
        import pandas as pd  # optional dependency: imported only here, see docstring
    except ImportError:
        raise ImportError(PANDAS_HINT) from None
    return pd


def as_object_column(values: Iterable[Any]) -> np.ndarray:
    """A 1-d array of the values; tuples and other sequences stay single elements. Integers
    become int64 when they all fit, else stay Python ints (never floats: exact at any size)."""
    items = list(values)
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    kinds = {type(v) for v in items}
    if kinds and all(issubclass(t, (int, np.integer)) and not issubclass(t, bool)
                     for t in kinds):
        try:
            return arr.astype(np.int64)
        except OverflowError:  # beyond int64: Python ints, exact at any size
            return arr
    if kinds and all(issubclass(t, (float, np.floating)) for t in kinds):
        return arr.astype(np.float64)
    if kinds and all(issubclass(t, str) for t in kinds):
        return arr.astype(str)
    return arr


def is_missing(value: Any) -> bool:
    """``None`` or a float NaN (also pandas' missing markers, which are float NaN or NA-like)."""
    if value is None:
        return True
    if isinstance(value, float | np.floating):
        return math.isnan(value)
    return type(value).__name__ in {"NAType", "NaTType"}


def encode(values: np.ndarray, *, sort: bool) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and the distinct values they index: ``uniques[codes] == values``.

    ``sort=True`` numbers values in sorted order when they can be compared, else (and when
    ``sort=False``) in order of first appearance.
    """
    try:
        uniques, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    except TypeError:  # values of types that cannot be ordered: number them by hashing
        table: dict[Any, int] = {}
        codes = np.fromiter(
            (table.setdefault(v, len(table)) for v in values.tolist()),
            dtype=np.int64, count=values.shape[0],
        )
        return codes, as_object_column(table)
    inverse = inverse.reshape(-1).astype(np.int64)
    if sort:
        return inverse, uniques
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse].astype(np.int64), uniques[order]


def check_no_missing(columns: dict[str, np.ndarray]) -> None:
    """A ValueError naming the column and row of the first missing value, if any."""
    for name, col in columns.items():
        if col.dtype != object and not np.issubdtype(col.dtype, np.floating):
            continue
        for row, value in enumerate(col.tolist()):
            if is_missing(value):
                raise ValueError(f"column {name!r} has a missing value at row {row}")


def frame_columns(
    frame: Any, task: str, worker: str, label: str, *, source: str | None = None,
    confidence: str | None = None,
) -> dict[str, np.ndarray]:
    """The task, worker and label columns of a pandas DataFrame (and its source and
    confidence columns when named), as 1-d arrays by role."""
    pd = pandas()
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame or a LabelSet, got {type(frame).__name__}")
    given = {"task": task, "worker": worker, "label": label, "source": source,
             "confidence": confidence}
    roles = {role: name for role, name in given.items() if name is not None}
    missing = [c for c in roles.values() if c not in frame.columns]
    if missing:
        raise ValueError(
            f"DataFrame has no column {missing[0]!r}; it has {', '.join(map(str, frame.columns))}"
            " (name the columns with task=, worker=, label=, source=, confidence=)"
        )
    for role, name in roles.items():
        twice = int(np.count_nonzero(np.asarray(frame.columns == name)))
        if twice > 1:
            raise ValueError(f"DataFrame has {twice} columns named {name!r} (the {role} "
                             "column): keep one, or rename them and name the columns with "
                             "task=, worker=, label=")
        other = next((r for r, n in roles.items() if r != role and n == name), None)
        if other is not None:
            raise ValueError(f"{role}= and {other}= both name column {name!r}; give each "
                             "role its own column")
    out = {}
    for role, name in roles.items():
        col = frame[name].to_numpy()
        out[role] = col if col.dtype != object else as_object_column(col.tolist())
    return out


def machine_values(
    workers: np.ndarray, worker_ids: np.ndarray, source: np.ndarray | None,
    confidence: np.ndarray | None, names: dict[str, str],
) -> tuple[np.ndarray | None, tuple[str, ...] | None]:
    """A mixed crowd's ``confidence`` (per label, NaN where missing) and per-worker
    ``sources`` from per-label values (records' or a DataFrame's columns; ``workers`` the
    labels' worker codes); ``None`` for what is not given. ValueError naming the column and
    row when a source is missing or one worker has two sources."""
    if confidence is not None:
        try:
            confidence = np.asarray(confidence, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"column {names['confidence']!r}: confidence must be a number in "
                             "[0, 1] or missing") from None
    if source is None:
        return confidence, None
    check_no_missing({names["source"]: source})
    cells = [str(v) for v in source.tolist()]
    try:
        sources = worker_sources(workers, worker_ids, cells, np.arange(len(cells)), "",
                                 names["source"], line="row")
    except InputError as error:
        raise ValueError(f"row {error.where}: {error.detail}") from None
    return confidence, sources


def labels_series(task_ids: np.ndarray, values: np.ndarray) -> Any:
    """crowd-kit's result shape: a Series ``agg_label`` indexed by the task ids (``task``)."""
    pd = pandas()
    return pd.Series(values, index=pd.Index(task_ids, name="task"), name="agg_label")


def proba_frame(task_ids: np.ndarray, class_values: np.ndarray, proba: np.ndarray) -> Any:
    """Posteriors as a DataFrame: rows are task ids (``task``), columns the label values."""
    pd = pandas()
    return pd.DataFrame(
        proba, index=pd.Index(task_ids, name="task"), columns=pd.Index(class_values, name="label")
    )


def coded(columns: dict[str, np.ndarray], names: dict[str, str]) -> dict[str, Any]:
    """Per-label values by role (``task``, ``worker``, ``label``, optionally ``source`` and
    ``confidence``; ``names`` their columns' names in errors) as a LabelSet's arguments:
    codes, sizes, id maps, ``confidence`` and ``sources``."""
    check_no_missing({names[r]: columns[r] for r in ("task", "worker", "label")})
    t, task_ids = encode(columns["task"], sort=False)
    w, worker_ids = encode(columns["worker"], sort=False)
    c, class_values = encode(columns["label"], sort=True)
    confidence, sources = machine_values(w, worker_ids, columns.get("source"),
                                         columns.get("confidence"), names)
    return {"tasks": t, "workers": w, "labels": c, "n_tasks": task_ids.shape[0],
            "n_workers": worker_ids.shape[0], "n_classes": max(class_values.shape[0], 1),
            "task_ids": task_ids, "worker_ids": worker_ids,
            "class_ids": class_values if class_values.size else None,
            "confidence": confidence, "sources": sources}
