"""Text formatting shared by the terminal dashboard, the progress lines, ``report.md`` and
``sweep.md``: numbers, durations, safe names and Markdown tables, so every output prints a
value the same way."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from marketsim.record.metric import RMSE

#: What every output prints for an unknown value.
DASH = "—"


def clean_name(name: str) -> str:
    """``name`` with control characters replaced by their escapes (nothing can garble a line)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(name))


#: Characters that can begin Markdown markup inside a line (CommonMark and GitHub's: emphasis,
#: code, links and images, raw HTML, entities, table cells, strikethrough, math, headings).
#: An ``_`` between two letters or digits never is (``adaptive_prior`` stays as written).
_MARKUP = re.compile(r"([\\`*\[\]<>&|~$#]|(?<![^\W_])_|_(?![^\W_]))")
#: What makes a line's start a list item, a thematic break or a setext underline.
_LINE_START = re.compile(r"^(\d*)([-+=.)])")


def md_literal(name: object) -> str:
    """``name`` as Markdown text that shows exactly ``name``: control characters as escapes
    (:func:`clean_name`, so a name cannot start a new line), and every character that could
    begin markup backslash-escaped (a CommonMark escape), so ``x *y* z`` keeps its stars and
    ``[a](javascript:…)`` or ``<img>`` stay text wherever a report inserts a name; spaces at
    its ends are character references (``&#32;``)."""
    text = _LINE_START.sub(r"\1\\\2", _MARKUP.sub(r"\\\1", clean_name(str(name))))
    # spaces at the ends as character references: Markdown drops them from a table cell or a
    # heading, and a space inside ``*…*`` would end the emphasis around the name
    core = text.strip(" ")
    if not core:
        return "&#32;" * len(text)
    start, end = text.index(core), len(text) - len(core) - text.index(core)
    return "&#32;" * start + core + "&#32;" * end


def plot_text(name: object) -> str:
    """``name`` as matplotlib text that shows exactly ``name``: ``$`` escaped (matplotlib
    reads ``$…$`` as mathtext, and a malformed one stops the figure from being saved),
    control characters as escapes, and a leading ``_`` kept (matplotlib leaves such a label
    out of the legend) behind a zero-width space."""
    text = clean_name(str(name)).replace("$", r"\$")
    return "\u200b" + text if text.startswith("_") else text


def short(text: str, n: int) -> str:
    """``text`` cut to ``n`` characters, the last one an ellipsis when it was cut."""
    return text if len(text) <= n else text[: n - 1] + "…"


def fmt_seconds(seconds: float | None) -> str:
    """A duration as ``h:mm:ss`` (``-:--:--`` when unknown or negative)."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "-:--:--"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def fmt_error(x: float | None) -> str:
    """An error (rate or RMSE) as a plain four-decimal number, as RMSE tables print it:
    ``0.0123``; :data:`DASH` when unknown or not finite."""
    return RMSE.fmt(x)


def rounded(x: float) -> int:
    """``x`` rounded to the nearest integer, halves away from zero (766.67 -> 767, 2.5 -> 3,
    -2.5 -> -3): every output rounds a mean the same way, never truncates it."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def num(x: float | int | None) -> str:
    """A count with thousands separators (``12,000``), rounded to the nearest integer
    (:func:`rounded`); :data:`DASH` when unknown or not finite."""
    if x is None or not math.isfinite(x):
        return DASH
    return f"{rounded(x):,}"


def count_of(n: int, noun: str) -> str:
    """``1 replicate``, ``3 replicates``, ``no replicate``: a count with its noun agreeing."""
    return f"no {noun}" if n == 0 else f"{n:,} {noun}" + ("" if n == 1 else "s")


def signed(x: float) -> str:
    """A signed count rounded as :func:`num` rounds: ``+1,200``, ``-507``, ``+0``."""
    return f"{rounded(x):+,}"


def fmt_axis(n: float) -> str:
    """Compact axis label for an edge count: 950, 12k, 1.5M."""
    if abs(n) >= 1e6:
        return f"{n / 1e6:.3g}M"
    if abs(n) >= 1e4:
        return f"{n / 1e3:.0f}k"
    if abs(n) >= 1e3:
        return f"{n / 1e3:.3g}k"
    return f"{n:.0f}"


def _cell(text: Any) -> str:
    """A table cell: a ``|`` not already escaped (a name as :func:`md_literal` writes it) is
    escaped, a newline is a space."""
    return re.sub(r"(?<!\\)\|", r"\\|", str(text)).replace("\n", " ")


def table(head: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> list[str]:
    """A Markdown table; ``align`` holds one of ``l``/``r`` per column (default: first left,
    others right). Cells are escaped so a ``|`` or a newline in a name cannot break a row."""
    align = align or "l" + "r" * (len(head) - 1)
    sep = ["---:" if a == "r" else "---" for a in align]
    out = ["| " + " | ".join(_cell(h) for h in head) + " |", "|" + "|".join(sep) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out
