"""``[[machines]]``: the machine annotators a requester may ask beside the human crowd, each
table one kind's options (:mod:`marketsim.machines`), a union discriminated by ``kind``
generated from the registry, so validation, the JSON Schema and the docs' key table come from
the kinds. A scenario without it has no machines and runs as it always did."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from marketsim.machines.base import MachineAnnotator, MachineOptions
from marketsim.machines.registry import DEFAULT_KIND, MACHINE_KINDS
from marketsim.tables import tagged_union

#: Each kind's options, by kind.
MACHINE_VARIANTS: dict[str, type[MachineOptions]] = {
    kind: cls.Options for kind, cls in MACHINE_KINDS.items()}


if TYPE_CHECKING:
    Machine = MachineOptions
else:
    #: One ``[[machines]]`` table: a union over the kinds' options, discriminated by ``kind``
    #: (the default kind's when ``kind`` is left out or unknown: that variant then refuses it
    #: with the names).
    Machine = tagged_union(MACHINE_VARIANTS, MACHINE_VARIANTS[DEFAULT_KIND], "kind")


def machine_annotator(options: MachineOptions) -> MachineAnnotator:
    """The machine of one ``[[machines]]`` table: its kind with these options."""
    return MACHINE_KINDS[options.kind](options)


def machines_problem(machines: Sequence[MachineOptions], n_classes: int
                     ) -> tuple[str, str] | None:
    """(dotted key, sentence) of the first rule across tables ``machines`` break — a name
    given twice, a confusion matrix that is not K×K for ``tasks.classes`` — else ``None``."""
    seen: set[str] = set()
    for i, machine in enumerate(machines):
        if machine.name in seen:
            return f"machines[{i}].name", f"{machine.name!r} names two machines; names are " \
                "the labels' sources and must be unique"
        seen.add(machine.name)
        rows = getattr(machine, "confusion", None)
        if rows is not None and len(rows) != n_classes:
            return f"machines[{i}].confusion", f"must be {n_classes}×{n_classes} (tasks." \
                f"classes = {n_classes}), got {len(rows)} rows"
    return None
