"""A pydantic ``ValidationError`` as the one-line :class:`InputError` users get.

``bad.toml: arms[1].inference.max_iter must be >= 1, got 0``: the file, the dotted key, what is
allowed and what was given. An unknown key lists the allowed ones with a did-you-mean
(``task`` → ``did you mean tasks?``), so a misspelt required table is named as misspelt rather
than as missing.
"""

from __future__ import annotations

import difflib
import math
import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from marketsim.errors import InputError
from marketsim.tables import KeyProblem


def printable(text: str) -> str:
    """``text`` with control characters escaped (a key may hold a newline; errors are one
    line)."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in text)


def short(value: Any) -> str:
    """``repr`` of a value, cut to 40 characters so an error stays one readable line."""
    text = repr(list(value) if isinstance(value, tuple) else value)
    return text if len(text) <= 40 else text[:37] + "..."


def dotted(loc: Sequence[str | int]) -> str:
    """``("arms", 1, "inference", "max_iter")`` → ``arms[1].inference.max_iter``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return printable(out or "top level")


def suggest(word: str, allowed: Sequence[str]) -> str:
    """``"; did you mean X?"`` for a close match among ``allowed``, else ``""``."""
    close = difflib.get_close_matches(word, list(allowed), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def validate(model: type[BaseModel], data: Any, source: str,
             prefix: Sequence[str | int] = (), context: dict[str, Any] | None = None) -> Any:
    """``model`` validated from ``data`` (``context``: what its validators need besides the
    data), or the first problem as an :class:`InputError`."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise to_input_error(exc, model, data, source, prefix) from None


def to_input_error(exc: ValidationError, model: type[BaseModel], data: Any, source: str,
                   prefix: Sequence[str | int] = ()) -> InputError:
    """The first error of ``exc`` (unknown keys first: a misspelt key also makes its
    correct spelling 'missing'), as one line naming the dotted key."""
    errors = [_strip_union_tags(e, data) for e in exc.errors(include_url=False)]
    errors = _pick_union_branch(errors)
    errors.sort(key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    loc = (*prefix, *first["loc"])
    cause = first.get("ctx", {}).get("error") if first["type"] == "value_error" else None
    if isinstance(cause, InputError):  # a rule spanning tables, with its own full sentence
        return cause
    if isinstance(cause, KeyProblem):
        below = cause.key.split(".") if cause.key else []
        return InputError(f"{dotted((*loc, *below))} {cause.message}", source=source)
    if first.get("union"):
        expected = " or ".join(dict.fromkeys(_expected(e) for e in first["union"]))
        return InputError(f"{dotted(loc)} must be {expected}, got {short(first['input'])}",
                          source=source)
    if first["type"] == "extra_forbidden":
        allowed = _keys_at(model, first["raw_loc"][:-1])
        key = str(first["loc"][-1])
        return InputError(f"{dotted(loc)} is not a known key (allowed here: "
                          f"{', '.join(allowed)}){suggest(key, allowed)}", source=source)
    return InputError(f"{dotted(loc)} {_message(first)}", source=source)


def _strip_union_tags(error: Mapping[str, Any], data: Any) -> dict[str, Any]:
    """Drop the union-member tags pydantic puts in ``loc`` (``'str'``, ``'InferenceSpec'``),
    remembering each with the input there, so the branch matching the input can be chosen."""
    node, loc, tags, short = data, [], [], False
    for pos, part in enumerate(error["loc"]):
        if isinstance(node, str) and pos and _is_tag(str(error["loc"][pos - 1])):
            short = True  # a name standing for its table (``policy = "uniform"``): the
            break  # error is the name's, at its key
        if isinstance(node, Mapping) and part in node:
            node = node[part]
            loc.append(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
            loc.append(part)
        elif isinstance(part, str) and _is_tag(part):
            tags.append((tuple(loc), part, node))
        else:
            loc.append(part)
    wrong = None if short else next(
        ((at, value) for at, tag, value in tags if _kind_of(tag) is not _kind(value)), None)
    return {**error, "loc": tuple(loc), "raw_loc": tuple(error["loc"]), "wrong_branch": wrong}


def _is_tag(part: str) -> bool:
    return bool(re.fullmatch(r"(str|int|float|bool|list\[.*\]|dict\[.*\]|literal\[.*\]|"
                             r"[A-Z]\w*)", part))


def _kind_of(tag: str) -> type:
    if tag.startswith("list["):
        return list
    if tag.startswith("dict[") or tag[0].isupper():
        return dict
    return str


def _kind(value: Any) -> type | None:
    if isinstance(value, Mapping):
        return dict
    if isinstance(value, list):
        return list
    return str if isinstance(value, str) else None


def _pick_union_branch(errors: list[dict]) -> list[dict]:
    """Keep the errors of the union branches that match the input's kind (a table given for
    ``policy`` is checked as a table); where no branch matches, one "must be A or B" error."""
    kept = [e for e in errors if e["wrong_branch"] is None]
    unions: dict[tuple, list[dict]] = {}
    for e in errors:
        if e["wrong_branch"] is not None:
            unions.setdefault(e["wrong_branch"][0], []).append(e)
    for at, group in unions.items():
        if not any(e["loc"][:len(at)] == at for e in kept):
            kept.append({**group[0], "loc": at, "type": "union", "union": group,
                         "input": group[0]["wrong_branch"][1]})
    return kept


def _expected(error: dict) -> str:
    kind = error["type"]
    if kind == "literal_error":
        return f"one of {', '.join(_literal_values(error))}"
    return _TYPE_WORDS.get(kind, "valid")


_TYPE_WORDS = {
    "int_type": "an integer", "float_type": "a number", "string_type": "a string",
    "bool_type": "true or false", "list_type": "an array", "model_type": "a table",
    "dict_type": "a table", "finite_number": "a finite number", "tuple_type": "an array",
}


def _literal_values(error: dict) -> list[str]:
    return re.findall(r"'([^']*)'", error.get("ctx", {}).get("expected", ""))


def _bound(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def _message(error: dict) -> str:
    """The sentence after the dotted key."""
    kind, ctx, value = error["type"], error.get("ctx", {}), error.get("input")
    got = short(value)
    if kind == "missing":
        return "is required"
    if kind == "literal_error":
        allowed = _literal_values(error)
        hint = suggest(value, allowed) if isinstance(value, str) else ""
        return f"must be one of {', '.join(allowed)}; got {got}{hint}"
    if kind == "float_type" and isinstance(value, int) and not isinstance(value, bool):
        return f"must be a finite number, got {got}"  # an integer too large for a float
    if kind == "finite_number" or (kind == "float_type" and isinstance(value, float)
                                   and not math.isfinite(value)):
        return f"must be a finite number, got {got}"
    for name, op in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
        if name in ctx:
            return f"must be {op} {_bound(ctx[name])}, got {got}"
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length')} entries (or characters), got {got}"
    if kind in _TYPE_WORDS:
        return f"must be {_TYPE_WORDS[kind]}, got {got}"
    return f"is not valid: {printable(error['msg'])}, got {got}"


def _keys_at(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """The keys the table at ``loc`` (pydantic's, union tags included: a tag names the
    variant of a union of tables, such as a worker model's ``[workers]``) of ``model``'s
    document allows."""
    current: list[Any] = [model]
    for part in loc:
        if isinstance(part, int):
            continue
        tagged = [m for m in current if m.__name__ == part]
        if tagged:
            current = tagged
            continue
        field = next((m.model_fields[part] for m in current if part in m.model_fields), None)
        if field is None:
            return []
        current = _table_types(field.annotation)
    return list(current[0].model_fields) if current else []


def _is_model(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, BaseModel)


def _table_types(annotation: Any) -> list[Any]:
    """The models inside ``X | None``, ``list[X]``, ``str | X`` or a tagged union of tables."""
    if _is_model(annotation):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _table_types(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, tuple):
        return [m for arg in typing.get_args(annotation) for m in _table_types(arg)]
    return []
