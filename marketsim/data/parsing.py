"""Reading label files as text and headed CSV: the parsing steps every loader shares.

Internal to :mod:`marketsim.data`: the loaders (:mod:`~marketsim.data.zhang`,
:mod:`~marketsim.data.csv_labels`, :mod:`~marketsim.data.scores`,
:mod:`~marketsim.data.features`) build on these. Bad input raises
:class:`~marketsim.errors.InputError` naming the file and line.
"""

from __future__ import annotations

import csv
import gc
import io
import math
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path

import numpy as np

from marketsim.data.columns import ColumnMap, map_columns, sniff_delimiter
from marketsim.errors import InputError

_INT_RE = re.compile(r"[+-]?[0-9]+")


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


def _csv_records(text: str, source: str, delimiter: str = ",") -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line number, stripped fields)`` for each non-blank CSV record."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
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
    wanted: Mapping[str, tuple[str, ...]],
    optional: tuple[str, ...] | Mapping[str, tuple[str, ...]],
    source: str,
    line: int,
    by_position: bool = False,
) -> dict[str, int]:
    """Map each wanted column to its index in ``header`` (names are case-insensitive).

    ``by_position`` (two-column truth files such as ``q,truth``): when the header has exactly
    one column per wanted role and a role's name is not there, the roles found by name keep
    their columns and the others take the remaining ones in order."""
    names = [h.strip().lower() for h in header]
    found = ", ".join(repr(h) for h in header)
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name and name in seen:
            raise InputError(
                f"column {header[i]!r} appears twice in the header", source=source, where=str(line)
            )
        seen[name] = i
    missing = [key for key, aliases in wanted.items() if not any(a in seen for a in aliases)]
    if by_position and missing and len(names) == len(wanted):
        return _by_position(names, wanted)
    columns: dict[str, int] = {}
    if not isinstance(optional, dict):
        optional = {o: (o,) for o in optional}
    for key, aliases in {**wanted, **optional}.items():
        present = [a for a in aliases if a in seen]
        if len(present) > 1:
            raise InputError(
                f"columns {' and '.join(map(repr, present))} both give the {key}; keep one"
                + (" (or choose one with --columns time=COLUMN)" if key == "time" else ""),
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


def _by_position(names: list[str], wanted: Mapping[str, tuple[str, ...]]) -> dict[str, int]:
    """Each wanted role's column in a header of exactly one column per role: by name where
    one of its aliases is there, else the first column no role named."""
    named = {key: names.index(a) for key, aliases in wanted.items() for a in aliases
             if a in names}
    rest = iter(i for i in range(len(names)) if i not in named.values())
    return {key: named[key] if key in named else next(rest) for key in wanted}


def _read_records(
    path: str | os.PathLike[str], delimiter: str | None = None
) -> tuple[int, list[str], list[list[str]], np.ndarray]:
    """Header line, stripped header and the data records (raw fields) with their line numbers.

    Fast path (no quote character in the file, so one record per line): ``csv.reader`` runs
    over the whole text in C and line numbers are record positions. With quotes (a field may
    then span lines), or when the C reader fails, records are read one at a time to know each
    one's line. Records with no field at all (blank lines) are dropped here; records whose
    fields are all blank are dropped by :func:`_columns`. Fields are separated by
    ``delimiter``, or by the one :func:`sniff_delimiter` finds in the header line.
    """
    source = str(path)
    text = _read_text(path)
    if delimiter is None:
        delimiter = sniff_delimiter(text)
    rows: list[list[str]] | None = None
    if '"' not in text:
        try:
            rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
        except csv.Error:
            rows = None
    if rows is None:
        pairs = list(_csv_records(text, source, delimiter))
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
    wanted: Mapping[str, tuple[str, ...]],
    optional: tuple[str, ...] | Mapping[str, tuple[str, ...]],
    may_be_empty: frozenset[str] = frozenset({"score"}),
    *,
    delimiter: str | None = None,
    columns: ColumnMap | None = None,
    strict: bool = True,
    by_position: bool = False,
) -> tuple[dict[str, list[str]], np.ndarray]:
    """Read the wanted columns of a headed CSV file as stripped strings, with line numbers.

    ``columns`` maps roles to header names (see :func:`map_columns`; ``strict`` for the labels
    file, not for truth files); ``optional`` names columns read when present (a mapping:
    role -> its header aliases); ``by_position`` (class truth files) takes the columns by
    position when the header has exactly one column per role and a name is missing."""
    cols, lines, _ = _read_csv_named(path, wanted, optional, may_be_empty, delimiter=delimiter,
                                     columns=columns, strict=strict, by_position=by_position)
    return cols, lines


def _read_csv_named(
    path: str | os.PathLike[str],
    wanted: Mapping[str, tuple[str, ...]],
    optional: tuple[str, ...] | Mapping[str, tuple[str, ...]],
    may_be_empty: frozenset[str] = frozenset({"score"}),
    *,
    delimiter: str | None = None,
    columns: ColumnMap | None = None,
    strict: bool = True,
    by_position: bool = False,
) -> tuple[dict[str, list[str]], np.ndarray, dict[str, str]]:
    """:func:`_read_csv_table` and each role's header name as the file spells it (for
    messages naming the column)."""
    source = str(path)
    header_line, header, rows, lines = _read_records(path, delimiter)
    opt = optional if isinstance(optional, Mapping) else {o: (o,) for o in optional}
    if columns:
        wanted, opt = map_columns(wanted, opt, columns, header, source, header_line, strict)
    cols = _resolve_columns(header, wanted, opt, source, header_line,
                            by_position=by_position)
    out, lines = _columns(rows, lines, len(header), cols, may_be_empty, source)
    return out, lines, {key: header[idx] for key, idx in cols.items()}


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
