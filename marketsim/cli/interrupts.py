"""Ctrl-C in the command line: held while slow modules are imported, and recognised when a
library reports it as another exception, so that an interrupt always exits 130 without a
traceback."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold Ctrl-C while the scientific stack (numpy, scipy, scikit-learn...) is imported, then
    raise it as ``KeyboardInterrupt`` at the end of the block.

    An interrupt that lands inside an extension module's initialisation can make CPython end
    the process by re-raising SIGINT (exit status -2) even after ``main`` handled it, instead
    of the promised 130; the imports take about a second, so the user hardly notices the wait.
    Outside the main thread (signal handlers cannot be set there) the block runs unguarded.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt


def import_plotting() -> None:
    """Import matplotlib's drawing modules now, with Ctrl-C held.

    The report imports them on its first figure (only the processes that draw load them).
    An interrupt landing inside matplotlib's class definitions comes out as ``RuntimeError:
    Error calling __set_name__``, not ``KeyboardInterrupt``: a traceback and exit 1 where the
    user pressed Ctrl-C. Imported here, the report's own imports are then lookups.
    """
    with interrupts_deferred():
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
        import matplotlib.ticker  # noqa: F401


def caused_by_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was raised while handling or because of, a ``KeyboardInterrupt``
    (a library that turns the interrupt into its own error, as class creation does)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        # ``raise ... from None`` says the earlier exception is unrelated: not followed.
        suppressed = current.__suppress_context__ and current.__cause__ is None
        current = None if suppressed else current.__cause__ or current.__context__
    return False
