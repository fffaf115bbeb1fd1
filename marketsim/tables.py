"""A scenario table: the pydantic base every spec of a scenario derives from, and the error a
table's own rule raises (:class:`KeyProblem`).

A spec *is* its TOML table: the same keys, types, defaults, ranges and descriptions, strict
(a boolean is not a count, NaN is not a number, an unknown key is an error) and frozen. The
file is validated into the specs directly, and dumping a spec writes its table back. It sits at
the bottom of the house (layer 0), beside :mod:`marketsim.options`, so that the components
whose options are tables (the worker models, :mod:`marketsim.workers`) and the scenario that
holds them share it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Union

from pydantic import AfterValidator, BaseModel, BeforeValidator, Discriminator, Field, Tag

from marketsim.options import STRICT
from marketsim.plugins import is_import_path


class KeyProblem(ValueError):
    """A table's rule that spans its keys, broken: ``key`` (dotted, relative to the table the
    rule belongs to) and the sentence after it. The scenario's validation prefixes the table's
    place in the document, so the same table reports ``workers.confusion.high`` or
    ``arms[1].gold.rate`` wherever it sits."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key} {message}")
        self.key = key
        self.message = message


class Table(BaseModel):
    """A TOML table: strict types, no unknown keys, immutable; equal when its keys are
    (objects resolved from them, such as a policy's class, are not compared)."""

    model_config = STRICT

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BaseModel) or type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__ and self.model_extra == other.model_extra

    __hash__ = None  # type: ignore[assignment]  # tables hold arrays and mappings

    def as_written(self) -> dict[str, Any]:
        """The table as a scenario file writes it (keys without a value left out); a table
        whose variants read different keys writes only its variant's. (Not
        ``Scenario.document()``, the document a scenario was given as.)"""
        return self.model_dump(exclude_none=True)


def tagged_union(variants: Mapping[str, type[BaseModel]], fallback: type[BaseModel], key: str,
                 plugin: type[BaseModel] | None = None) -> Any:
    """A table that is one of several: each component's variant (``variants``, by the value of
    ``key`` that names it: ``[workers] model``, ``[arms.policy] name``, ``[arms.inference]
    method``), chosen by that value; an import path's (``package.module:Class``) is
    ``plugin``'s, and any other table (no ``key``, an unknown name) is ``fallback``'s, which
    refuses it or fills it in. The JSON Schema has one branch per member, variants first."""
    members = [*variants.values(), *(m for m in (plugin, fallback)
                                     if m is not None and m not in variants.values())]

    def tag(data: Any) -> str:
        if isinstance(data, BaseModel):
            return type(data).__name__
        name = data.get(key) if isinstance(data, Mapping) else None
        if isinstance(name, str) and name in variants:
            return variants[name].__name__
        if isinstance(name, str) and plugin is not None and is_import_path(name):
            return plugin.__name__
        return fallback.__name__

    tagged = tuple(Annotated[m, Tag(m.__name__)] for m in members)
    return Annotated[Union[tagged], Discriminator(tag)]  # noqa: UP007


def _as_tuple(value: Any) -> Any:
    """A TOML array (a list) as the tuple a frozen spec holds; anything else as given, for
    the strict type check to refuse with its own message."""
    return tuple(value) if isinstance(value, list) else value


#: An array of names, held as a tuple.
Strings = Annotated[tuple[str, ...], BeforeValidator(_as_tuple)]
#: An array of numbers, held as a tuple.
Floats = Annotated[tuple[float, ...], BeforeValidator(_as_tuple)]
#: An array of arrays of numbers (rows), held as tuples.
FloatRows = Annotated[tuple[Floats, ...], BeforeValidator(_as_tuple)]
#: An array of matrices (one K×K matrix per worker or community), held as tuples.
FloatMatrices = Annotated[tuple[FloatRows, ...], BeforeValidator(_as_tuple)]
#: An array of arrays of matrices (one set of per-worker matrices per task type).
FloatMatrixSets = Annotated[tuple[FloatMatrices, ...], BeforeValidator(_as_tuple)]


def positive_weights(why: str = "") -> Any:
    """An array of weights, each a finite number > 0 (a share of who arrives or who joins
    which community): a bad entry is refused as ``<key> entries must be finite numbers > 0``
    and ``why``, naming the array's place in the document."""
    def check(values: tuple[float, ...]) -> tuple[float, ...]:
        if any(not 0 < w < 1e300 for w in values):
            raise KeyProblem("", f"entries must be finite numbers > 0{why}, got "
                             f"{list(values)}")
        return values
    return Annotated[Floats, AfterValidator(check)]


def bounded_floats(**bounds: float) -> Any:
    """An array of numbers each within ``bounds`` (pydantic's ``gt``, ``ge``, ``lt``, ``le``),
    held as a tuple: the entries' range is declared in the type, so the schema and the docs
    read it and a bad entry is refused naming its index."""
    return Annotated[tuple[Annotated[float, Field(**bounds)], ...], BeforeValidator(_as_tuple)]
