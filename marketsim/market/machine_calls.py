"""The machine annotators' call service: a requester asks machine ``m`` about tasks, each
call is a label of ``budget.edges`` paid on the market's ledger when sent, starts when the
machine's rate limit allows, and its answer arrives ``latency`` later; the answers are kept in
the service's own log.

A SimPy process per request (:meth:`MachineCalls.ask`): a request of ``n`` tasks is ``n``
calls, started ``1 / rate_limit`` apart after the machine's previous call (at once without a
rate limit), each answered ``latency`` after its start. The answers are delivered at their own
times (the calls answered at one instant together: one event without a rate limit), each
group received on the ledger, logged and passed to ``on_answers`` (the market's hook); the
process returns the labels and confidences when the last answer arrives. Each answer is
logged with its task, its machine's
worker id (machines come after the humans: ``first_id + m``), label, confidence and the times
it was sent and answered, so an aggregator can tell machines from humans
(:meth:`MachineCalls.labels`). A machine is always available and never tired: nothing but
its rate limit and the money budget refuses a call.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

from marketsim.data.labels import LabelSet
from marketsim.data.mixed_labels import with_machine_labels
from marketsim.machines.panel import MachinePanel
from marketsim.market.ledger import Ledger, LedgerError


class MachineCalls:
    """The calls of one market to its machines, their books and their log."""

    def __init__(self, env: simpy.Environment, panel: MachinePanel, ledger: Ledger,
                 first_id: int,
                 on_answers: Callable[[int, np.ndarray, np.ndarray, np.ndarray], None]
                 | None = None) -> None:
        self.env = env
        #: Called with (machine, tasks, labels, confidences) as each group of answers arrives.
        self.on_answers = on_answers
        self.panel = panel
        self.ledger = ledger
        self.first_id = int(first_id)
        options = [m.options for m in panel.machines]
        self.price = np.array([o.price for o in options], dtype=np.float64)
        self.latency = np.array([o.latency for o in options], dtype=np.float64)
        #: Least time between two calls' starts per machine (0: no rate limit).
        self.spacing = np.array([0.0 if o.rate_limit is None else 1.0 / o.rate_limit
                                 for o in options], dtype=np.float64)
        #: When each machine may start its next call.
        self.free_at = np.zeros(len(options), dtype=np.float64)
        self.sent = np.zeros(len(options), dtype=np.int64)
        self.answered = np.zeros(len(options), dtype=np.int64)
        self._log: list[tuple[np.ndarray, ...]] = []

    def cost(self, machine: int, n_calls: int) -> float:
        """What ``n_calls`` calls to ``machine`` cost."""
        return float(self.price[machine]) * n_calls

    def affordable(self, machine: int, n_calls: int) -> bool:
        """Whether the money budget pays ``n_calls`` more calls to ``machine``."""
        return self.ledger.affordable(self.cost(machine, n_calls))

    def ask(self, machine: int, tasks: np.ndarray) -> simpy.Process:
        """Ask ``machine`` about each of ``tasks`` (one call each): a process whose value is
        (labels, confidences) once the last answer is in."""
        return self.env.process(self._calls(machine, np.asarray(tasks, dtype=np.int64)))

    def _calls(self, machine: int, tasks: np.ndarray) -> Generator[Any, Any, tuple[
            np.ndarray, np.ndarray]]:
        now = float(self.env.now)
        self.ledger.send_calls(tasks.size, self.cost(machine, tasks.size), now)
        first = max(now, float(self.free_at[machine]))
        starts = first + self.spacing[machine] * np.arange(tasks.size, dtype=np.float64)
        if tasks.size:
            self.free_at[machine] = starts[-1] + self.spacing[machine]
        self.sent[machine] += tasks.size
        answered_at = starts + self.latency[machine]
        labels, confidence = self.panel.ask(machine, tasks)
        worker = self.first_id + machine
        # one group per instant at which answers arrive (answered_at is non-decreasing)
        cuts = np.flatnonzero(np.diff(answered_at)) + 1
        for group in np.split(np.arange(tasks.size), cuts) if tasks.size else ():
            at = float(answered_at[group[-1]])
            if at > self.env.now:
                yield self.env.timeout(at - float(self.env.now))
            self._deliver(machine, worker, tasks[group], labels[group], confidence[group],
                          now, starts[group], answered_at[group])
        return labels, confidence

    def _deliver(self, machine: int, worker: int, tasks: np.ndarray, labels: np.ndarray,  # noqa: PLR0913 - one group's columns
                 confidence: np.ndarray, asked: float, starts: np.ndarray,
                 answered_at: np.ndarray) -> None:
        """A group of answers arrived: received on the ledger, logged, passed on."""
        self.ledger.receive_calls(tasks.size, float(self.env.now))
        self.answered[machine] += tasks.size
        self._log.append((tasks, np.full(tasks.size, worker, dtype=np.int64), labels,
                          confidence, np.full(tasks.size, asked), starts, answered_at))
        if self.on_answers is not None:
            self.on_answers(machine, tasks, labels, confidence)

    @property
    def in_flight(self) -> int:
        """Calls sent and not answered yet."""
        return int((self.sent - self.answered).sum())

    def labels(self) -> dict[str, np.ndarray]:
        """The answers received, in the order they were logged: ``tasks``, ``workers`` (the
        machines' worker ids), ``labels``, ``confidence``, ``asked`` (when the request was
        made), ``started`` and ``answered`` (simulated times)."""
        names = ("tasks", "workers", "labels", "confidence", "asked", "started", "answered")
        if not self._log:
            return {n: np.zeros(0, dtype=np.float64 if i >= 3 else np.int64)
                    for i, n in enumerate(names)}
        return {n: np.concatenate([row[i] for row in self._log]) for i, n in enumerate(names)}

    def sources(self) -> tuple[str, ...]:
        """Each worker id's source: ``'human'`` for the ``first_id`` humans, then each
        machine's name (the per-worker ``sources`` a mixed label set carries; its per-label
        ``confidence`` is :meth:`labels`' for the machines' labels, NaN for the humans')."""
        return ("human",) * self.first_id + self.panel.names

    def mixed_labels(self, humans: LabelSet) -> LabelSet:
        """The humans' labels (the market's label log, ``first_id`` workers) and the answers
        received so far as one label set with ``sources`` and ``confidence`` (humans' NaN),
        what an estimator of a mixed crowd reads (``ds-confidence``)."""
        if humans.n_workers != self.first_id:
            raise ValueError(f"the humans' labels have {humans.n_workers} workers; the machines "
                             f"come after {self.first_id}")
        log = self.labels()
        return with_machine_labels(humans, log["tasks"], log["workers"], log["labels"],
                                   log["confidence"], self.panel.names)

    def check_books(self, when: str) -> None:
        """The calls' invariants: per machine, the calls sent = answered + in flight and the
        log's; the ledger's money for calls = the calls sent × each machine's price; no two
        starts of a machine closer than its rate limit allows; every answer ``latency`` after
        its start, never before it was asked."""
        log = self.labels()
        counts = np.bincount(log["workers"] - self.first_id, minlength=self.sent.size)
        if (counts != self.answered).any() or (self.answered > self.sent).any():
            raise LedgerError(f"{when}: machine answers logged {counts.tolist()}, counted "
                              f"{self.answered.tolist()}, calls sent {self.sent.tolist()}")
        expected = float(np.dot(self.sent, self.price))
        if not math.isclose(self.ledger.calls_spent, expected, rel_tol=1e-9, abs_tol=1e-9):
            raise LedgerError(f"{when}: money paid for machine calls "
                              f"{self.ledger.calls_spent!r} is not the calls' prices {expected!r}")
        machine = log["workers"] - self.first_id
        if (log["started"] < log["asked"]).any() or not np.allclose(
                log["answered"], log["started"] + self.latency[machine]):
            raise LedgerError(f"{when}: a machine answer came before its call or not "
                              "latency after it")
        order = np.lexsort((log["started"], machine))
        gaps = np.diff(log["started"][order])
        same = np.diff(machine[order]) == 0
        limit = self.spacing[machine[order][1:]]
        if (same & (gaps < limit * (1 - 1e-9))).any():
            raise LedgerError(f"{when}: a machine started calls faster than its rate limit")
