"""Python warnings raised while a command computes, shown to the user as notes: one
``marketsim: note:`` line per distinct message on stderr, without the internal file and line
Python's default display prints (and prints again for every place that warns the same)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager


def note_lines(messages: list[str]) -> list[str]:
    """Each message on one line (white space collapsed), in order, each once."""
    return list(dict.fromkeys(" ".join(m.split()) for m in messages))


def print_notes(notes: list[str]) -> None:
    """Print each note as one ``marketsim: note:`` line on stderr."""
    for note in notes:
        print(f"marketsim: note: {note}", file=sys.stderr)


#: Warnings for developers, hidden by Python's default filters: not shown as notes either.
DEVELOPER_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                      ResourceWarning)


@contextmanager
def warnings_as_notes() -> Iterator[None]:
    """Record every warning the block raises (each time it is raised: none is lost to
    Python's once-per-place registry); when the block ends normally, print each distinct one as
    one ``marketsim: note:`` line (an error leaves the block with its own one line)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    print_notes(note_lines([str(w.message) for w in caught
                            if not issubclass(w.category, DEVELOPER_WARNINGS)]))
