"""Every kind of machine annotator by its ``kind`` name, discovered: each module of
:mod:`marketsim.machines`, in sorted order, contributes the :class:`~marketsim.machines.base.
MachineAnnotator` subclasses it declares with a ``kind``. Adding a kind is adding its module
(and its test); the scenario's ``[[machines]]`` union, validation, the JSON Schema, the docs
and ``report.md`` read it from here."""

from __future__ import annotations

from marketsim.machines.base import MachineAnnotator
from marketsim.plugins import declared_classes, default_name

#: Every kind of machine annotator by its ``kind`` name (modules in sorted order).
MACHINE_KINDS: dict[str, type[MachineAnnotator]] = {
    cls.kind: cls for cls in declared_classes("marketsim.machines", MachineAnnotator, "kind")}
#: The kind of a ``[[machines]]`` table without ``kind``.
DEFAULT_KIND: str = default_name(MACHINE_KINDS, "machine kind")
