"""Shared by the report tests: the priced scenario (two tiers at two prices, so money differs
from labels) and its sweep over the tier prices, run once per test process with its figures
(read-only: a test that changes the folder copies it first)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from marketsim.cli import main

#: Money and simulated time beside labels: three figures per report.
PRICED = """
[scenario]
name = "priced"
seed = 4
replicates = 2

[tasks]
count = 40
classes = 2

[workers]
count = 6

[workers.tiers]
cuts = [0.85]
prices = [1.0, 2.0]

[budget]
edges = 160
batch = 20

[[arms]]
name = "uniform"
policy = "uniform"

[[arms]]
name = "qualified"
policy = { name = "qasca", min_tier = 1 }
"""

#: A sweep over a list-valued key: the tier prices.
PRICED_SWEEP = PRICED + """
[sweep]
workers.tiers.prices = [[1, 1.5], [1, 4]]
"""


def figures(folder: Path) -> list[str]:
    """The PNG and SVG files anywhere under ``folder``."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.suffix in
                  (".png", ".svg"))


def dangling_links(markdown: Path) -> list[str]:
    """The relative link targets of ``markdown`` (anchors stripped) that are not files."""
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", markdown.read_text())
    return [t for t in targets if not (markdown.parent / t).exists()]


@pytest.fixture(scope="session")
def priced_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run folder of :data:`PRICED_SWEEP`, figures drawn (read-only)."""
    base = tmp_path_factory.mktemp("priced_sweep")
    (base / "s.toml").write_text(PRICED_SWEEP)
    assert main(["run", str(base / "s.toml"), "--out", str(base / "run"), "--quiet",
                 "--jobs", "1"]) == 0
    return base / "run"
