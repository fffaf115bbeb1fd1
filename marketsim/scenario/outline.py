"""A study at a glance: the few numbers of a scenario that the resource guard and the progress
display read (its name and arms, how many units, how big one unit's market is, its headline
error), so they are given these numbers, not the whole scenario (issue #39)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class StudyOutline:
    """One study's (one sweep point's) outline, built by
    :attr:`~marketsim.scenario.specs.Scenario.outline`."""

    #: ``scenario.name``.
    name: str
    #: The arms' names, in the file's order.
    arms: tuple[str, ...]
    replicates: int
    #: ``tasks.count``, ``tasks.classes`` and ``workers.count``.
    tasks: int
    classes: int
    workers: int
    #: ``budget.edges``: the labels a unit is asked to buy (the progress bars' length).
    edges: int
    #: The most labels a unit can buy, gold included (what a unit's memory scales with).
    labels: int
    #: ``output.graph``: each unit keeps the networkx graph of who labelled what.
    graph: bool
    #: The worker model's headline error (``curves.csv``'s column).
    metric: Literal["error_rate", "rmse"]
    #: ``[report] targets`` (empty: the standard ones).
    targets: tuple[float, ...]
    #: Where the scenario came from, for one-line errors.
    source: str

    @property
    def units(self) -> int:
        """(replicate, arm) units the study runs."""
        return self.replicates * len(self.arms)
