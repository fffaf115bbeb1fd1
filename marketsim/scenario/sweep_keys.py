"""The keys of a ``[sweep]`` table: which scenario value each one varies.

A sweep key is the dotted key of any scenario value, e.g. ``workers.count`` or
``budget.batch``. An arm's keys are addressed by the arm's name or by its index in the file::

    "arms.adaptive.policy.ensemble_size" = [5, 10]      # the arm named "adaptive"
    "arms[1].inference.max_iter" = [10, 50]             # the second [[arms]] table

(a name with spaces or dots is written as is inside the quoted key, ``"arms.uniform + prior.
inference.method"``; when two names could match, the longer one wins). Each key is checked
against the schema when the file is read, so a misspelt arm name or key is a one-line error
with a did-you-mean before any grid point is built; the values themselves are checked per grid
point (:mod:`marketsim.scenario.sweep`).
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, PlainSerializer

from marketsim.errors import InputError
from marketsim.scenario.arm_specs import ArmSpec, PolicySpec
from marketsim.scenario.inference_spec import InferenceSpec, known_settings
from marketsim.scenario.validation import KeyProblem, printable, suggest
from marketsim.tables import _as_tuple

#: Most grid points a ``[sweep]`` may have: a bigger grid is refused at once.
MAX_SWEEP_POINTS = 10_000
#: Keys a sweep may not vary: they name the study or an arm, or are command-line overrides.
FIXED = {("scenario", "name"), ("scenario", "replicates"), ("arms", "name"), ("sweep",)}

_INDEXED = re.compile(r"arms\[(\d+)\]\.(.+)\Z", re.S)

Path = tuple[str | int, ...]


#: An arm's key given as a plain string, and the table key that string stands for: sweeping
#: ``policy.n_trees`` of ``policy = "random-forest"`` needs ``{name = "random-forest"}``.
SHORT_FORMS = {"policy": "name", "inference": "method"}


def set_path(data: dict[str, Any], path: Path, value: Any) -> None:
    """Set ``value`` at ``path`` (from :func:`key_path`) in a decoded scenario document."""
    node: Any = data
    for part, below in zip(path[:-1], path[1:], strict=True):
        if isinstance(part, int):
            node = node[part]
            continue
        child = node.get(part)
        if isinstance(child, str) and part in SHORT_FORMS and not isinstance(below, int):
            child = {SHORT_FORMS[part]: child}
        elif child is None:
            child = {}
        node[part] = child
        node = child
    node[path[-1]] = value


def _fail(key: str, message: str, source: str) -> InputError:
    return InputError(f"sweep.{printable(key)} {message}", source=source)


def _arm_path(key: str, arm_names: Sequence[str], source: str) -> Path:
    """``arms.<name>.rest`` or ``arms[<i>].rest`` -> ``("arms", i, *rest)``."""
    shape = "must be arms.<arm name>.<key> or arms[<index>].<key>"
    match = _INDEXED.match(key)
    if match:
        idx = int(match.group(1))
        if idx >= len(arm_names):
            raise _fail(key, f"names arm {idx}, but the scenario has {len(arm_names)} arm(s) "
                        f"(arms[0] to arms[{len(arm_names) - 1}])", source)
        return ("arms", idx, *match.group(2).split("."))
    if not key.startswith("arms."):
        raise _fail(key, shape, source)
    tail = key[len("arms."):]
    if tail in arm_names:
        raise _fail(key, f"{shape}: name one of the arm's keys (policy, inference, initial)",
                    source)
    matches = [n for n in arm_names if tail.startswith(n + ".")]
    if not matches:
        guess = tail.split(".")[0]
        raise _fail(key, f"names no arm {guess!r} (arms: {', '.join(arm_names)}; or use "
                    f"arms[<index>]){suggest(guess, list(arm_names))}", source)
    name = max(matches, key=len)
    return ("arms", list(arm_names).index(name), *tail[len(name) + 1:].split("."))


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models inside a field's annotation (``X | None``, ``str | X``...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) is typing.Annotated:  # a tagged member of a union
        return _models(typing.get_args(annotation)[0])
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return [m for arg in typing.get_args(annotation) for m in _models(arg)]
    return []


def _check_schema(key: str, path: Path, root: type[BaseModel], source: str) -> None:
    """Each part of ``path`` is a key of the table above it in the scenario model ``root`` (a
    policy table's options are checked per grid point, against the policy's own schema)."""
    model: type[BaseModel] | None = root
    variants: list[type[BaseModel]] = [root]
    for pos, part in enumerate(path):
        if isinstance(part, int):
            model, variants = ArmSpec, [ArmSpec]
            continue
        if model is None:
            raise _fail(key, f"goes below {'.'.join(str(p) for p in path[:pos])}, which is "
                        "not a table", source)
        # a table that is a union of variants ([workers], one per worker model): any variant's key
        fields = {k: f for v in variants for k, f in v.model_fields.items()}
        if part not in fields:
            if InferenceSpec in variants:  # a setting of some method (checked per point)
                allowed = list(dict.fromkeys([*fields, *known_settings()]))
                if part in allowed:
                    return
            elif PolicySpec in variants:  # an import-path policy's options (checked per
                # grid point, once imported)
                return
            else:
                allowed = [f for f in fields if f != "sweep"]
            raise _fail(key, f"names no key {part!r} (allowed here: {', '.join(allowed)})"
                        f"{suggest(part, allowed)}", source)
        if part == "arms":
            continue  # the arm's index follows
        variants = _models(fields[part].annotation)
        model = variants[0] if variants else None


def key_path(key: str, arm_names: Sequence[str], root: type[BaseModel], source: str) -> Path:
    """The path of sweep key ``key`` in the scenario document: ``workers.count`` ->
    ``("workers", "count")``, ``arms.adaptive.policy.n_trees`` -> ``("arms", 1, "policy",
    "n_trees")``. An unknown arm or key is a one-line :class:`InputError`."""
    arm_key = key == "arms" or key.startswith(("arms.", "arms["))
    path: Path = _arm_path(key, arm_names, source) if arm_key else tuple(key.split("."))
    if any(p == "" for p in path):
        raise _fail(key, "has an empty part", source)
    named = tuple(p for p in path if not isinstance(p, int))
    if named[:2] in FIXED or named[:1] in FIXED:
        raise _fail(key, "cannot be swept", source)
    _check_schema(key, path, root, source)
    return path


def _flatten(table: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in table.items():
        dotted = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            out.extend(_flatten(value, dotted))
        else:
            out.append((dotted, value))
    return out


def _grid(raw: Any) -> Any:
    """``[sweep]`` as (dotted key, values) pairs, each with a non-empty array of values; at
    most ``MAX_SWEEP_POINTS`` grid points (the keys are checked by :func:`check_grid`)."""
    if raw is None or isinstance(raw, tuple):
        return raw
    if not isinstance(raw, Mapping) or not raw:
        raise KeyProblem("", "must be a table of dotted keys with arrays of values, e.g. "
                         "workers.count = [10, 30]")
    grid = []
    points = 1
    for key, values in _flatten(raw):
        if not isinstance(values, list) or not values:
            raise KeyProblem(key, f"must be a non-empty array of values, got {values!r}")
        points *= len(values)
        if points > MAX_SWEEP_POINTS:
            raise KeyProblem("", f"has more than {MAX_SWEEP_POINTS:,} grid points (the "
                             "product of the array lengths); split the study")
        grid.append((key, _as_tuple(values)))
    return tuple(grid)


def _nested(grid: tuple[tuple[str, tuple[Any, ...]], ...]) -> dict[str, Any]:
    """The pairs as the ``[sweep]`` table a scenario file writes."""
    table: dict[str, Any] = {}
    for key, values in grid:
        node = table
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = list(values)
    return table


#: ``[sweep]``: (dotted key, values) pairs, written back as the nested table.
SweepGrid = Annotated[tuple[tuple[str, tuple[Any, ...]], ...], BeforeValidator(
    _grid, json_schema_input_type=dict[str, Any] | None), PlainSerializer(_nested)]


def check_grid(grid: tuple[tuple[str, tuple[Any, ...]], ...], arm_names: Sequence[str],
               root: type[BaseModel], source: str) -> None:
    """Every sweep key names a value of the scenario (:func:`key_path`)."""
    for key, _ in grid:
        key_path(key, arm_names, root, source)
