"""Column roles, delimiters and ``--columns`` mappings of CSV-like input files: which
separator a file uses and which header column plays which role."""

from __future__ import annotations

from collections.abc import Mapping

from marketsim.errors import InputError

#: Field separators of headed CSV files, detected from the header line (or given with
#: ``--delimiter``), with their names.
DELIMITERS = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe"}
#: Column roles that ``--columns`` can map to a header name.
COLUMN_ROLES = ("task", "worker", "label", "score", "time", "source", "confidence")
#: Role -> column name (``--columns task=item,worker=annotator``).
ColumnMap = Mapping[str, str]


def delimiter_name(delimiter: str) -> str:
    """The delimiter for ``name`` or character (``tab`` or a tab...); InputError if not one of
    :data:`DELIMITERS`."""
    by_name = {v: k for k, v in DELIMITERS.items()}
    if delimiter in DELIMITERS:
        return delimiter
    if delimiter.lower() in by_name:
        return by_name[delimiter.lower()]
    if delimiter == "\\t":
        return "\t"
    allowed = ", ".join(f"{v} ({k!r})" for k, v in DELIMITERS.items())
    raise InputError(f"unknown --delimiter {delimiter!r}; choose one of: {allowed}")


def parse_columns(spec: str) -> dict[str, str]:
    """``task=item,worker=annotator`` -> ``{"task": "item", "worker": "annotator"}``.

    InputError (naming ``--columns``) for a part without ``=``, an empty role or name, a role
    given twice, or one column given two roles. Whether each role exists and each column is
    in the file's header is checked when the file is read (:func:`map_columns`).
    """
    mapping: dict[str, str] = {}
    for part in spec.split(","):
        role, sep, name = (p.strip() for p in part.partition("="))
        if not sep or not role or not name:
            raise InputError(f"--columns {spec!r}: expected ROLE=COLUMN[,ROLE=COLUMN...] "
                             f"(roles: {', '.join(COLUMN_ROLES)}), got {part.strip()!r}")
        role = role.lower()
        if role in mapping:
            raise InputError(f"--columns {spec!r}: role {role!r} is given twice")
        if name.lower() in (n.lower() for n in mapping.values()):
            raise InputError(f"--columns {spec!r}: column {name!r} is given two roles")
        mapping[role] = name
    return mapping


def sniff_delimiter(text: str) -> str:
    """The delimiter of a headed file: of ``,`` tab ``;`` ``|``, the one found most often in
    the first non-blank line (the first of them on a tie); ``,`` when none is there."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        if line.strip():
            counts = {d: line.count(d) for d in DELIMITERS}
            best = max(DELIMITERS, key=counts.__getitem__)
            return best if counts[best] else ","
        start = end + 1
    return ","


def map_columns(
    wanted: Mapping[str, tuple[str, ...]],
    optional: Mapping[str, tuple[str, ...]],
    columns: ColumnMap,
    header: list[str],
    source: str,
    line: int,
    strict: bool,
) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """``wanted`` and ``optional`` column aliases (role -> header names) with the roles of
    ``columns`` renamed.

    ``strict`` (the labels file): a mapped role is read from its named column only, which must
    be in the header. Otherwise (truth and feature files) the named column is one more alias.
    A mapped column is never claimed by another role's default name: in the labels file that
    is an error naming both (``--columns label=task`` on a header with ``task``), elsewhere the
    other role just does not take it. Roles the file does not have are ignored; a role not in
    :data:`COLUMN_ROLES` is an error.
    """
    found = ", ".join(repr(h) for h in header)
    names = {h.strip().lower() for h in header}
    aliases = {**wanted, **optional}
    mapped = {name.strip().lower(): role for role, name in columns.items() if role in aliases}
    for role, role_aliases in aliases.items():  # a mapped column is its role's only
        taken = [a for a in role_aliases if mapped.get(a, role) != role]
        if strict and role not in columns and any(a in names for a in taken):
            other = mapped[next(a for a in taken if a in names)]
            raise InputError(
                f"--columns {other}={columns[other]}: column {columns[other]!r} is also the "
                f"default {role} column; give the {role} role its own column too (--columns "
                f"{other}={columns[other]},{role}=COLUMN)",
                source=source, where=str(line),
            )
        aliases[role] = tuple(a for a in role_aliases if a not in taken)
    for role, name in columns.items():
        if role not in COLUMN_ROLES:
            raise InputError(
                f"--columns: unknown role {role!r} (roles: {', '.join(COLUMN_ROLES)}); "
                f"found columns {found}", source=source, where=str(line),
            )
        if role not in aliases:
            continue
        key = name.strip().lower()
        if strict:
            if key not in names:
                raise InputError(
                    f"--columns {role}={name}: no column {name!r}; found columns {found}",
                    source=source, where=str(line),
                )
            aliases[role] = (key,)
        else:
            aliases[role] = (key, *(a for a in aliases[role] if a != key))
    return ({k: aliases[k] for k in wanted}, {k: aliases[k] for k in optional})
