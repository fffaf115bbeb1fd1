"""Progress observers for ``marketsim run``: a live terminal dashboard, plain lines, or silence.

Every observer has the same four methods, called by the runner's caller:

- ``start(study, run_dir)`` once before the first unit, with the study's outline (its name,
  arms, replicates, labels per unit and headline error: all a display needs of the scenario);
- ``refresh(replicate, arm, point)`` at every refresh of a running unit's inference service
  (only when units run in this process, i.e. ``jobs == 1``);
- ``unit_done(unit, finished, total)`` whenever a (replicate, arm) unit finishes (or is
  reloaded from a checkpoint when resuming);
- ``stop(interrupted)`` once at the end.

:func:`make_observer` picks one: :class:`QuietProgress` with ``--quiet``,
:class:`LiveDashboard` on a terminal, :class:`PlainProgress` otherwise (CI logs, pipes).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Protocol

from rich.console import Console

from marketsim.record.curves import CurvePoint
from marketsim.record.metric import ERROR_RATE
from marketsim.record.units import UnitResult
from marketsim.report.dashboard import LiveDashboard
from marketsim.report.display import PlainLines, choose_display
from marketsim.report.formatting import DASH, clean_name, count_of, fmt_error
from marketsim.report.study_state import headline_metric
from marketsim.scenario.outline import StudyOutline


class RunObserver(Protocol):
    """What ``marketsim run`` calls while a study runs."""

    def start(self, study: StudyOutline, run_dir: Path | str | None) -> None:
        """The study starts (``run_dir`` is None for a run that writes no folder)."""

    def refresh(self, replicate: int, arm: int, point: CurvePoint) -> None:
        """A unit's inference service refreshed and recorded ``point`` (live units only)."""

    def unit_done(self, unit: UnitResult, finished: int, total: int) -> None:
        """``unit`` finished; ``finished`` of ``total`` units are done."""

    def stop(self, interrupted: bool) -> None:
        """The study ended (``interrupted``: by Ctrl-C or an error)."""


class QuietProgress:
    """Prints nothing (``--quiet``, ``--json``)."""

    def start(self, study: StudyOutline, run_dir: Path | str | None) -> None:
        """Nothing."""

    def refresh(self, replicate: int, arm: int, point: CurvePoint) -> None:
        """Nothing."""

    def unit_done(self, unit: UnitResult, finished: int, total: int) -> None:
        """Nothing."""

    def stop(self, interrupted: bool) -> None:
        """Nothing."""


class PlainProgress(PlainLines):
    """One plain line per finished unit, for logs and pipes (no ANSI codes, no redraws)."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__(stream)
        self.names: list[str] = []
        self.metric = ERROR_RATE
        self.finished = 0
        self.total = 0

    def start(self, study: StudyOutline, run_dir: Path | str | None) -> None:
        """Announce the study."""
        self.names = list(study.arms)
        self.metric = headline_metric(study)
        self.total = study.units
        where = f" -> {clean_name(str(run_dir))}" if run_dir is not None else ""
        self._say(
            f"marketsim: {clean_name(study.name)!r}: "
            f"{count_of(study.replicates, 'replicate')} x "
            f"{count_of(len(study.arms), 'arm')} = {self.total} units{where}"
        )

    def refresh(self, replicate: int, arm: int, point: CurvePoint) -> None:
        """Nothing (one line per unit is enough for a log)."""

    def unit_done(self, unit: UnitResult, finished: int, total: int) -> None:
        """``[3/8] replicate 1 arm 'uniform': final error 0.0123 (4.2s)``."""
        self.finished, self.total = finished, total
        name = self.names[unit.arm] if 0 <= unit.arm < len(self.names) else f"#{unit.arm}"
        final = fmt_error(unit.rows[-1].error_rate) if unit.rows else DASH
        if final == DASH:
            final = "n/a"
        self._say(
            f"[{finished}/{total}] replicate {unit.replicate} arm {clean_name(name)!r}: "
            f"final {self.metric.short} {final} ({unit.seconds:.1f}s)"
        )

    def stop(self, interrupted: bool) -> None:
        """Say so if the run was interrupted."""
        if interrupted:
            self._say(f"marketsim: interrupted after {self.finished}/{self.total} units")


def make_observer(quiet: bool, console: Console | None = None) -> RunObserver:
    """``QuietProgress`` when ``quiet``; a ``LiveDashboard`` when the console (stderr by
    default) is a terminal; otherwise ``PlainProgress`` lines on stderr
    (:func:`~marketsim.report.display.choose_display`)."""
    where = choose_display(quiet, console)
    if where is None:
        return QuietProgress()
    return LiveDashboard(where) if isinstance(where, Console) else PlainProgress(where)
