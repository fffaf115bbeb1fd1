"""Shared fixtures: small scenarios and the location of the reference data (calibrate's
shared runs are in tests/calibrate/conftest.py); the ``--reverse-order`` option (no test may
depend on another's output or order)."""

from __future__ import annotations

from pathlib import Path

import pytest

from marketsim.data.datasets import data_root

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
