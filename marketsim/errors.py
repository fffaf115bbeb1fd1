"""Errors a user can act on: one line, naming the file, key or line, and what is allowed."""

from __future__ import annotations

EXIT_OK = 0
EXIT_BAD_INPUT = 2
#: A file could not be written or read (disk full, permission denied): sysexits' EX_IOERR.
EXIT_IO_ERROR = 74
EXIT_INTERRUPTED = 130


class InputError(ValueError):
    """Bad user input (file, option, scenario key). The CLI prints it on one line and exits 2."""

    def __init__(self, message: str, *, source: str | None = None, where: str | None = None):
        self.source = source
        self.where = where
        self.detail = message
        prefix = ""
        if source:
            prefix = f"{source}"
            if where:
                prefix += f":{where}"
            prefix += ": "
        super().__init__(prefix + message)
#: A simulation could not finish: an assignment policy failed (raised, exited, returned an
#: unusable ranking), the market stopped handing out tasks, or the Dask cluster running the
#: units went away (``ClusterError``). sysexits' EX_SOFTWARE.
EXIT_SIMULATION_ERROR = 70


class SimulationError(RuntimeError):
    """A unit could not be simulated. The CLI prints the one-line message (and ``details``, the
    policy's own traceback when there is one, below it) and exits 70."""

    def __init__(self, message: str, details: str = "") -> None:
        # Both in ``args``: SimPy re-raises a process's error as ``type(exc)(*exc.args)`` and
        # pickling (units in worker processes) rebuilds it the same way.
        super().__init__(message, details)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return self.message

    def with_context(self, context: str) -> SimulationError:
        """The same error with ``context`` (e.g. the arm and replicate) in front."""
        return type(self)(f"{context}: {self.message}", self.details)


class PolicyError(SimulationError):
    """An assignment policy raised, called ``sys.exit``, or returned an unusable ranking."""


class MarketStuckError(SimulationError):
    """A full round of arrivals handed out no task while budget remained."""


class ClusterError(SimulationError):
    """The Dask cluster could not finish the study: the scheduler went away, or a unit was lost
    with more workers than Dask retries. Units finished before stay checkpointed; exit 70."""
