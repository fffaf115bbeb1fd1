"""The machine annotators of one market as its policy sees them (issue #41): the replicate's
panel drawn, its call service, and the live record of what each machine was asked and
answered per task — the :class:`~marketsim.policies.base.MachineDesk` a policy is given in
``MarketInfo.machines``.

The panel is drawn from the replicate's ``machines`` stream (common random numbers: every arm
asks the same machines and gets the same answers at temperature 0) facing the world's truth and
its humans' task difficulty. A policy's :meth:`MarketMachines.ask` sends as many of its calls as
the run's labels (``budget.edges``) and money left pay, in the order given; each answer, when
it arrives, updates the record, is received on the ledger (a label of ``budget.edges``) and
is passed to the market (``on_answers``: it may complete a refresh's batch and reopen work a
worker-aware policy declined). The inference service reads the humans' labels and the answers
as one mixed label set (:meth:`MarketMachines.labels`): the machines are workers after the
humans, with their sources and confidences; before any answer it is the humans' set itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import simpy

from marketsim.data.labels import LabelSet
from marketsim.machines.base import MachineOptions
from marketsim.machines.panel import world_panel
from marketsim.market.ledger import MONEY_SLACK, Ledger
from marketsim.market.machine_calls import MachineCalls
from marketsim.scenario.machine_specs import machine_annotator
from marketsim.workers.base import World


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


class MarketMachines:
    """One market's machine annotators: the policy's desk (the protocol
    :class:`~marketsim.policies.base.MachineDesk`) over the call service."""

    def __init__(self, env: simpy.Environment, machines: Sequence[MachineOptions], world: World,
                 n_classes: int, n_humans: int, rng: np.random.Generator, ledger: Ledger,
                 on_answers: Callable[[], None]) -> None:
        panel = world_panel([machine_annotator(o) for o in machines], world, n_classes, rng)
        n_tasks = world.truth.size
        self.ledger = ledger
        self.calls = MachineCalls(env, panel, ledger, n_humans, self._answered_now)
        self._on_answers = on_answers
        shape = (len(machines), n_tasks)
        self._asked = np.zeros(shape, dtype=np.int64)
        self._answered = np.zeros(shape, dtype=np.int64)
        self._answers = np.full(shape, -1, dtype=np.int64)
        self._confidence = np.full(shape, np.nan)
        limits = [math.inf if o.rate_limit is None else o.rate_limit for o in machines]
        #: The :class:`~marketsim.policies.base.MachineDesk` record, as read-only views (the
        #: live ones of the arrays this desk updates as answers arrive).
        self.names: tuple[str, ...] = panel.names
        self.price = _read_only(self.calls.price.copy())
        self.latency = _read_only(self.calls.latency.copy())
        self.rate_limit = _read_only(np.array(limits, dtype=np.float64))
        self.asked, self.answered = _read_only(self._asked), _read_only(self._answered)
        self.answers, self.confidence = _read_only(self._answers), _read_only(self._confidence)

    def payable(self, machine: int, n_calls: int) -> int:
        """How many of ``n_calls`` calls to ``machine`` the labels and money left pay."""
        n = max(0, min(n_calls, self.ledger.target - self.ledger.assigned))
        price = float(self.calls.price[machine])
        if self.ledger.money is not None and price > 0 and n:
            left = self.ledger.money * (1 + MONEY_SLACK) - self.ledger.committed
            n = min(n, max(0, math.floor(left / price)))
            while n and not self.ledger.affordable(price * n):  # rounding at the boundary
                n -= 1
        return n

    def ask(self, machine: int, tasks: np.ndarray) -> int:
        """Send one call to ``machine`` per entry of ``tasks``, as many as the labels and money
        left pay, in the order given; how many were sent."""
        tasks = np.asarray(tasks, dtype=np.int64).ravel()
        if not 0 <= machine < self._asked.shape[0]:
            raise ValueError(f"machine {machine} does not exist (the scenario has "
                             f"{self._asked.shape[0]})")
        if tasks.size and (tasks.min() < 0 or tasks.max() >= self._asked.shape[1]):
            raise ValueError(f"a machine was asked about a task outside 0..."
                             f"{self._asked.shape[1] - 1}")
        sent = tasks[:self.payable(machine, tasks.size)]
        if sent.size:
            np.add.at(self._asked[machine], sent, 1)
            self.calls.ask(machine, sent)
        return int(sent.size)

    def _answered_now(self, machine: int, tasks: np.ndarray, labels: np.ndarray,
                      confidence: np.ndarray) -> None:
        np.add.at(self._answered[machine], tasks, 1)
        self._answers[machine, tasks] = labels  # a task asked twice in one group: the later
        self._confidence[machine, tasks] = confidence
        self._on_answers()

    def labels(self, humans: LabelSet) -> LabelSet:
        """The humans' labels and the machines' answers so far as one label set (the humans'
        set itself before any answer)."""
        return humans if not self.calls.answered.any() else self.calls.mixed_labels(humans)
