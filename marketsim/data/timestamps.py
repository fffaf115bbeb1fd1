"""When each label was given: the ``time`` column of a headed labels file.

Only ``marketsim calibrate`` reads it (to fit the crowd's arrival process); ``infer`` and every
other reader ignore it like any extra column, and it never enters a
:class:`~marketsim.data.labels.LabelSet` (a label set is what inference reads; the times are
the collection's, returned beside it). The rule for the values:

* every value a number (``12``, ``3.5``, ``1.7e9``) → numbers in the file's own unit, which
  then is the unit of simulated time;
* else every value an ISO-8601 date or date-time (``2024-05-01``, ``2024-05-01T13:45:07``,
  ``2024-05-01 13:45:07.25+02:00``, ``…Z``) → hours. All with a zone (compared in UTC) or all
  without (one clock, read as given: no daylight-saving correction); a mix is an error.

Numbers and date-times in one column, an empty, NaN or infinite value, or a value that is
neither raise InputError naming the file, line and column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from marketsim.errors import InputError

#: Header names read as the time column (case-insensitive; ``--columns time=COL`` names others).
TIME_ALIASES = ("time", "timestamp", "datetime", "submitted_at", "submitted", "submit_time",
                "created", "created_at", "created_time")
#: Seconds in the unit date-times are expressed in (hours: a crowd's labels come over hours to
#: weeks, so rates and times to a target read as plain numbers).
DATETIME_UNIT_SECONDS = 3600.0
DATETIME_UNIT = "hour"
#: The unit of numeric times: whatever the file counts in (named by the column).
NUMBER_UNIT = "unit"


@dataclass(frozen=True)
class Timestamps:
    """Each label's time, in file order (aligned with the label set's rows), measured from the
    earliest label in :attr:`unit`."""

    values: np.ndarray
    #: The header name of the column the times were read from.
    column: str
    #: ``"numbers"`` or ``"date-times"``.
    kind: str
    #: The unit of :attr:`values`: ``"hour"`` for date-times, ``"unit"`` (the column's own) for
    #: numbers.
    unit: str


def _bad(detail: str, source: str, line: int, column: str) -> InputError:
    return InputError(f"column {column!r}: {detail}", source=source, where=str(line))


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _date_time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _numbers(values: list[str], lines: np.ndarray, source: str, column: str) -> np.ndarray:
    """The values as finite floats; the first other value raises InputError at its line."""
    try:
        arr = np.array(values, dtype=np.float64).reshape(len(values))
    except (ValueError, OverflowError):
        arr = None
    if arr is not None and np.isfinite(arr).all():
        return arr
    for k, text in enumerate(values):  # error path only: the first bad value, in file order
        x = _number(text)
        if x is None:
            other = "an ISO-8601 date-time" if _date_time(text) else "neither a number nor " \
                "an ISO-8601 date-time"
            raise _bad(f"time {text!r} is {other}, but the first time is a number (a time "
                       "column holds numbers or date-times, not both)", source,
                       int(lines[k]), column)
        if not math.isfinite(x):
            raise _bad(f"time {text!r} is not a finite number", source, int(lines[k]), column)
    raise InputError(f"cannot read the times of column {column!r}",  # pragma: no cover
                     source=source)


def _date_times(values: list[str], lines: np.ndarray, source: str, column: str) -> np.ndarray:
    """The values as seconds since 1970 (UTC for zoned values, the file's clock otherwise)."""
    parsed = list(map(_date_time, values))
    zoned = parsed[0] is not None and parsed[0].tzinfo is not None
    for k, d in enumerate(parsed):
        if d is None or (d.tzinfo is not None) != zoned:
            text = values[k]
            if d is not None:
                which = "has a time zone" if d.tzinfo is not None else "has no time zone"
                first = "the first does not" if d.tzinfo is not None else "the first has one"
                raise _bad(f"time {text!r} {which} but {first} (give every time with a zone, "
                           "or none)", source, int(lines[k]), column)
            kind = "a number" if _number(text) is not None else "not a number"
            raise _bad(f"time {text!r} is {kind}, not an ISO-8601 date-time like the first "
                       "(e.g. 2024-05-01T13:45:07Z); a time column holds numbers or "
                       "date-times, not both", source, int(lines[k]), column)
    if zoned:
        return np.array([d.timestamp() for d in parsed if d is not None])
    return np.array([d.replace(tzinfo=UTC).timestamp() for d in parsed if d is not None])


def parse_times(values: list[str], lines: np.ndarray, source: str, column: str) -> Timestamps:
    """The ``time`` column's values (stripped strings) as :class:`Timestamps`; ``lines`` are
    their line numbers, for errors."""
    if not values:
        raise InputError(f"column {column!r}: no times", source=source)
    if "" in values:
        k = values.index("")
        raise _bad("empty time (every label needs its time)", source, int(lines[k]), column)
    first = values[0]
    if _number(first) is not None:
        raw, kind, unit = _numbers(values, lines, source, column), "numbers", NUMBER_UNIT
    elif _date_time(first) is not None:
        raw = _date_times(values, lines, source, column) / DATETIME_UNIT_SECONDS
        kind, unit = "date-times", DATETIME_UNIT
    else:
        raise _bad(f"time {first!r} is neither a number nor an ISO-8601 date-time (e.g. "
                   "2024-05-01T13:45:07Z)", source, int(lines[0]), column)
    return Timestamps(raw - raw.min(), column, kind, unit)
