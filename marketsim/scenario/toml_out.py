"""TOML text for a document (``tomllib`` only reads): ``validate --toml`` writes a resolved
scenario's :meth:`~marketsim.scenario.specs.Scenario.resolved_document` with :func:`dumps`;
feeding the text back to ``run`` gives an equal scenario.
"""

from __future__ import annotations

import math
import re
from typing import Any

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def key(name: str) -> str:
    """A TOML key: bare if it can be, else quoted."""
    return name if _BARE.fullmatch(name) else string(name)


def string(text: str) -> str:
    """A TOML basic string."""
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _control(ch: str) -> bool:
    """Whether TOML forbids ``ch`` as it is in a string or a comment (tab is allowed)."""
    return (ord(ch) < 0x20 and ch != "\t") or ord(ch) == 0x7F


def comment(text: str) -> str:
    r"""A TOML comment line ``# text``: line breaks and other control characters in ``text``
    (a user's ``--name``, a file name) are written as escapes (``\n``, ``\u001b``; also a
    lone surrogate, an undecodable byte of a file name), so the text cannot end the comment
    and start TOML of its own, nor make the file unwritable as UTF-8."""
    short = {"\n": "\\n", "\r": "\\r"}
    body = "".join(short.get(ch, f"\\u{ord(ch):04x}")
                   if _control(ch) or 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)
    return f"# {body}"


def value(v: Any) -> str:
    """A TOML value (tables inline)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return string(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def dumps(doc: dict[str, Any], prefix: str = "") -> str:
    """TOML text for ``doc``: scalars first, then ``[table]`` and ``[[array]]`` sections (the
    tables inside an array's items are written inline)."""
    lines, later = [], []
    for k, v in doc.items():
        if isinstance(v, dict) or _is_table_array(v):
            later.append((k, v))
        else:
            lines.append(f"{key(k)} = {value(v)}")
    for k, v in later:
        name = f"{prefix}.{key(k)}" if prefix else key(k)
        if isinstance(v, dict):
            lines.append(f"\n[{name}]")
            lines.append(dumps(v, name).rstrip("\n"))
        else:
            for item in v:
                lines.append(f"\n[[{name}]]")
                lines.extend(f"{key(a)} = {value(b)}" for a, b in item.items())
    return "\n".join(line for line in lines if line).lstrip("\n") + "\n"
