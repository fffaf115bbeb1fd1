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
