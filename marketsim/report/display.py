"""Which display a command's progress gets, chosen in one place for ``marketsim run``'s
observers (:mod:`marketsim.report.progress`) and a command's steps
(:mod:`marketsim.report.step_progress`): nothing with ``--quiet``, a live display (a bar, the
dashboard) when stderr is a terminal, otherwise plain lines (logs and pipes: no ANSI codes, no
redraws), written by :class:`PlainLines`.
"""

from __future__ import annotations

import sys
from typing import IO

from rich.console import Console


class PlainLines:
    """Lines on a stream (stderr by default), best effort: a closed pipe or stream does not
    stop the command whose progress they tell."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr

    def _say(self, line: str) -> None:
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # closed pipe or stream: progress is best effort
            pass


def choose_display(quiet: bool, console: Console | None = None) -> Console | IO[str] | None:
    """Where a command's progress goes: nowhere (``None``) when ``quiet``; the console (stderr
    by default) for a live display when it is a terminal that redraws; otherwise the console's
    stream, for plain lines."""
    if quiet:
        return None
    console = console if console is not None else Console(stderr=True)
    if console.is_terminal and not console.is_dumb_terminal:
        return console
    return console.file if console.file is not None else sys.stderr
