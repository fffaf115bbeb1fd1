"""Atomic writes: a temp file in the target folder, then ``os.replace``.

An interrupted run, or a failing write (disk full), never leaves a half-written file and keeps
the previous version of the file intact. The file gets the mode any tool gives a new file,
``0o666`` less the process's umask (``tempfile.mkstemp`` alone would leave it ``0o600``).

A durable write (the default) also flushes the file to the disk (``fsync``) before the rename,
so it survives a power cut or a crash of the system, not only of the process. The run's
renderings (report, figures: ``marketsim report`` draws them again from ``summary.json``)
and cheap unit checkpoints (:func:`~marketsim.study.checkpoints.save_unit`) are written
without it: an fsync costs milliseconds of waiting for the disk (about 5 ms each, measured on
the project's machine), as much as a small unit's whole simulation (lesson 6's cheapest
take 5 ms).
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without changing it where the system allows.

    Linux shows it in ``/proc/self/status`` (``Umask:``). Elsewhere the only way is to set it
    and set it back (``os.umask``), which another thread creating a file in between would see:
    the temporary value is the strict ``0o077``, so such a file is at worst too private, and
    the lock keeps our own writers from racing each other.
    """
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def write_bytes_atomic(path: str | Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` atomically; ``durable``: flushed to the disk first (an
    ``fsync``), not only handed to the system.

    Without ``durable``, a crash of the process still leaves the old file or the new one,
    never a mix; a power cut within the system's write-back delay (30 s on Linux by default)
    may leave the file missing or empty, so use it only for a file that is rebuilt, or whose
    loss is detected and repaired, when it is read.

    An ``OSError`` (disk full, permission denied) leaves the previous file untouched, removes
    the temporary file and is re-raised with ``filename`` set to ``path``, so the command line
    can name the file in its one-line error.
    """
    path = Path(path)
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        mode = 0o666 & ~current_umask()
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        else:  # pragma: no cover - Windows before Python 3.13
            os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        if isinstance(exc, OSError) and exc.filename is None:
            raise type(exc)(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise


def write_text_atomic(path: str | Path, text: str, *, durable: bool = True) -> None:
    """Write UTF-8 ``text`` to ``path`` atomically (``durable``: :func:`write_bytes_atomic`)."""
    write_bytes_atomic(path, text.encode("utf-8"), durable=durable)


def write_json_atomic(path: str | Path, obj: Any, *, durable: bool = True) -> None:
    """Write ``obj`` as indented JSON atomically (``durable``: :func:`write_bytes_atomic`)."""
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=False, allow_nan=False) + "\n",
                      durable=durable)


def write_csv_atomic(
    path: str | Path, header: Sequence[str], rows: Iterable[Sequence[Any]]
) -> None:
    """Write a CSV with ``header`` atomically (LF line endings)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    write_text_atomic(path, buf.getvalue())
