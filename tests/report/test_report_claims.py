"""report.md and summary.json claim a difference between arms only when the paired interval
supports it, and show intervals that stay inside [0, 1]."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.report.formatting import num

SCENARIO = """
[scenario]
name = "twins"
seed = 5
replicates = 5
[tasks]
count = 120
prior = [0.5, 0.5]
[workers]
count = 12
[workers.ability]
alpha = 4
beta = 2
low = 0.3
[budget]
edges = 900
batch = 60
[[arms]]
name = "first"
policy = "uniform"
inference = "ds"
[[arms]]
name = "second"
policy = "uniform"
inference = "ds"
[[arms]]
name = "adaptive"
policy = "entropy-greedy"
inference = "ds"
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("claims")
    (root / "twins.toml").write_text(SCENARIO)
    out = root / "run"
    assert main(["run", str(root / "twins.toml"), "--quiet", "--no-figures", "--jobs", "1",
                 "--out", str(out)]) == 0
    return out


def test_identical_arms_name_no_winner(run_dir: Path) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    twin = summary["comparisons"]["arms"]["second"]
    assert summary["comparisons"]["reference"] == "first"
    assert not any(c["detected"] for c in twin["checkpoints"][-3:])
    report = (run_dir / "report.md").read_text()
    short = report.split("## Setup")[0].split("\n", 1)[1]  # the claims, below the title
    assert "fastest" not in short
    for line in short.splitlines():
        if "*second*" in line and "*first*" in line:
            assert "detectably fewer" not in line.split("*second*")[0]
    assert "second vs first: no difference detectable with 5 replicates" in report


def test_intervals_are_student_t_and_inside_zero_one(run_dir: Path) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    for arm in summary["arms"].values():
        for lo, mean, hi in zip(arm["error_low"], arm["error"],
                                arm["error_high"], strict=True):
            assert 0.0 <= lo <= mean <= hi <= 1.0
        reach = arm["edges_to_reach_ci95"]["0.05"]
        assert reach["of"] == 5
    report = (run_dir / "report.md").read_text()
    assert "Student's t with n - 1 degrees of freedom" in report
    assert not re.search(r"\[-\d", report.split("## Paired comparisons")[0])


def test_report_shows_paired_differences_and_labels_to_target(run_dir: Path) -> None:
    report = (run_dir / "report.md").read_text()
    section = report.split("## Paired comparisons against *first*")[1]
    assert "| adaptive |" in section and "labels to 5%" in section
    assert re.search(r"\| adaptive \| [^|]*\[[-+]\d", section)


def test_labels_to_target_have_intervals(run_dir: Path) -> None:
    """Each labels-to-target cell carries the replicates' mean and interval, or says how many
    replicates reached the target (then no interval can be given)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    report = (run_dir / "report.md").read_text()
    table = report.split("## Labels needed to reach")[1].split("## ")[0]
    for name, arm in summary["arms"].items():
        ci = arm["edges_to_reach_ci95"]["0.05"]
        row = next(line for line in table.splitlines() if line.startswith(f"| {name} |"))
        if ci["reached"] == ci["of"]:
            assert f"(replicates' mean {num(ci['mean'])} [" in row, row
        else:
            assert (f"(reached in {ci['reached']} of {ci['of']} replicates)" in row
                    or "(not reached in any of the" in row), row
