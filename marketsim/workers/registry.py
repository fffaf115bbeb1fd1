"""Every worker model by its ``workers.model`` name, discovered: each module of
:mod:`marketsim.workers`, in sorted order, contributes the :class:`~marketsim.workers.base.
WorkerModel` subclasses it declares with a ``name``. Adding a worker model is adding its
module (and its test); the scenario's ``[workers]`` union, validation, the JSON Schema, the
docs, ``marketsim list`` and ``report.md`` read it from here.

A worker model from outside marketsim is named by its import path, ``workers.model =
"package.module:Class"``, as a policy is: it is imported only with ``--allow-imports`` (a
scenario received from someone else never runs code silently) and its class checked like a
built-in one's (:func:`model_problem`) before anything reads its facts.
"""

from __future__ import annotations

import inspect
import typing
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from marketsim.errors import InputError
from marketsim.plugins import declared_classes, default_name, import_class, is_import_path
from marketsim.tables import Table
from marketsim.workers.base import WorkerModel

#: Every worker model by its ``workers.model`` name (modules in sorted order).
WORKER_MODELS: dict[str, type[WorkerModel]] = {
    cls.name: cls for cls in declared_classes("marketsim.workers", WorkerModel, "name")}
#: The model of a ``[workers]`` table without ``model`` (and of a replayed crowd's records).
DEFAULT_MODEL: str = default_name(WORKER_MODELS, "worker model")


def worker_model(name: object) -> type[WorkerModel]:
    """The model called ``name`` (the default model when ``name`` is none or unknown: replay
    markets and files written before the key existed)."""
    return WORKER_MODELS.get(str(name), WORKER_MODELS[DEFAULT_MODEL])


#: The facts a worker model declares: :class:`WorkerModel`'s class variables.
FACTS: tuple[str, ...] = tuple(n for n in WorkerModel.__annotations__ if n != "Options")


@cache
def _fact_types() -> dict[str, TypeAdapter[Any]]:
    """Each fact's declared type (``ClassVar[T]``'s ``T``), as a strict validator."""
    hints = typing.get_type_hints(WorkerModel, include_extras=True)
    return {n: TypeAdapter(typing.get_args(hints[n])[0]) for n in FACTS}


def model_problem(cls: type) -> str | None:
    """What is wrong with worker model class ``cls`` on one line, or ``None``: a subclass of
    :class:`WorkerModel` that implements its behaviour and words, declares every fact with
    its declared type (``name``, ``summary``, its words...; ``ClassWorkers`` gives a
    class-label model the rest), a default method that fits its labels, and an ``Options``
    table."""
    if not issubclass(cls, WorkerModel):
        return "is not a subclass of marketsim.workers.base.WorkerModel"
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        return f"does not implement {missing}"
    for fact in FACTS:
        if not hasattr(cls, fact):
            return f"does not declare the fact {fact!r}"
        try:
            _fact_types()[fact].validate_python(getattr(cls, fact), strict=True)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            return f"{fact} = {getattr(cls, fact)!r}: {first['msg'].lower()}"
    if not cls.name:
        return "name is empty"
    if not (isinstance(cls.Options, type) and issubclass(cls.Options, Table)):
        return f"Options = {cls.Options!r} is not a marketsim.tables.Table of its options"
    if cls.default_method not in cls.methods:
        return (f"default_method = {cls.default_method!r} does not estimate its labels "
                f"({cls.labels}); use one of {', '.join(cls.methods)}")
    return None


def worker_model_class(name: str, *, allow_imports: bool = False,
                       source: str | None = None) -> type[WorkerModel]:
    """The worker model called ``name``: a built-in one, or the class at the import path
    ``name`` (:func:`marketsim.plugins.import_class`), its facts checked. Importing runs outside
    code, so it needs ``allow_imports``; a class whose module is already imported (the run that
    imported it, writing its report) is used without importing anything."""
    if name in WORKER_MODELS:
        return WORKER_MODELS[name]
    if not is_import_path(name):
        raise InputError(f"unknown worker model {name!r}; choose one of: "
                         f"{', '.join(WORKER_MODELS)}, or a 'package.module:Class' import path",
                         source=source)
    cls = import_class(name, "worker model", allow_imports=allow_imports, source=source,
                       trust_imported=True)
    problem = model_problem(cls)
    if problem is not None:
        raise InputError(f"worker model {name!r}: {problem}", source=source)
    return typing.cast(type[WorkerModel], cls)
