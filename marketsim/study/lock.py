"""One writer per run folder: an exclusive ``flock`` on ``RUN_DIR/.lock`` while a run writes.

``flock`` locks belong to the open file: the kernel releases them when the process ends, however
it ends (normal exit, exception, SIGKILL), so a stale lock never blocks a later resume. The file
itself stays (removing it would let two runs lock two different files).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from marketsim.errors import InputError

LOCK_NAME = ".lock"


@contextmanager
def folder_lock(run_dir: Path) -> Iterator[None]:
    """Hold ``run_dir``'s lock for the block (creating the folder); a folder another process
    holds is refused at once, naming that process."""
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise InputError(f"{run_dir} is in use by another run (pid {holder})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
