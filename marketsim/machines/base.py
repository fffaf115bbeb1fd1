"""A machine annotator is one class: :class:`MachineAnnotator`, its facts, its options, its
behaviour and its words; :class:`MachineTasks`, what one replicate's machine knows of each
task, drawn once.

A machine differs from a human worker in what decides a labelling budget (issue #41): it is
always available and never tired, it answers after a fixed ``latency`` at a ``price`` per call
under a ``rate_limit``, its errors sit on the tasks that are hard for it (correlated with the
humans' task difficulty and with the errors of its own family), at temperature 0 it gives
the same answer when asked again, and it says how confident it is. The call mechanics (name,
kind, price, latency, rate limit) are :class:`MachineOptions`, the keys every kind shares; a
kind's ``Options`` extends them with its own. A scenario's ``[[machines]]`` is a union of the
kinds' options, discriminated by ``kind`` (:mod:`marketsim.scenario.machine_specs`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from marketsim.options import F
from marketsim.tables import Table

#: The most a call may cost or take (every money and time figure stays finite).
MAX_PRICE, MAX_LATENCY = 1e9, 1e9


class MachineOptions(Table):
    """The keys every machine shares: who it is and what a call costs in money and time."""

    name: str = F(..., "the machine's name, unique in the scenario (its labels' source)",
                  pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    kind: str = F(..., "the kind of machine annotator (`marketsim list` describes each)")
    price: float = F(0.0, "money per call, charged by the market's ledger when the call is "
                     "sent (no platform fee); a call is a label of `budget.edges`", ge=0,
                     le=MAX_PRICE)
    latency: float = F(0.0, "simulated time from a call to its answer", ge=0, le=MAX_LATENCY)
    rate_limit: float | None = F(None, "calls per unit of simulated time at most: calls start "
                                 "at least 1 / rate_limit apart, later ones wait",
                                 shown="unlimited", gt=0, le=1e9)


@dataclass(frozen=True)
class MachineTasks:
    """What one machine knows of each task in one replicate, drawn once (common random numbers:
    every arm asks the same machine): its latent hardness ``hardness`` (n_tasks,), standard
    normal, right when below ``threshold`` (n_tasks,); the wrong class it gives when wrong
    (n_tasks,); and its noise on its own hardness ``signal`` (n_tasks,), which its confidence
    reads. ``params`` holds what the kind needs besides."""

    truth: np.ndarray
    hardness: np.ndarray
    threshold: np.ndarray
    wrong: np.ndarray
    signal: np.ndarray
    params: Any = None


class MachineAnnotator(ABC):
    """A kind of machine annotator: its facts (class variables), its options (``Options``,
    held by an instance as ``options``), its behaviour (draw what it knows of the tasks, answer
    calls) and its words. A module of :mod:`marketsim.machines` that declares a subclass with
    a ``kind`` registers it (:mod:`marketsim.machines.registry`)."""

    #: ``kind``: the name a scenario selects it by.
    kind: ClassVar[str]
    #: One line for ``marketsim list`` and the docs.
    summary: ClassVar[str]
    #: Its options (the shared keys and its own).
    Options: ClassVar[type[MachineOptions]] = MachineOptions
    #: The kind of a ``[[machines]]`` table without ``kind`` (exactly one kind says so).
    default: ClassVar[bool] = False

    def __init__(self, options: MachineOptions) -> None:
        self.options: Any = options

    @property
    def family(self) -> str | None:
        """The family whose errors it shares in part (``None``: it shares none)."""
        return None

    @abstractmethod
    def draw(self, truth: np.ndarray, n_classes: int, human: np.ndarray | None,
             family: tuple[np.ndarray, np.ndarray] | None,
             rng: np.random.Generator) -> MachineTasks:
        """What it knows of tasks of classes ``truth``: ``human`` is the humans' task
        difficulty as standard normal scores (``None`` in a world without one), ``family``
        its family's shared (latent hardness, wrong-class uniform) per task; drawn from
        ``rng`` (vectorised)."""

    @abstractmethod
    def answer(self, known: MachineTasks, tasks: np.ndarray,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Its labels and confidences (the probability each label is right, as it reports it)
        for one call per entry of ``tasks`` (vectorised; ``rng`` only when it is not
        deterministic)."""

    @abstractmethod
    def describe(self) -> str:
        """What it is and how it answers, with its options' numbers, for ``report.md``'s
        Setup."""

    def cost_words(self) -> str:
        """A call's price, latency and rate limit in words."""
        o = self.options
        limit = "no rate limit" if o.rate_limit is None else f"at most {o.rate_limit:g} calls " \
            "per unit of time"
        return f"{o.price:g} per call, answered after {o.latency:g} time units, {limit}"
