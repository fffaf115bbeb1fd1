"""How long a hand-out takes and whether it is answered at all (``[workers.service]``).

A worker handed a label is busy for its labelling time — exponential with mean
``service.mean``, times the worker's own speed factor when ``speed_spread`` > 0 — and then
submits; with probability ``abandon`` they leave it instead, after the same time, unanswered.
Each hand-out is its own SimPy process, so a slow worker holds up no one but themselves (their
own arrivals while busy are lost). Without these keys the labelling times are the draws they
always were and no other random number is drawn.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import simpy

from marketsim.scenario.crowd_specs import ServiceSpec


class Desk(Protocol):
    """Where a hand-out's end is reported: the market."""

    def receive(self, task: int, worker: int) -> None:
        """``worker``'s answer to ``task`` came in."""

    def receive_gold(self, question: int, worker: int) -> None:
        """``worker``'s answer to gold ``question`` came in."""

    def abandoned(self, worker: int, task: int, question: int | None) -> None:
        """``worker`` left ``task`` (or gold ``question``) unanswered."""


def draw_speeds(spread: float, n_workers: int, rng: np.random.Generator) -> np.ndarray:
    """Each worker's factor on the mean labelling time, ``log s_j ~ N(−spread²/2, spread²)``
    (mean 1), one draw per worker."""
    return np.exp(spread * rng.standard_normal(n_workers) - spread * spread / 2.0)


class Visits:
    """The hand-outs in progress: who is busy, each one's labelling time, and whether it is
    delivered or abandoned (reported to ``desk``).

    ``desk`` is the market, which owns these visits: pass it as a ``weakref.proxy`` so that
    the two make no reference cycle, and a finished market's labels and graph are freed at
    once rather than at Python's next full garbage collection (a worker process running many
    units otherwise held several of them)."""

    def __init__(self, env: simpy.Environment, spec: ServiceSpec, n_workers: int,
                 speeds_rng: np.random.Generator, abandon_rng: np.random.Generator,
                 desk: Desk) -> None:
        self.env = env
        self.mean = spec.mean
        #: Per-worker factors on the labelling time (``None``: every worker equally fast).
        self.speed = (None if spec.speed_spread == 0
                      else draw_speeds(spec.speed_spread, n_workers, speeds_rng).tolist())
        self.abandon_p = spec.abandon
        self.rng = abandon_rng
        self.desk = desk
        #: Whether each worker is labelling now (a ``bytearray``: read once per arrival, where a
        #: numpy scalar read costs several times more).
        self.busy = bytearray(n_workers)

    def time(self, rng: np.random.Generator, worker: int) -> float:
        """The labelling time of ``worker``'s next hand-out, drawn from ``rng`` (the arrivals
        stream: the same draw as before speeds existed)."""
        if self.mean <= 0:
            return 0.0
        service = rng.exponential(self.mean)
        return service if self.speed is None else service * self.speed[worker]

    def start(self, worker: int, task: int, question: int | None, service: float) -> None:
        """``worker`` was handed ``task`` (or gold ``question``): it ends after ``service``
        time units (at once when 0), answered or, with probability ``abandon``, abandoned."""
        if not (self.abandon_p or service or question is not None):  # answered at once: the
            self.desk.receive(task, worker)  # common case, once per label, without _end
            return
        abandoned = bool(self.abandon_p) and self.rng.random() < self.abandon_p
        if service > 0:
            self.env.process(self._visit(worker, task, question, service, abandoned))
        else:
            self._end(worker, task, question, abandoned)

    def _end(self, worker: int, task: int, question: int | None, abandoned: bool) -> None:
        """The hand-out ends: abandoned, or the answer to ``task`` (or gold ``question``)."""
        if abandoned:
            self.desk.abandoned(worker, task, question)
        elif question is None:
            self.desk.receive(task, worker)
        else:
            self.desk.receive_gold(question, worker)

    def _visit(self, worker: int, task: int, question: int | None, service: float,
               abandoned: bool) -> Any:
        self.busy[worker] = 1
        yield self.env.timeout(service)
        self.busy[worker] = 0
        self._end(worker, task, question, abandoned)
