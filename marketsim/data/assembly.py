"""From parsed columns to a :class:`LabelSet`: id coding, repeat and conflict checks.

Internal to :mod:`marketsim.data`; shared by the Zhang, CSV and score loaders.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from marketsim.data.labels import LabelSet
from marketsim.data.sources import HUMAN
from marketsim.errors import InputError

#: Most classes a label file may define. More almost always means a wrong column (ids read as
#: labels) or a stray huge value, and the (tasks x classes) tables would not fit in memory.
MAX_CLASSES = 1000

Truth = np.ndarray | None
#: What a loader does with a (task, worker) pair answered more than once: refuse the file
#: (naming the line), or keep the pair's first or last answer in file order.
DUPLICATES = ("error", "first", "last")
#: Called with the one-line note of how many repeated answers were dropped.
DropNote = Callable[[str], None]


def _codes(values: list[str], codes: dict[str, int]) -> np.ndarray:
    """Integer code of each id; ids not yet in ``codes`` are added, numbered in order of first
    appearance. The Python work is per distinct id; the per-value lookup runs in C (``map``)."""
    fresh = [v for v in dict.fromkeys(values) if v not in codes]
    codes.update(zip(fresh, range(len(codes), len(codes) + len(fresh)), strict=True))
    return np.fromiter(map(codes.__getitem__, values), np.int64, len(values))


def _too_many_classes(
    labels: list[str], lines: np.ndarray, truth_labels: list[str], truth_lines: np.ndarray,
    source: str, truth_source: str | None,
) -> None:
    """Raise InputError at the row holding the (MAX_CLASSES + 1)-th distinct class label."""
    seen: set[str] = set()
    for values, where, src in ((labels, lines, source), (truth_labels, truth_lines, truth_source)):
        for value, line in zip(values, where.tolist(), strict=True):
            seen.add(value)
            if len(seen) > MAX_CLASSES:
                raise InputError(
                    f"more than {MAX_CLASSES} distinct class labels (is the label column "
                    "really the class?)", source=src, where=str(line),
                )


def _truth_conflict(truth_tasks: np.ndarray, distinct: np.ndarray) -> tuple[int, int] | None:
    """Rows ``(first, again)`` of the first task given two different truths, in file order.

    ``distinct`` holds the first row of every distinct (task, truth) pair, so identical repeats
    of a truth line are already dropped; a task left twice has two different truths."""
    keep = np.sort(distinct)
    repeat = _first_repeat(truth_tasks[keep])
    return None if repeat is None else (int(keep[repeat[0]]), int(keep[repeat[1]]))


def _first_repeat(keys: np.ndarray) -> tuple[int, int] | None:
    """Positions ``(first, repeat)`` of the earliest repeated key, or None if keys are unique."""
    if keys.size < 2:
        return None
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    same = np.flatnonzero(sk[1:] == sk[:-1])
    if same.size == 0:
        return None
    later = order[same + 1]
    k = int(np.argmin(later))
    repeat = int(later[k])
    first = int(order[np.searchsorted(sk, keys[repeat], side="left")])
    return first, repeat


def check_duplicates(rule: str) -> None:
    """Raise InputError unless ``rule`` is one of :data:`DUPLICATES`."""
    if rule not in DUPLICATES:
        raise InputError(f"--duplicates {rule!r} is not one of: {', '.join(DUPLICATES)} "
                         "(error refuses a repeated (task, worker) pair; first or last keeps "
                         "one answer per pair)")


def kept_rows(keys: np.ndarray, rule: str) -> np.ndarray:
    """Rows (in file order) that keep one row per distinct key: its ``first`` or ``last``."""
    if rule == "first":
        _, at = np.unique(keys, return_index=True)
    else:
        _, back = np.unique(keys[::-1], return_index=True)
        at = keys.size - 1 - back
    return np.sort(at)


def _assemble(
    *,
    source: str,
    tasks: np.ndarray,
    workers: np.ndarray,
    labels: np.ndarray,
    lines: np.ndarray,
    task_ids: np.ndarray,
    worker_ids: np.ndarray,
    class_ids: np.ndarray,
    scores: np.ndarray | None,
    truth_source: str | None,
    truth_tasks: np.ndarray,
    truth_labels: np.ndarray,
    truth_lines: np.ndarray,
    duplicates: str = "error",
    on_drop: DropNote | None = None,
    confidence: np.ndarray | None = None,
    sources: tuple[str, ...] | None = None,
) -> tuple[LabelSet, Truth, np.ndarray | None]:
    """Check repeated (task, worker) pairs and conflicting truth; build the LabelSet and truth.

    A repeated pair is an error naming its line (``duplicates = "error"``), or all but its
    ``first``/``last`` answer are dropped and ``on_drop`` told how many; the third value is
    then the rows kept (to drop the same rows of a column read beside the labels), else None.
    A model's repeated answers (a worker whose ``sources`` entry is not human) are neither:
    they are kept, and the aggregation decides what they count for
    (:mod:`marketsim.aggregation.model_repeats`)."""
    check_duplicates(duplicates)
    n_tasks, n_workers = len(task_ids), len(worker_ids)
    keys = tasks * max(n_workers, 1) + workers
    if sources is not None:
        is_model = np.array([s != HUMAN for s in sources], dtype=bool)
        if is_model.any():  # a distinct negative key per model row: never a repeat
            model_rows = np.flatnonzero(is_model[workers])
            keys[model_rows] = -1 - np.arange(model_rows.size)
    repeat = _first_repeat(keys)
    kept = None
    if repeat is not None and duplicates != "error":
        kept = kept_rows(keys, duplicates)
        tasks, workers, labels = tasks[kept], workers[kept], labels[kept]
        scores = None if scores is None else scores[kept]
        confidence = None if confidence is None else confidence[kept]
        if on_drop is not None:
            dropped = keys.size - kept.size
            on_drop(f"{source}: dropped {dropped} repeated answer{'s' * (dropped != 1)} of a "
                    f"(task, worker) pair, keeping each pair's {duplicates} "
                    f"(--duplicates {duplicates})")
    elif repeat is not None:
        first, again = repeat
        raise InputError(
            f"task {str(task_ids[tasks[again]])!r} already labelled by worker "
            f"{str(worker_ids[workers[again]])!r} (first at line {int(lines[first])})",
            source=source,
            where=str(int(lines[again])),
        )
    data = LabelSet(
        tasks,
        workers,
        labels,
        n_tasks,
        n_workers,
        max(len(class_ids), 1),
        task_ids=task_ids,
        worker_ids=worker_ids,
        class_ids=class_ids,
        scores=scores,
        confidence=confidence,
        sources=sources,
    )
    if truth_source is None:
        return data, None, kept
    truth = np.full(n_tasks, -1, dtype=np.int64)
    # identical repeats are fine; a task given two different classes is not
    pairs = truth_tasks * len(class_ids) + truth_labels
    _, distinct = np.unique(pairs, return_index=True)
    conflict = _truth_conflict(truth_tasks, distinct)
    if conflict is not None:
        first, again = conflict
        raise InputError(
            f"conflicting truth for task {str(task_ids[truth_tasks[again]])!r}: "
            f"{str(class_ids[truth_labels[again]])!r} here, "
            f"{str(class_ids[truth_labels[first]])!r} at line {int(truth_lines[first])}",
            source=truth_source,
            where=str(int(truth_lines[again])),
        )
    truth[truth_tasks] = truth_labels
    return data, truth, kept
