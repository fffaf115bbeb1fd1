"""Name → estimator class for every inference method, discovered: a method is one class, in
any public module of this package, that names itself with the class variable ``method``.

Adding a method is one file in ``aggregation/`` (and its test): a subclass of
:class:`~marketsim.aggregation.base.BaseAggregator` (class labels) or
:class:`~marketsim.aggregation.base.ScoreAggregator` (scores) with ``method``,
``description`` and its parameters' ``Options`` model
(:class:`~marketsim.aggregation.options.Params`). The registry imports every module of the
package whose name does not start with ``_`` (private helpers hold no method) and whose source
names a method in a class body (a line ``method = "..."``: the modules ``marketsim calibrate``
uses, and their scipy.optimize, are not imported by every command) and collects those
classes: class methods first, then score methods, each in the order of their names.
Scenario validation, ``marketsim list``, ``marketsim infer``, the docs' settings tables, the
JSON Schema and report.md read it.

A method from outside marketsim is named by its import path, ``[arms.inference] method =
"package.module:Class"``, as a policy or a worker model is: imported only with
``--allow-imports`` (:func:`marketsim.plugins.import_class`), its class checked like a built-in
one's (:func:`method_problem`), its ``Options`` model its settings. It is not listed (``marketsim
list`` shows the built-in methods); a scenario and its run record name it by its import path.
"""

from __future__ import annotations

import re
import sys
import typing
from typing import Any

from marketsim.aggregation.estimator import Estimator
from marketsim.aggregation.options import Params
from marketsim.errors import InputError
from marketsim.plugins import declared_classes, import_class, is_import_path

#: A class body's line naming a method (``    method = "ds"``).
NAMES_A_METHOD = re.compile(r"^[ \t]+method(\s*:[^=\n]*)?\s*=\s*[\"']", re.MULTILINE)


def _discover() -> dict[str, type[Estimator]]:
    """Every method class of the package's public modules, by name (see the module's
    docstring for the order); two classes claiming one name are a programming error."""
    found = declared_classes(__package__, Estimator, "method", declares=lambda path:
                             NAMES_A_METHOD.search(path.read_text(encoding="utf-8")) is not None)
    found.sort(key=lambda cls: (cls.output != "classes", cls.method))
    methods: dict[str, type[Estimator]] = {}
    for cls in found:
        assert cls.method is not None
        if cls.method in methods:
            raise RuntimeError(f"inference method {cls.method!r} is claimed by both "
                               f"{methods[cls.method].__qualname__} and {cls.__qualname__}")
        methods[cls.method] = cls
    return methods


#: Every inference method's class, by name.
METHODS: dict[str, type[Estimator]] = _discover()
#: Methods that estimate classes from class labels (everything a discrete market can use).
CLASS_METHODS: tuple[str, ...] = tuple(n for n, c in METHODS.items() if c.output == "classes")
#: Methods that estimate continuous task means from scores.
SCORE_METHODS: tuple[str, ...] = tuple(n for n, c in METHODS.items() if c.output == "scores")


def method_problem(cls: type) -> str | None:
    """What is wrong with inference method class ``cls`` on one line, or ``None``: a subclass
    of :class:`~marketsim.aggregation.base.BaseAggregator` (class labels) or
    :class:`~marketsim.aggregation.base.ScoreAggregator` (scores) that names itself
    (``method``), says what it estimates (``output``) and declares its parameters as an
    ``Options`` model (:class:`~marketsim.aggregation.options.Params`)."""
    if not issubclass(cls, Estimator):
        return ("is not a subclass of marketsim.aggregation.base.BaseAggregator (class "
                "labels) or ScoreAggregator (scores)")
    if not (isinstance(cls.method, str) and cls.method):
        return "does not name itself: set the class variable method (a string)"
    if cls.output not in ("classes", "scores"):
        return f"output = {cls.output!r}: it must be 'classes' or 'scores'"
    if not (isinstance(cls.Options, type) and issubclass(cls.Options, Params)):
        return (f"Options = {cls.Options!r} is not a marketsim.aggregation.options.Params "
                "model of its parameters")
    return None


def method_class(name: str, *, allow_imports: bool = False, source: str | None = None,
                 key: str | None = None) -> type[Estimator]:
    """The inference method called ``name``: a built-in one, or the class at the import path
    ``name``, its facts checked (a one-line :class:`InputError` naming ``key`` otherwise).
    Importing runs outside code, so it needs ``allow_imports``; a class whose module is
    already imported (the run that imported it, writing its report) is used as it is."""
    if name in METHODS:
        return METHODS[name]
    where = f"{key}: " if key else ""
    if not is_import_path(name):
        raise InputError(f"{where}unknown inference method {name!r}; choose one of: "
                         f"{', '.join(METHODS)}, or a 'package.module:Class' import path",
                         source=source)
    cls = import_class(name, "inference method", allow_imports=allow_imports, source=source,
                       key=key, trust_imported=True)
    problem = method_problem(cls)
    if problem is not None:
        raise InputError(f"{where}inference method {name!r} {problem}", source=source)
    return typing.cast(type[Estimator], cls)


def known_method(name: str) -> type[Estimator] | None:
    """The class of method ``name``: a built-in one, or an import-path method whose module is
    already imported (the scenario that names it was read with ``--allow-imports``); ``None``
    otherwise. Imports nothing."""
    if name in METHODS:
        return METHODS[name]
    if not is_import_path(name):
        return None
    module_name, _, attr = name.partition(":")
    cls = getattr(sys.modules.get(module_name), attr, None)
    if not isinstance(cls, type) or method_problem(cls) is not None:
        return None
    return typing.cast(type[Estimator], cls)


def make_estimator(name: str, **params: Any) -> Estimator:
    """Build the estimator called ``name`` with hyperparameters ``params`` (its class's
    defaults for the others)."""
    try:
        cls = METHODS[name]
    except KeyError:
        raise ValueError(
            f"unknown inference method {name!r}; choose one of: {', '.join(METHODS)}"
        ) from None
    return cls(**params)
