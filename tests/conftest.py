"""Shared fixtures: small scenarios, the location of the reference data and the ``calibrate``
runs several tests read (made once per test process: a whole fit costs 10-20 CPU seconds
whatever the file's size, so a test that only reads a fit's output reads a shared one); the
``--reverse-order`` option (no test may depend on another's output or order)."""

from __future__ import annotations

from pathlib import Path

import pytest

from marketsim.data.datasets import data_root
from tests.calibrate._calibrated import Calibrated, calibrated
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
