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
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path
from typing import Any

from marketsim.aggregation.estimator import Estimator

#: A class body's line naming a method (``    method = "ds"``).
NAMES_A_METHOD = re.compile(r"^[ \t]+method(\s*:[^=\n]*)?\s*=\s*[\"']", re.MULTILINE)


def _discover() -> dict[str, type[Estimator]]:
    """Every method class of the package's public modules, by name (see the module's
    docstring for the order); two classes claiming one name are a programming error."""
    found: list[type[Estimator]] = []
    here = Path(__file__).parent
    for info in sorted(pkgutil.iter_modules([str(here)]), key=lambda m: m.name):
        if info.name.startswith("_") or info.name == "registry" or not NAMES_A_METHOD.search(
                (here / f"{info.name}.py").read_text(encoding="utf-8")):
            continue
        module = importlib.import_module(f"{__package__}.{info.name}")
        found += [obj for obj in vars(module).values()
                  if isinstance(obj, type) and issubclass(obj, Estimator)
                  and obj.__module__ == module.__name__ and obj.__dict__.get("method")]
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
