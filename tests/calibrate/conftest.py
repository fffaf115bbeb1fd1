"""What several of calibrate's tests read: one ``marketsim calibrate`` run, made once per test
process (a calibration with a truth simulates every number of task types' twins: seconds)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from marketsim.cli import main
from tests.calibrate.test_calibrate_types import two_type_crowd


@dataclass(frozen=True)
class Calibrated:
    """A finished ``calibrate`` run: exit code, the scenario written and what it printed."""

    code: int
    out: Path
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def two_type_twin(tmp_path_factory: pytest.TempPathFactory) -> Calibrated:
    """``marketsim calibrate crowd.csv --truth truth.csv`` on :func:`two_type_crowd`'s crowd
    (400 tasks, two task types): the run both the task-type test and the twins'-errors test
    read, each for its own claims."""
    folder = tmp_path_factory.mktemp("two_type_twin")
    crowd, gold = two_type_crowd(folder)
    out = folder / "twin.toml"
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(["calibrate", str(crowd), "--truth", str(gold), "--out", str(out)])
    return Calibrated(code, out, stdout.getvalue(), stderr.getvalue())
