"""Every kind of machine annotator by its ``kind`` name, discovered: each module of
:mod:`marketsim.machines`, in sorted order, contributes the :class:`~marketsim.machines.base.
MachineAnnotator` subclasses it declares with a ``kind``. Adding a kind is adding its module
(and its test); the scenario's ``[[machines]]`` union, validation, the JSON Schema, the docs
and ``report.md`` read it from here."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from marketsim.machines.base import MachineAnnotator


def _declared(module_name: str) -> list[type[MachineAnnotator]]:
    """The kinds ``module_name`` declares (not those it imports)."""
    module = importlib.import_module(module_name)
    return [obj for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, MachineAnnotator)
            and obj.__module__ == module_name and "kind" in vars(obj)]


_PACKAGE = Path(__file__).parent
#: Every kind of machine annotator by its ``kind`` name (modules in sorted order).
MACHINE_KINDS: dict[str, type[MachineAnnotator]] = {
    cls.kind: cls
    for info in sorted(pkgutil.iter_modules([str(_PACKAGE)]), key=lambda i: i.name)
    if info.name != "registry"
    for cls in _declared(f"marketsim.machines.{info.name}")
}
_defaults = [kind for kind, cls in MACHINE_KINDS.items() if cls.default]
if len(_defaults) != 1:
    raise RuntimeError(f"exactly one machine kind must declare default = True, got {_defaults}")
#: The kind of a ``[[machines]]`` table without ``kind``.
DEFAULT_KIND: str = _defaults[0]
