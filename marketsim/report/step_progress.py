"""Progress of a command's long steps (``marketsim calibrate``): a bar per step on a terminal's
stderr, one plain line per step elsewhere (logs and pipes), nothing with ``--quiet``.

A command wraps each step in ``with steps.step(description, total) as advance:`` and calls
``advance()`` once per unit of work done (a world fitted, a twin simulated); a bar shows the
units done, the time spent and the time left. The functions doing the work take ``advance``
as an optional callback, so they know nothing of the display.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from marketsim.report.display import PlainLines, choose_display

#: What a step's work calls once per unit done (``advance(2)``: two units).
Advance = Callable[..., None]


def no_progress(units: int = 1) -> None:
    """The ``advance`` of work run without a display."""


class Steps(Protocol):
    """What a command reports its steps to."""

    def step(self, description: str, total: int) -> AbstractContextManager[Advance]:
        """A context manager around one step of ``total`` units; yields its ``advance``."""


class QuietSteps:
    """Shows nothing (``--quiet``)."""

    @contextmanager
    def step(self, description: str, total: int) -> Iterator[Advance]:
        """Nothing shown; ``advance`` does nothing."""
        yield no_progress


class PlainSteps(PlainLines):
    """One line when a step starts and one when it ends, with its time (logs and pipes: no
    ANSI codes, no redraws)."""

    @contextmanager
    def step(self, description: str, total: int) -> Iterator[Advance]:
        """``marketsim: <description>...`` then ``marketsim: <description>: done in 1.2 s``."""
        started = time.perf_counter()
        self._say(f"marketsim: {description}...")
        yield no_progress
        self._say(f"marketsim: {description}: done in {time.perf_counter() - started:.1f} s")


class BarSteps:
    """A rich progress bar per step on the console (stderr), left on screen when done."""

    def __init__(self, console: Console) -> None:
        self.console = console

    @contextmanager
    def step(self, description: str, total: int) -> Iterator[Advance]:
        """A bar of ``total`` units for the step, completed when the step ends."""
        bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                       console=self.console, transient=False)
        with bar:
            task = bar.add_task(description, total=max(total, 1))

            def advance(units: int = 1) -> None:
                bar.advance(task, units)

            yield advance
            bar.update(task, completed=max(total, 1))


def make_steps(quiet: bool, console: Console | None = None) -> Steps:
    """:class:`QuietSteps` when ``quiet``; :class:`BarSteps` when the console (stderr by
    default) is a terminal; otherwise :class:`PlainSteps` lines on stderr (chosen as
    ``marketsim run`` chooses its display: :func:`~marketsim.report.display.choose_display`)."""
    where = choose_display(quiet, console)
    if where is None:
        return QuietSteps()
    return BarSteps(where) if isinstance(where, Console) else PlainSteps(where)
