"""``[report] targets``: a scenario sets its own target errors; summary.json, report.md,
sweep.csv/sweep.md and the plots use them (issue #31, point 9)."""

from __future__ import annotations

import csv
import json
import tomllib
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.report.sweep import sweep_rows
from marketsim.report.sweep_plot import sweep_figure
from marketsim.scenario.parser import parse_scenario

SCENARIO = """
[scenario]
name = "own targets"
seed = 9
replicates = 2
[tasks]
count = 100
[workers]
count = 10
[budget]
edges = 500
batch = 50
[report]
targets = [0.02, 0.1]
[[arms]]
name = "uniform"
policy = "uniform"
[[arms]]
name = "entropy-greedy"
policy = "entropy-greedy"
"""


def test_a_scenario_sets_its_own_targets(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(SCENARIO)
    out = tmp_path / "run"
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(out), "--quiet",
                 "--no-figures"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    for arm in summary["arms"].values():
        assert list(arm["edges_to_reach"]) == ["0.1", "0.02"]  # largest first
        assert list(arm["edges_to_reach_ci95"]) == ["0.1", "0.02"]
    report = (out / "report.md").read_text()
    assert "## Labels needed to reach 10 % / 2 % error" in report
    assert "| labels to 10 % (mean curve) |" in report
    assert "difference in labels to 10%" in report and "labels to 5 %" not in report
    # re-rendering keeps them
    assert main(["report", str(out), "--no-figures"]) == 0
    assert list(json.loads((out / "summary.json").read_text())["arms"]["uniform"][
        "edges_to_reach"]) == ["0.1", "0.02"]


def test_a_sweep_and_its_figure_use_the_scenarios_targets(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(SCENARIO + '[sweep]\nbudget.batch = [25, 100]\n')
    out = tmp_path / "run"
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(out), "--quiet",
                 "--no-figures"]) == 0
    header = next(csv.reader((out / "sweep.csv").read_text().splitlines()))
    assert "edges_to_0.1_mean" in header and "edges_to_0.02_mean" in header
    assert "edges_to_0.05" not in header
    assert "| labels to 10% | labels to 2% |" in (out / "sweep.md").read_text()
    fig = sweep_figure(["budget.batch"], sweep_rows(out), targets=(0.1, 0.02))
    titles = [ax.get_title() for ax in fig.get_axes()]
    assert "labels to reach 10 % error" in titles and "labels to reach 2 % error" in titles


def test_the_error_plot_draws_the_targets(tmp_path: Path) -> None:
    import marketsim

    result = marketsim.run(marketsim.scenario_from_dict(
        tomllib.loads(SCENARIO)), progress=False)
    import matplotlib.pyplot as plt

    try:
        ax = result.plot(targets=True)
        dashed = sorted(ln.get_ydata()[0] for ln in ax.get_lines() if ln.get_label() == "_target")
        assert dashed == [0.02, 0.1]
    finally:
        plt.close("all")


@pytest.mark.parametrize("bad", ["[]", "[0]", "[1.5]", '["x"]'])
def test_report_targets_are_checked(bad: str) -> None:
    text = SCENARIO.replace("targets = [0.02, 0.1]", f"targets = {bad}")
    with pytest.raises(InputError, match=r"report\.targets"):
        parse_scenario(tomllib.loads(text), "s.toml")
