"""The sweep report: the plot's axes and arm styles, and the tables."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import Any

import pytest
from matplotlib.colors import to_hex

from marketsim.record.metric import ERROR_RATE
from marketsim.record.summary import TARGETS
from marketsim.record.summary_model import ArmSummary, Comparisons, Summary, read_summary
from marketsim.report.formatting import num
from marketsim.report.plots import arm_style
from marketsim.report.sweep import (
    SweepPoint,
    columns,
    sweep_figure,
    sweep_markdown,
    sweep_rows,
    write_sweep_report,
)
from marketsim.report.sweep_plot import axis_label

ARMS = ["uniform", "entropy-greedy", "knowledge-gradient"]


def rows_for(values: dict[str, list[Any]], arms: list[str] = ARMS) -> list[dict[str, Any]]:
    """Sweep rows for every grid point and arm; arm i needs fewer labels, the last arm never
    reaches 1 % at the first grid point (a missing point)."""
    rows = []
    keys = list(values)
    for n, point in enumerate(itertools.product(*values.values())):
        for i, arm in enumerate(arms):
            row: dict[str, Any] = {"point": f"points/p{n:03d}",
                                   **dict(zip(keys, point, strict=True)),
                                   "arm": arm, "final_error": 0.01 * (i + 1)}
            for t in TARGETS:
                row[f"edges_to_{t:g}"] = 1000 + 100 * n - 50 * i
            if n == 0 and i == len(arms) - 1:
                row[f"edges_to_{TARGETS[-1]:g}"] = None
            rows.append(row)
    return rows


def arm_lines(ax: Any) -> dict[str, Any]:
    """The arms' lines of a panel (not the hollow partial points or the zero line)."""
    return {line.get_label(): line for line in ax.get_lines()
            if not line.get_label().startswith("_")}


def test_sweep_figure_has_the_swept_key_on_x_and_one_style_per_arm() -> None:
    values = {"workers.count": [5, 8, 60], "workers.ability.alpha": [2, 6]}
    fig = sweep_figure(list(values), rows_for(values), ERROR_RATE)
    axes = fig.get_axes()
    # a row per other-key value; a column for the final error and one per target
    assert len(axes) == 2 * (1 + len(TARGETS))
    for ax in axes:
        assert ax.get_xlabel() == "workers.count (workers)"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["5", "8", "60"]
        lines = arm_lines(ax)
        assert list(lines) == ARMS
        for i, arm in enumerate(ARMS):
            style = arm_style(i)
            assert to_hex(lines[arm].get_color()) == to_hex(style["color"])
            assert lines[arm].get_marker() == style["marker"]
    # The two values of the other key label the two rows of panels.
    titles = [ax.get_title() for ax in axes]
    assert sum("workers.ability.alpha = 2" in t for t in titles) == 1 + len(TARGETS)
    assert sum("workers.ability.alpha = 6" in t for t in titles) == 1 + len(TARGETS)
    # The arm that missed the 1 % target at the first point: a gap there, not a point.
    last = [ax for ax in axes if "1 %" in ax.get_title() and "= 2" in ax.get_title()][0]
    ys = arm_lines(last)[ARMS[-1]].get_ydata()
    assert math.isnan(ys[0]) and not math.isnan(ys[1])
    assert not any(math.isnan(y) for y in arm_lines(last)[ARMS[0]].get_ydata())
    # One legend for the figure, one entry per arm.
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ARMS


def test_sweep_figure_takes_non_numeric_swept_values() -> None:
    values = {"workers.model": ["one-coin", "confusion"]}
    fig = sweep_figure(list(values), rows_for(values, ARMS[:2]))
    for ax in fig.get_axes():
        assert ax.get_xlabel() == "workers.model"  # no unit known
        assert [t.get_text() for t in ax.get_xticklabels()] == ["one-coin", "confusion"]


def test_sweep_figure_says_when_no_arm_reached_a_target() -> None:
    values = {"tasks.count": [60, 80]}
    rows = rows_for(values, ARMS[:1])
    for r in rows:
        r["edges_to_0.01"] = None
    fig = sweep_figure(list(values), rows)
    ax = [a for a in fig.get_axes() if "1 %" in a.get_title()][0]
    assert any("no arm reached it" in t.get_text() for t in ax.texts)
    assert ax.get_xlabel() == "tasks.count (tasks)"


@pytest.mark.parametrize(("key", "label"), [
    ("budget.edges", "budget.edges (labels)"), ("workers.count", "workers.count (workers)"),
    ("workers.gaussian_scores.sigma", "workers.gaussian_scores.sigma"),
])
def test_axis_label_names_the_key_and_its_unit(key: str, label: str) -> None:
    assert axis_label(key) == label


def test_write_sweep_report_writes_the_plot_and_tables(tmp_path: Path) -> None:
    values = {"workers.count": [5, 8]}
    rows = rows_for(values, ARMS[:2])
    points = []
    for folder in dict.fromkeys(r["point"] for r in rows):
        mine = [r for r in rows if r["point"] == folder]
        points.append(SweepPoint(
            folder, (("workers.count", mine[0]["workers.count"]),),
            Summary.model_construct(metric="error_rate", arms={
                r["arm"]: ArmSummary.model_construct(
                    final_error_mean=r["final_error"], replicates=2, edges=[],
                    edges_to_reach={f"{t:g}": r[f"edges_to_{t:g}"] for t in TARGETS},
                    edges_to_reach_ci95={}, edges_to_reach_replicates={},
                    error_low=[], error_high=[], sim_time=[],
                    time_to_reach_replicates={}, time_to_reach_ci95={}, stopped=[])
                for r in mine}, comparisons=Comparisons(), cost_axes=[])))
    write_sweep_report(tmp_path, ["workers.count"], points)
    for name in ("sweep.csv", "sweep.json", "sweep.md", "labels_needed_vs_sweep.png",
                 "labels_needed_vs_sweep.svg"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert (tmp_path / "labels_needed_vs_sweep.png").read_bytes()[:4] == b"\x89PNG"


def test_sweep_markdown_escapes_a_pipe_in_an_arm_name() -> None:
    rows = rows_for({"workers.count": [5]}, ["a | b"])
    text = sweep_markdown(["workers.count"], rows)
    line = [ln for ln in text.splitlines() if ln.startswith("| 5 ")][0]
    assert "a \\| b" in line
    cells = re.split(r"(?<!\\)\|", line)[1:-1]
    assert len(cells) == 5  # the pipe in the name does not split its cell


def test_num_prints_unknown_counts_as_a_dash() -> None:
    assert num(12000) == "12,000"
    assert num(None) == "—"
    assert num(math.nan) == "—"


FIXTURES = Path(__file__).parents[1] / "study" / "fixtures"


@pytest.mark.parametrize(("folder", "metric"), [("v1_classes", "error_rate"),
                                                ("v1_scores", "rmse")])
def test_sweep_rows_name_the_metric_of_each_point(folder: str, metric: str) -> None:
    """``sweep.csv``'s final error is named for what it is: the ``metric`` column says error
    rate or RMSE, as ``summary.json`` does, also for a summary written before the metric was
    named (version 1, read through its migration)."""
    summary = read_summary(FIXTURES / folder / "summary.json")
    rows = sweep_rows([SweepPoint("points/p000", (("k", 1),), summary)])
    assert {r["metric"] for r in rows} == {metric}
    assert [r["final_error"] for r in rows] == [a.final_error_mean for a in
                                                summary.arms.values()]
    header = columns(["k"])
    assert header[header.index("arm") + 1:header.index("arm") + 3] == ["metric", "final_error"]
    assert "final_error_rate" not in header
