"""Numbers are rounded, not truncated, and printed the same way in report.md and sweep.md;
counts agree with their nouns; the three "labels to 5 %" figures say which is which (issue #31,
defect 7)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.report.formatting import count_of, num, signed

SWEEP = """
[scenario]
name = "rounding"
seed = 101
replicates = 3
[tasks]
count = 120
prior = [0.75, 0.25]
[workers]
count = 20
[budget]
edges = 960
batch = 30
[sweep]
budget.batch = [30, 60]
[[arms]]
name = "uniform"
policy = "uniform"
inference = "one-coin-shifted-beta"
[[arms]]
name = "entropy-greedy"
policy = "entropy-greedy"
inference = "one-coin-shifted-beta"
"""


def test_counts_are_rounded_half_away_from_zero() -> None:
    assert num(766.67) == "767" and num(766.4) == "766" and num(2.5) == "3"
    assert num(1234.5) == "1,235" and num(-506.5) == "-507"
    assert signed(-506.67) == "-507" and signed(0.2) == "+0" and signed(1499.5) == "+1,500"
    assert count_of(1, "replicate") == "1 replicate"
    assert count_of(0, "replicate") == "no replicate"
    assert count_of(4, "replicate") == "4 replicates"


def test_the_same_interval_prints_the_same_in_report_and_sweep(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(SWEEP)
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "run"),
                 "--quiet", "--no-figures"]) == 0
    sweep_md = (tmp_path / "run" / "sweep.md").read_text()
    compared = 0
    for point, batch in (("p000", 30), ("p001", 60)):
        report = (tmp_path / "run" / "points" / point / "report.md").read_text()
        for arm in ("uniform", "entropy-greedy"):
            row = next(line for line in sweep_md.splitlines()
                       if line.startswith(f"| {batch} | {arm} |"))
            cell = row.split("|")[4].strip()  # labels to 5 %
            if "[" not in cell:
                continue
            table = report.split("## Labels needed to reach")[1].split("## ")[0]
            mine = next(line for line in table.splitlines() if line.startswith(f"| {arm} |"))
            assert f"(replicates' mean {cell})" in mine, (cell, mine)
            compared += 1
    assert compared >= 2


@pytest.mark.parametrize("replicates", [1, 2])
def test_no_count_disagrees_with_its_noun(tmp_path: Path, replicates: int,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    text = SWEEP.split("[sweep]")[0].replace("replicates = 3", f"replicates = {replicates}")
    (tmp_path / "s.toml").write_text(text + '[[arms]]\nname = "u"\npolicy = "uniform"\n')
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "run")]) == 0
    out = (tmp_path / "run" / "report.md").read_text() + capsys.readouterr().err
    assert not re.search(r"\b[01] (replicates|arms|workers)\b", out), re.findall(
        r".{40}\b[01] (?:replicates|arms)\b.{20}", out)


def test_report_says_which_labels_to_target_figure_is_which(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(SWEEP.replace("budget.batch = [30, 60]",
                                                   "budget.batch = [30]"))
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "run"),
                 "--quiet", "--no-figures"]) == 0
    report = (tmp_path / "run" / "points" / "p000" / "report.md").read_text()
    targets = report.split("## Labels needed to reach")[1].split("\n## ")[0]
    assert "| labels to 5 % (mean curve) |" in targets
    assert "*replicates' mean*" in targets and "(replicates' mean " in targets
    paired = report.split("## Paired comparisons")[1].split("\n## ")[0]
    assert "| difference in labels to 5% |" in paired
    assert "neither the mean curve's nor the replicates' mean" in paired
