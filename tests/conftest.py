"""Shared fixtures: small scenarios, the location of the reference data and runs several
tests read (made once per test process); the ``--reverse-order`` option (no test may depend on
another's output or order)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.data.datasets import data_root
from tests.calibrate.test_calibrate_types import two_type_crowd

ROOT = Path(__file__).resolve().parents[1]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--reverse-order", action="store_true",
        help="run the selected tests in reverse order: a test that passes only after another "
        "one (its output, its state) then fails",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--reverse-order"):
        items.reverse()


def shared_data() -> Path:
    """Folder of the reference data (``$MARKETSIM_DATA`` or ``../shared/data``; see
    :mod:`marketsim.data.datasets`)."""
    return data_root() or ROOT.parent / "shared" / "data"


SMALL_SCENARIO = """
[scenario]
name = "small test"
seed = 11
replicates = 2

[tasks]
count = 120
classes = 2
prior = [0.75, 0.25]

[workers]
count = 8

[workers.service]
mean = {service}

[budget]
edges = 600
batch = 40

[[arms]]
name = "uniform"
policy = "uniform"
inference = "one-coin-shifted-beta"

[[arms]]
name = "entropy"
policy = "entropy-greedy"
inference = {{ method = "ds", class_prior = "estimate" }}
"""


@pytest.fixture
def small_scenario_path(tmp_path: Path) -> Path:
    """A two-arm scenario that runs in well under a second, with labelling time."""
    path = tmp_path / "small.toml"
    path.write_text(SMALL_SCENARIO.format(service=2.0))
    return path


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
