"""A component from outside marketsim, named by its import path ``package.module:Class``: the
one importer the worker models', policies' and inference methods' registries share, so a
plug-in of any kind is refused, imported and reported on in the same words.

Importing runs code from outside marketsim, so it needs ``allow_imports`` (``--allow-imports``):
a scenario received from someone else never runs code silently. Each registry then checks the
class's facts itself (what makes a class a worker model, a policy or an inference method is
the registry's to say).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from marketsim.errors import InputError


def is_import_path(name: str) -> bool:
    """``package.module:Class`` names a component from outside marketsim."""
    return ":" in name


def import_class(name: str, kind: str, *, allow_imports: bool, source: str | None = None,
                 key: str | None = None, trust_imported: bool = False) -> type:
    """The class at the import path ``name``, a ``kind`` (``"policy"``, ``"worker model"``...),
    or a one-line :class:`InputError` (``key``, the scenario key that names it, first):
    refused without ``allow_imports``, a module or attribute that does not import, an object
    that is not a class. With ``trust_imported``, a class whose module is already imported
    (the run that imported it, writing its report) is used without ``allow_imports``."""
    where = f"{key}: " if key else ""
    module_name, _, attr = name.partition(":")
    if not allow_imports and not (trust_imported and module_name in sys.modules):
        raise InputError(f"{where}{kind} {name!r} is an import path and would run outside "
                         "code; pass --allow-imports if you trust this scenario", source=source)
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"{where}cannot import {kind} {name!r}: {exc}", source=source) from None
    if not isinstance(cls, type):
        raise InputError(f"{where}{kind} {name!r} is a {type(cls).__name__}, not a class",
                         source=source)
    return cls


def declared_classes(package: str, base: type, name_attr: str, *,
                     declares: Callable[[Path], bool] | None = None) -> list[Any]:
    """The built-in components of ``package``: in each of its public modules (sorted by name;
    ``_private`` ones and its ``registry`` skipped), the subclasses of ``base`` the module
    declares itself (not those it imports) that give ``name_attr`` a value in their own body.
    ``declares``: a cheap test of a module's file that may skip importing it. Each registry
    orders them and refuses two classes claiming one name in its own words (``Any``: an
    abstract base is not a ``type[T]`` to mypy; each registry declares its own dict's type)."""
    found: list[Any] = []
    for path in importlib.import_module(package).__path__:
        for info in sorted(pkgutil.iter_modules([path]), key=lambda m: m.name):
            if info.name.startswith("_") or info.name == "registry":
                continue
            if declares is not None and not declares(Path(path) / f"{info.name}.py"):
                continue
            module = importlib.import_module(f"{package}.{info.name}")
            found += [obj for obj in vars(module).values()
                      if isinstance(obj, type) and issubclass(obj, base)
                      and obj.__module__ == module.__name__ and vars(obj).get(name_attr)]
    return found


def default_name(components: dict[str, Any], what: str) -> str:
    """The name of the one component of ``components`` that declares ``default = True`` (the
    one a table without the naming key gets); none or several is a programming error."""
    defaults = [name for name, cls in components.items() if cls.default]
    if len(defaults) != 1:
        raise RuntimeError(f"exactly one {what} must declare default = True, got {defaults}")
    return defaults[0]
