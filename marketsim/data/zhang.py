"""The ``zhang`` format: whitespace-separated integers, one label a line.

``task worker label`` lines; truth files ``task label`` (the format of Zhang et al.'s code,
e.g. ``rte_crowd.txt``/``rte_truth.txt``).
"""

from __future__ import annotations

import os

import numpy as np

from marketsim.data.assembly import MAX_CLASSES, DropNote, Truth, _assemble
from marketsim.data.labels import LabelSet
from marketsim.data.parsing import _INT_RE, _read_text
from marketsim.errors import InputError


def _parse_int_table(
    text: str, ncols: int, source: str, names: str
) -> tuple[np.ndarray, np.ndarray]:
    """Parse whitespace-separated integer rows; return ``(values (n, ncols), line numbers)``:
    int64, or exact Python ints (an object array) when some value is beyond int64.

    Fast path: one ``str.split`` and one numpy conversion. Only when that fails are lines
    scanned one by one, to name the offending line.
    """
    lines = text.split("\n")
    nfields = np.fromiter(map(len, map(str.split, lines)), dtype=np.int64, count=len(lines))
    rows = np.flatnonzero(nfields)
    bad = nfields[rows] != ncols
    if bad.any():
        i = int(rows[np.argmax(bad)])
        raise InputError(
            f"expected {ncols} whitespace-separated fields ({names}), found {int(nfields[i])}",
            source=source,
            where=str(i + 1),
        )
    line_numbers = rows + 1
    if rows.size == 0:
        return np.zeros((0, ncols), dtype=np.int64), line_numbers
    try:
        values = np.array(text.split(), dtype=np.int64)
    except (ValueError, OverflowError):
        values = None
    if values is not None:
        return values.reshape(-1, ncols), line_numbers
    for i in rows.tolist():
        for token in lines[i].split():
            if not _INT_RE.fullmatch(token):
                raise InputError(
                    f"{token!r} is not an integer (fields: {names}, all integers)",
                    source=source,
                    where=str(i + 1),
                )
    # every token an integer, some beyond int64: exact Python ints (ids of any size)
    big = np.empty(int(nfields[rows].sum()), dtype=object)
    try:
        big[:] = [int(token) for token in text.split()]
    except ValueError:  # more digits than Python converts: refuse, naming the line
        for i in rows.tolist():
            for token in lines[i].split():
                try:
                    int(token)
                except ValueError:
                    raise InputError(f"integer of {len(token)} characters is too long "
                                     f"(fields: {names})", source=source,
                                     where=str(i + 1)) from None
        raise  # pragma: no cover
    return big.reshape(-1, ncols), line_numbers


def load_zhang(
    crowd_path: str | os.PathLike[str], truth_path: str | os.PathLike[str] | None = None,
    *, duplicates: str = "error", on_drop: DropNote | None = None,
) -> tuple[LabelSet, Truth]:
    """Load ``task worker label`` integer lines (and ``task label`` truth lines).

    Tasks are every task id seen in either file (sorted), workers every worker id (sorted).
    Classes are ``1..K`` with ``K`` the largest label value in either file when all values are
    >= 1, else the distinct values (e.g. 0/1 or -1/+1). Repeated identical truth lines are
    allowed (``dog_truth.txt`` repeats them); conflicting ones are an error. A repeated
    (task, worker) pair is an error unless ``duplicates`` keeps its ``first`` or ``last``.
    """
    source = str(crowd_path)
    crowd, crowd_lines = _parse_int_table(_read_text(crowd_path), 3, source, "task worker label")
    if crowd.shape[0] == 0:
        raise InputError("no labels (empty file)", source=source)
    truth_source = None if truth_path is None else str(truth_path)
    if truth_path is not None:
        truth, truth_lines = _parse_int_table(
            _read_text(truth_path), 2, str(truth_path), "task label"
        )
        if truth.shape[0] == 0:
            raise InputError("no truth lines (empty file)", source=truth_source)
    else:
        truth, truth_lines = np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)

    task_ids, task_idx = np.unique(
        np.concatenate([crowd[:, 0], truth[:, 0]]), return_inverse=True
    )
    worker_ids, worker_idx = np.unique(crowd[:, 1], return_inverse=True)
    values = np.concatenate([crowd[:, 2], truth[:, 1]])
    if values.min() >= 1 and values.max() > MAX_CLASSES:
        at = int(np.argmax(values))
        in_crowd = at < crowd.shape[0]
        raise InputError(
            f"label {int(values[at])} would mean {int(values[at])} classes (classes are 1..K "
            f"with K the largest label; at most {MAX_CLASSES})",
            source=source if in_crowd else truth_source,
            where=str(int(crowd_lines[at] if in_crowd else truth_lines[at - crowd.shape[0]])),
        )
    if values.min() >= 1:
        class_ids = np.arange(1, int(values.max()) + 1, dtype=np.int64)
        class_idx = values - 1
    else:
        class_ids, class_idx = np.unique(values, return_inverse=True)
    class_idx = np.asarray(class_idx, dtype=np.int64)  # small indices, also from Python ints
    n = crowd.shape[0]
    data, truth_classes, _ = _assemble(
        source=source,
        tasks=task_idx[:n],
        workers=worker_idx,
        labels=class_idx[:n],
        lines=crowd_lines,
        task_ids=task_ids,
        worker_ids=worker_ids,
        class_ids=class_ids,
        scores=None,
        truth_source=truth_source,
        truth_tasks=task_idx[n:],
        truth_labels=class_idx[n:],
        truth_lines=truth_lines,
        duplicates=duplicates,
        on_drop=on_drop,
    )
    return data, truth_classes
