"""A ``calibrate`` run made in this process and what it left: the shared runs of
tests/conftest.py and the tests that make their own read it alike."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from marketsim.cli import main


@dataclass(frozen=True)
class Calibrated:
    """A finished ``calibrate`` run: exit code, the scenario written and what it printed."""

    code: int
    out: Path
    stdout: str
    stderr: str


def calibrated(labels: Path, out: Path, *args: str) -> Calibrated:
    """``marketsim calibrate LABELS --out OUT ARGS...`` in this process, its output captured."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(["calibrate", str(labels), "--out", str(out), *args])
    return Calibrated(code, out, stdout.getvalue(), stderr.getvalue())
