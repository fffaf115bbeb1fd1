"""What one arm's market is set up with: the tables of its scenario that the market reads.

A unit's market reads the tasks, the workers, the budget, the arm's gold questions and blocking
rule (the arm's own or the scenario's), the most labels a unit can buy, the scenario's source
(for errors) and its machine annotators (``[[machines]]``); never its name, seed, arms, output,
report or sweep. The study runner builds a :class:`MarketSetup` once per unit
(:func:`marketsim.study.runner.market_setup`) and the market and its parts (workforce, gold
questions, the policy's view, the stuck diagnosis) are given it or the one table they read, so
what a change of scenario key reaches in the market is what reads that key.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from marketsim.machines.base import MachineOptions
from marketsim.scenario.crowd_specs import TasksSpec, Workers
from marketsim.scenario.market_specs import BlockingSpec, BudgetSpec, GoldSpec
from marketsim.workers.base import Crowd


@dataclass(frozen=True)
class MarketSetup:
    """The tables one arm's market reads, resolved, and the numbers derived from them."""

    tasks: TasksSpec
    workers: Workers
    budget: BudgetSpec
    #: The arm's gold questions (``None``: none).
    gold: GoldSpec | None
    #: The arm's blocking rule (``None``: nobody is blocked).
    blocking: BlockingSpec | None
    #: The most labels (gold included) a unit can buy (what the label log is sized for).
    max_labels: int
    #: Where the scenario came from, for the one-line errors the market raises.
    source: str
    #: The machine annotators a policy may ask (``[[machines]]``; empty: none).
    machines: tuple[MachineOptions, ...] = ()

    @cached_property
    def crowd(self) -> Crowd:
        """What the worker model reads: the tasks, the workers and the budget."""
        return Crowd(self.tasks, self.workers, self.budget)
