"""Read crowd labels (and optional ground truth) from files into a :class:`LabelSet`.

Two formats:

- ``zhang``: whitespace-separated integers, one label a line, ``task worker label``; truth files
  ``task label`` (the format of Zhang et al.'s code, e.g. ``rte_crowd.txt``/``rte_truth.txt``).
- ``csv``: a header row naming the columns ``task,worker,label`` (or ``question,worker,answer``;
  any order, extra columns ignored, optional ``score``); truth ``task,label`` (or
  ``question,truth``). Ids and classes may be arbitrary strings.

Every loader returns ``(labels, truth)`` where ``truth`` is ``None`` or an int array over the
label set's tasks holding the class index, or -1 where the truth is unknown. Bad files raise
:class:`~marketsim.errors.InputError` naming the file and line.
"""

from __future__ import annotations

import csv
import gc
import io
import math
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path

import numpy as np

from marketsim.data.labels import LabelSet
from marketsim.errors import InputError

#: Supported file formats, for ``--format``.
FORMATS = ("zhang", "csv")

#: Reference data sets of Zhang et al. (2014), read as ``NAME_crowd.txt`` / ``NAME_truth.txt``.
DATASETS = ("bluebird", "rte", "dog", "web")

#: Environment variable naming the folder of the reference data sets.
DATA_ENV = "MARKETSIM_DATA"

_LABEL_COLUMNS = {"task": ("task", "question"), "worker": ("worker",), "label": ("label", "answer")}
_TRUTH_COLUMNS = {"task": ("task", "question"), "label": ("label", "truth", "answer")}
_INT_RE = re.compile(r"[+-]?[0-9]+")

#: Most classes a label file may define. More almost always means a wrong column (ids read as
#: labels) or a stray huge value, and the (tasks x classes) tables would not fit in memory.
MAX_CLASSES = 1000
_INT64_MAX = 2**63 - 1

Truth = np.ndarray | None


# --------------------------------------------------------------------------------------------
# public helpers
# --------------------------------------------------------------------------------------------
def detect_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The format of ``path``: ``fmt`` if given, else ``csv`` for ``.csv`` files, else ``zhang``."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
        return fmt
    return "csv" if Path(path).suffix.lower() == ".csv" else "zhang"


def load_labels(
    labels_path: str | os.PathLike[str],
    truth_path: str | os.PathLike[str] | None = None,
    fmt: str | None = None,
) -> tuple[LabelSet, Truth]:
    """Load labels (and truth) in ``fmt``, auto-detected from the labels file's extension."""
    kind = detect_format(labels_path, fmt)
    loader = load_csv if kind == "csv" else load_zhang
    return loader(labels_path, truth_path)


def dataset_paths(
    name: str, data_dir: str | os.PathLike[str] | None = None
) -> tuple[Path, Path]:
    """Crowd and truth files of the reference data set ``name`` (bluebird, rte, dog, web).

    The folder is ``data_dir`` or the ``MARKETSIM_DATA`` environment variable; it may hold the
    files directly or in a ``zhang2014/`` subfolder.
    """
    if name not in DATASETS:
        raise InputError(f"unknown dataset {name!r}; choose one of: {', '.join(DATASETS)}")
    folder = data_dir if data_dir is not None else os.environ.get(DATA_ENV) or None
    if folder is None:
        raise InputError(
            f"no data folder for dataset {name!r}: pass --data-dir DIR or set {DATA_ENV} "
            "to the folder holding NAME_crowd.txt and NAME_truth.txt"
        )
    base = Path(folder)
    if not base.is_dir():
        raise InputError(
            f"data folder {str(base)!r} does not exist: pass --data-dir DIR or set {DATA_ENV}"
        )
    for candidate in (base, base / "zhang2014"):
        crowd = candidate / f"{name}_crowd.txt"
        truth = candidate / f"{name}_truth.txt"
        if crowd.is_file():
            if not truth.is_file():
                raise InputError(f"{truth.name} not found beside {crowd}", source=str(candidate))
            return crowd, truth
    raise InputError(
        f"{name}_crowd.txt not found in {str(base)!r} (nor in its zhang2014/ subfolder): "
        f"pass --data-dir DIR or set {DATA_ENV}"
    )


# --------------------------------------------------------------------------------------------
# reading text
# --------------------------------------------------------------------------------------------
def _read_text(path: str | os.PathLike[str]) -> str:
    """The file's text as UTF-8 (a leading BOM removed); InputError if unreadable."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", source=source) from None
    except IsADirectoryError:
        raise InputError("is a folder, expected a file", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror or exc})", source=source) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as UTF-8",
            source=source,
            where=str(line),
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


# --------------------------------------------------------------------------------------------
# zhang format
# --------------------------------------------------------------------------------------------
def _parse_int_table(
    text: str, ncols: int, source: str, names: str
) -> tuple[np.ndarray, np.ndarray]:
    """Parse whitespace-separated integer rows; return ``(values (n, ncols), line numbers)``.

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
            if not _INT_RE.fullmatch(token) or abs(int(token)) > _INT64_MAX:
                raise InputError(
                    f"{token!r} is not an integer (fields: {names}, all integers)",
                    source=source,
                    where=str(i + 1),
                )
    raise InputError(f"cannot read integers (fields: {names})", source=source)  # pragma: no cover


def load_zhang(
    crowd_path: str | os.PathLike[str], truth_path: str | os.PathLike[str] | None = None
) -> tuple[LabelSet, Truth]:
    """Load ``task worker label`` integer lines (and ``task label`` truth lines).

    Tasks are every task id seen in either file (sorted), workers every worker id (sorted).
    Classes are ``1..K`` with ``K`` the largest label value in either file when all values are
    >= 1, else the distinct values (e.g. 0/1 or -1/+1). Repeated identical truth lines are
    allowed (``dog_truth.txt`` repeats them); conflicting ones are an error.
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
    n = crowd.shape[0]
    return _assemble(
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
    )


# --------------------------------------------------------------------------------------------
# csv format
# --------------------------------------------------------------------------------------------
@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of small lists and strings are made.

    CSV records are acyclic, yet each allocation counts towards a collection: with the
    collector running, a 1M-row file takes about three times as long to read.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _csv_records(text: str, source: str) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line number, stripped fields)`` for each non-blank CSV record."""
    reader = csv.reader(io.StringIO(text, newline=""))
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            where = str(reader.line_num)
            raise InputError(f"bad CSV ({exc})", source=source, where=where) from None
        fields = [f.strip() for f in row]
        if any(fields):
            yield reader.line_num, fields


def _resolve_columns(
    header: list[str],
    wanted: dict[str, tuple[str, ...]],
    optional: tuple[str, ...],
    source: str,
    line: int,
) -> dict[str, int]:
    """Map each wanted column to its index in ``header`` (names are case-insensitive)."""
    names = [h.strip().lower() for h in header]
    found = ", ".join(repr(h) for h in header)
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name and name in seen:
            raise InputError(
                f"column {header[i]!r} appears twice in the header", source=source, where=str(line)
            )
        seen[name] = i
    columns: dict[str, int] = {}
    for key, aliases in {**wanted, **{o: (o,) for o in optional}}.items():
        present = [a for a in aliases if a in seen]
        if len(present) > 1:
            raise InputError(
                f"columns {' and '.join(map(repr, present))} both give the {key}; keep one",
                source=source,
                where=str(line),
            )
        if present:
            columns[key] = seen[present[0]]
        elif key in wanted:
            allowed = " or ".join(repr(a) for a in aliases)
            raise InputError(
                f"missing column {allowed}; found columns {found} "
                f"(needed: {', '.join('/'.join(a) for a in wanted.values())})",
                source=source,
                where=str(line),
            )
    return columns


def _class_value(text: str) -> int | float | None:
    """The number a class label spells (int when integral), or None if not numeric."""
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return int(value) if value.is_integer() else value


def _read_records(
    path: str | os.PathLike[str],
) -> tuple[int, list[str], list[list[str]], np.ndarray]:
    """Header line, stripped header and the data records (raw fields) with their line numbers.

    Fast path (no quote character in the file, so one record per line): ``csv.reader`` runs
    over the whole text in C and line numbers are record positions. With quotes (a field may
    then span lines), or when the C reader fails, records are read one at a time to know each
    one's line. Records with no field at all (blank lines) are dropped here; records whose
    fields are all blank are dropped by :func:`_columns`.
    """
    source = str(path)
    text = _read_text(path)
    rows: list[list[str]] | None = None
    if '"' not in text:
        try:
            rows = list(csv.reader(io.StringIO(text, newline="")))
        except csv.Error:
            rows = None
    if rows is None:
        pairs = list(_csv_records(text, source))
        lines = np.fromiter((ln for ln, _ in pairs), np.int64, len(pairs))
        rows = [r for _, r in pairs]
    else:
        nonempty = np.fromiter(map(len, rows), np.int64, len(rows)) > 0
        lines = np.flatnonzero(nonempty) + 1
        if not nonempty.all():
            rows = [r for r in rows if r]
    first = 0
    while first < len(rows) and not any(f.strip() for f in rows[first]):
        first += 1
    if first == len(rows):
        raise InputError("empty file (expected a header row)", source=source)
    header = [f.strip() for f in rows[first]]
    return int(lines[first]), header, rows[first + 1:], lines[first + 1:]


def _columns(
    rows: list[list[str]],
    lines: np.ndarray,
    width: int,
    cols: dict[str, int],
    may_be_empty: frozenset[str] | set[str],
    source: str,
) -> tuple[dict[str, list[str]], np.ndarray]:
    """The stripped fields of columns ``cols`` (name -> index), with the rows' line numbers.

    Blank records (every field empty) are skipped. The first record, in file order, with a
    field count other than ``width`` or an empty value in a column not in ``may_be_empty``
    raises InputError naming its line. Per-record Python work is limited to list
    comprehensions; exceptional records are examined one by one.
    """
    def blank(k: int) -> bool:
        return not any(f.strip() for f in rows[k])

    n = len(rows)
    lens = np.fromiter(map(len, rows), np.int64, n)
    skip: list[int] = []
    width_error = n
    for k in np.flatnonzero(lens != width).tolist():
        if blank(k):
            skip.append(k)
        else:
            width_error = k
            break
    if skip:
        drop = np.zeros(n, dtype=bool)
        drop[skip] = True
        rows = [r for r, d in zip(rows, drop.tolist(), strict=True) if not d]
        lines = lines[~drop]
        width_error -= int(np.count_nonzero(np.asarray(skip) < width_error))
        n = len(rows)
    good = rows[:width_error]
    out = {key: list(map(str.strip, map(itemgetter(idx), good))) for key, idx in cols.items()}
    required = [key for key in cols if key not in may_be_empty]
    skip = []
    start = 0
    while True:  # first empty required value (at or after ``start``), in file order
        at = width_error
        for key in required:
            try:
                at = min(at, out[key].index("", start, at))
            except ValueError:
                pass
        if at == width_error:
            break
        if not blank(at):
            key = next(k for k in required if out[k][at] == "")
            raise InputError(f"empty {key} value", source=source, where=str(int(lines[at])))
        skip.append(at)
        start = at + 1
    if width_error < n:
        raise InputError(
            f"expected {width} fields as in the header, found {len(rows[width_error])}",
            source=source,
            where=str(int(lines[width_error])),
        )
    if skip:
        keep = np.ones(n, dtype=bool)
        keep[skip] = False
        mask = keep.tolist()
        out = {key: [v for v, m in zip(col, mask, strict=True) if m] for key, col in out.items()}
        lines = lines[keep]
    return out, lines


def _read_csv_table(
    path: str | os.PathLike[str],
    wanted: dict[str, tuple[str, ...]],
    optional: tuple[str, ...],
    may_be_empty: frozenset[str] = frozenset({"score"}),
) -> tuple[dict[str, list[str]], np.ndarray]:
    """Read the wanted columns of a headed CSV file as stripped strings, with line numbers."""
    source = str(path)
    header_line, header, rows, lines = _read_records(path)
    cols = _resolve_columns(header, wanted, optional, source, header_line)
    return _columns(rows, lines, len(header), cols, may_be_empty, source)


def _parse_numbers(
    values: list[str],
    lines: np.ndarray,
    source: str,
    what: str,
    *,
    unit: bool,
    allow_empty: bool,
) -> np.ndarray:
    """Vectorised ``float`` of ``values`` (empty -> NaN when ``allow_empty``).

    With ``unit``, every non-empty value must be a finite number in [0, 1] (the text ``nan``
    is rejected: only an empty cell means missing). The first bad value raises InputError
    naming its line; the per-value scan runs only to find it.
    """
    n = len(values)
    empty = np.zeros(n, dtype=bool)
    if "" in values:
        empty = np.fromiter((v == "" for v in values), bool, n)
        values = ["nan" if e else v for v, e in zip(values, empty.tolist(), strict=True)]
    try:
        arr = np.array(values, dtype=np.float64).reshape(n)
        parsed = True
    except (ValueError, OverflowError):
        arr = np.full(n, np.nan)
        parsed = False
    if parsed:
        ok = ~empty
        if unit:
            with np.errstate(invalid="ignore"):
                ok &= (arr >= 0.0) & (arr <= 1.0)
        if allow_empty:
            ok |= empty
        if ok.all():
            return arr
    for k in range(n):  # error path only: the first bad value, in file order
        if empty[k]:
            if allow_empty:
                continue
            raise InputError(f"empty {what} value", source=source, where=str(int(lines[k])))
        try:
            x = float(values[k])
        except ValueError:
            x = math.nan
            if not unit:
                raise InputError(
                    f"{what} {values[k]!r} is not a number", source=source,
                    where=str(int(lines[k])),
                ) from None
        if unit and not 0.0 <= x <= 1.0:
            hint = " (leave the cell empty for a missing score)" if allow_empty else ""
            raise InputError(
                f"{what} {values[k]!r} is not a number in [0, 1]{hint}",
                source=source, where=str(int(lines[k])),
            )
    raise InputError(f"cannot read the {what} values", source=source)  # pragma: no cover


def _codes(values: list[str], codes: dict[str, int]) -> np.ndarray:
    """Integer code of each id; ids not yet in ``codes`` are added, numbered in order of first
    appearance. The Python work is per distinct id; the per-value lookup runs in C (``map``)."""
    fresh = [v for v in dict.fromkeys(values) if v not in codes]
    codes.update(zip(fresh, range(len(codes), len(codes) + len(fresh)), strict=True))
    return np.fromiter(map(codes.__getitem__, values), np.int64, len(values))


@_gc_paused()
def load_csv(
    labels_path: str | os.PathLike[str], truth_path: str | os.PathLike[str] | None = None
) -> tuple[LabelSet, Truth]:
    """Load a headed CSV of labels (and truth); ids are strings coded in order of appearance.

    Class labels are sorted numerically when all are numbers (``"1"`` and ``"1.0"`` are the same
    class), else lexicographically; ``class_ids`` maps indices back. A ``score`` column, when
    present, becomes ``LabelSet.scores`` (empty cells are NaN).
    """
    source = str(labels_path)
    try:
        cols, lines = _read_csv_table(labels_path, _LABEL_COLUMNS, ("score",))
    except InputError as exc:
        if exc.detail.startswith("missing column 'label'") and "'score'" in exc.detail.lower():
            raise InputError(f"{exc.detail}; a file of continuous scores needs --scores",
                             source=exc.source, where=exc.where) from None
        raise
    if not lines.size:
        raise InputError("no labels (only a header)", source=source)
    truth_source = None if truth_path is None else str(truth_path)
    if truth_path is not None:
        tcols, tlines = _read_csv_table(truth_path, _TRUTH_COLUMNS, ())
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
    numeric = {s: _class_value(s) for s in distinct}
    if all(v is not None for v in numeric.values()):
        ordered = sorted(set(numeric.values()))  # type: ignore[type-var]
        position = {v: i for i, v in enumerate(ordered)}
        class_index = {s: position[v] for s, v in numeric.items()}
        is_int = all(isinstance(v, int) for v in ordered)
        class_ids = np.array(ordered, dtype=np.int64 if is_int else np.float64)
    else:
        ordered_s = sorted(distinct)
        class_index = {s: i for i, s in enumerate(ordered_s)}
        class_ids = np.array(ordered_s, dtype=str)
    labels = np.fromiter(map(class_index.__getitem__, cols["label"]), np.int64, len(lines))
    truth_labels = np.fromiter(map(class_index.__getitem__, tcols["label"]), np.int64,
                               len(tlines))

    scores = None
    if "score" in cols:
        scores = _parse_numbers(cols["score"], lines, source, "score", unit=False,
                                allow_empty=True)

    return _assemble(
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
    )


# --------------------------------------------------------------------------------------------
# continuous scores
# --------------------------------------------------------------------------------------------
_SCORE_COLUMNS = {"task": ("task", "question"), "worker": ("worker",), "score": ("score",)}
_MEAN_COLUMNS = {"task": ("task", "question"), "mean": ("mean", "value")}




@_gc_paused()
def load_scores(
    labels_path: str | os.PathLike[str], truth_path: str | os.PathLike[str] | None = None
) -> tuple[LabelSet, np.ndarray | None]:
    """Load a headed CSV of continuous scores in [0, 1] (and true task means).

    Columns (case-insensitive, any order): ``task`` or ``question``, ``worker``, ``score``.
    A ``label``/``answer`` column, as in the ``task,worker,label,score`` layout, is ignored,
    like any other column. An empty score cell is a missing score: the row still claims its
    (task, worker) pair but adds no evidence. Truth files hold ``task`` and ``mean`` (or
    ``value``), finite numbers in [0, 1]; identical repeated truth rows are allowed.

    Returns the scores as a :class:`LabelSet` (``scores`` set, every label 0, one class) and
    the true mean per task (NaN where unknown) or None. A truth row for a task without
    scores adds that task (its estimate is then missing).
    """
    source = str(labels_path)
    cols, lines = _read_csv_table(labels_path, _SCORE_COLUMNS, (), frozenset({"score"}))
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
        tcols, tlines = _read_csv_table(truth_path, _MEAN_COLUMNS, (), frozenset())
        if not tlines.size:
            raise InputError("no truth rows (only a header)", source=truth_source)
        means = _parse_numbers(tcols["mean"], tlines, str(truth_path), "mean", unit=True,
                               allow_empty=False)
        truth_tasks = _codes(tcols["task"], task_codes)
    n = tasks.size
    data, _ = _assemble(
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


# --------------------------------------------------------------------------------------------
# binary task features
# --------------------------------------------------------------------------------------------
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
def load_features(path: str | os.PathLike[str], task_ids: np.ndarray) -> FeatureTable:
    """Load a headed CSV ``task,<feature>,...`` of 0/1 values for the tasks ``task_ids``.

    The ``task`` (or ``question``) column may be anywhere; every other column is a feature and
    needs a name. Cells are ``0`` or ``1`` (any number equal to them, e.g. ``1.0``), or empty
    for a missing feature. Task ids are matched to ``task_ids`` as text, or as integers when
    ``task_ids`` are integers (Zhang-format labels: ``007`` is task 7). A task id not in
    ``task_ids`` or a task given two rows is an error; tasks without a row get all features
    missing (``has_row`` is False), which the estimator skips like missing labels.
    """
    source = str(path)
    header_line, header, rows, lines = _read_records(path)
    cols = _resolve_columns(header, {"task": ("task", "question")}, (), source, header_line)
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
    integer_ids = ids.dtype.kind in "iu"
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


# --------------------------------------------------------------------------------------------
# shared checks and assembly
# --------------------------------------------------------------------------------------------
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
) -> tuple[LabelSet, Truth]:
    """Check repeated (task, worker) pairs and conflicting truth; build the LabelSet and truth."""
    n_tasks, n_workers = len(task_ids), len(worker_ids)
    repeat = _first_repeat(tasks * max(n_workers, 1) + workers)
    if repeat is not None:
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
    )
    if truth_source is None:
        return data, None
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
    return data, truth
