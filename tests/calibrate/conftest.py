"""``calibrate`` runs several tests read, each made once per test process: a whole fit costs
10-20 CPU seconds whatever the file's size, so a test that only reads a fit's output (its
scenario, ``.fit.json``, what it printed) reads a shared one instead of fitting its own."""

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


def calibrated(labels: Path, out: Path, *args: str) -> Calibrated:
    """``marketsim calibrate LABELS --out OUT ARGS...`` in this process, its output captured."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(["calibrate", str(labels), "--out", str(out), *args])
    return Calibrated(code, out, stdout.getvalue(), stderr.getvalue())


@pytest.fixture(scope="session")
def two_type_twin(tmp_path_factory: pytest.TempPathFactory) -> Calibrated:
    """``calibrate crowd.csv --truth truth.csv`` on :func:`two_type_crowd`'s crowd (400 tasks,
    two task types): the run the task-type test, the twins'-errors test and the same-seed
    test read, each for its own claims."""
    folder = tmp_path_factory.mktemp("two_type_twin")
    crowd, gold = two_type_crowd(folder)
    return calibrated(crowd, folder / "twin.toml", "--truth", str(gold))


def repeated_crowd(folder: Path) -> tuple[Path, Path]:
    """100 tasks of :func:`two_type_crowd` with a time column (label i at time i), the first
    40 labels given again at the end of the file with a later time and the other answer; the
    labels file and the truth file."""
    crowd, gold = two_type_crowd(folder, times=True, n_tasks=100)
    lines = crowd.read_text().splitlines()
    n = len(lines) - 1
    again = [f"{t},{w},{1 - int(y)},{n + 10_000 + i}"
             for i, (t, w, y, _) in enumerate(r.split(",") for r in lines[1:41])]
    crowd.write_text("\n".join(lines + again) + "\n")
    return crowd, gold


@pytest.fixture(scope="session")
def one_type_twin(tmp_path_factory: pytest.TempPathFactory) -> Calibrated:
    """``calibrate crowd.csv --truth truth.csv --duplicates first --task-types 1 --quiet`` on
    :func:`repeated_crowd`'s file: the run the forced-types tests (one matrix per worker, no
    cross-validation), the ``--quiet`` test and the ``--duplicates first`` test read."""
    folder = tmp_path_factory.mktemp("one_type_twin")
    crowd, gold = repeated_crowd(folder)
    return calibrated(crowd, folder / "one.toml", "--truth", str(gold), "--duplicates", "first",
                      "--task-types", "1", "--quiet")


@pytest.fixture(scope="session")
def no_truth_twin(tmp_path_factory: pytest.TempPathFactory) -> Calibrated:
    """``calibrate crowd.csv --seed 7`` (no truth file, task types chosen by held-out
    likelihood) on :func:`two_type_crowd`'s crowd: the run the held-out test and the
    Dawid-Skene-posterior reference test read."""
    folder = tmp_path_factory.mktemp("no_truth_twin")
    crowd, _ = two_type_crowd(folder)
    return calibrated(crowd, folder / "twin.toml", "--seed", "7")
