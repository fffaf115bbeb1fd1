"""Issue #38, points 1-3: one figure, one computation.

"Final" is each replicate's own last point (where its run ended: the budget, or where a preset
closed every task or the money ran out), then the mean and its interval; the API, report.md,
sweep.csv and the sweep figure read that one value. A difference of final errors is the
paired difference of those same final errors. The "In short" verdicts come from the paired
per-replicate results the tables show, and every interval of an error stays in [0, 1] (a
difference of two errors in [-1, 1])."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from marketsim.api import StudyResult
from marketsim.record.comparisons import compare_arms
from marketsim.record.curves import CurveRow
from marketsim.record.metric import ERROR_RATE
from marketsim.record.reach import cost_axes
from marketsim.record.stats import paired_comparison
from marketsim.record.summary import summarise
from marketsim.record.summary_model import Summary
from marketsim.report.comparison_text import comparisons_section, key_results
from marketsim.report.cost_text import under_budget_section
from marketsim.report.markdown import report_lines
from marketsim.report.results_text import arms_section, checkpoints
from marketsim.report.sweep import SweepPoint, sweep_markdown, sweep_rows

BUDGET = 500


def curve(arm: str, rep: int, points: dict[int, float], price: float = 1.2) -> list[CurveRow]:
    """One replicate's curve: labels -> error, money = price x labels, time = labels / 2."""
    return [CurveRow(e, err, 0.1, e / 2, money=price * e, arm=arm, replicate=rep)
            for e, err in sorted(points.items())]


def summary_of(rows: list[CurveRow], budget: int | None = BUDGET) -> Summary:
    arms = summarise(rows, budget_edges=budget)
    reps = max(a.replicates for a in arms.values())
    return Summary.model_validate({
        "scenario": "s", "metric": "error_rate", "seed": 1, "replicates": reps,
        "complete": True, "units_finished": reps * len(arms), "units_total": reps * len(arms),
        "seconds": None, "arms": arms, "comparisons": compare_arms(rows, arms),
        "cost_axes": cost_axes(rows)})


def preset_study() -> list[CurveRow]:
    """The issue's shape: *uniform* spends the budget on every replicate; the preset stops at
    200, 300 and 500 labels, still improving where the first replicate stopped. At the last
    label count every replicate reached (200) the preset is better than uniform; at the end of
    each run it is worse (uniform kept buying)."""
    rows = []
    for rep, end_err in enumerate([0.04, 0.06, 0.05]):
        rows += curve("uniform", rep, {100: 0.4, 200: 0.3, 300: 0.2, 400: 0.1, 500: end_err})
    rows += curve("preset", 0, {100: 0.4, 200: 0.2})
    rows += curve("preset", 1, {100: 0.4, 200: 0.25, 300: 0.1})
    rows += curve("preset", 2, {100: 0.4, 200: 0.22, 300: 0.15, 400: 0.1, 500: 0.09})
    return rows


def ends(rows: list[CurveRow], arm: str) -> dict[int, CurveRow]:
    """Each replicate's last row, recomputed here."""
    out: dict[int, CurveRow] = {}
    for r in rows:
        if r.arm == arm and (r.replicate not in out or r.edges > out[r.replicate].edges):
            out[r.replicate] = r
    return out


def test_final_error_labels_money_and_time_are_read_at_each_runs_end() -> None:
    rows = preset_study()
    summary = summary_of(rows)
    last = ends(rows, "preset")
    preset = summary.arms["preset"]
    want = np.mean([r.error_rate for r in last.values()])
    assert preset.edges[-1] == 200 and preset.error[-1] == pytest.approx(0.2233, abs=1e-3)
    assert preset.final_error_mean == pytest.approx(want)          # not the mean curve's 0.2233
    assert preset.final_error is not None and preset.final_error.mean == pytest.approx(want)
    for what, column in (("edges", "edges"), ("money", "money"), ("time", "sim_time")):
        iv = preset.final(what)  # type: ignore[arg-type]
        assert iv is not None
        assert iv.mean == pytest.approx(np.mean([getattr(r, column) for r in last.values()]))
    labels = preset.final("edges")  # 333 [-97, 764] unclipped: no run spends above budget
    assert labels is not None and labels.low == 0 and labels.high == BUDGET
    # an arm that spent its budget everywhere: the same figure as the mean curve's end
    uniform = summary.arms["uniform"]
    assert uniform.final_error_mean == pytest.approx(uniform.error[-1])
    # the API's final_error reads the same value and the labels each run spent
    frame = StudyResult(None, summary, ()).final_error.set_index("arm")  # type: ignore[arg-type]
    assert frame.loc["preset", "mean"] == pytest.approx(want)
    assert frame.loc["preset", "labels"] == pytest.approx(1000 / 3)
    assert frame.loc["uniform", "labels"] == 500
    # report.md's Arms table: labels spent and final error where the runs ended
    table = "\n".join(arms_section(summary.arms, ["uniform", "preset"], {}, ERROR_RATE))
    assert f"| {100 * want:.2f} % [" in table
    assert "| 333 [" in table and "| 200 |" not in table


def test_sweep_final_columns_and_difference_are_those_of_the_final_errors() -> None:
    """The issue: sweep.csv printed the final errors beside a paired difference taken at the
    last common label count, of the opposite sign."""
    rows = preset_study()
    summary = summary_of(rows)
    out = sweep_rows([SweepPoint("points/p000", (("k", 1),), summary)])
    by_arm = {r["arm"]: r for r in out}
    pre, uni = by_arm["preset"], by_arm["uniform"]
    last_p, last_u = ends(rows, "preset"), ends(rows, "uniform")
    assert pre["final_money"] == pytest.approx(np.mean([r.money for r in last_p.values()]))
    assert pre["final_time"] == pytest.approx(np.mean([r.sim_time for r in last_p.values()]))
    assert pre["final_edges"] == pytest.approx(1000 / 3)
    diffs = [last_p[k].error_rate - last_u[k].error_rate for k in (0, 1, 2)]
    assert pre["diff_final_error_mean"] == pytest.approx(np.mean(diffs))
    assert pre["diff_final_error_mean"] == pytest.approx(
        pre["final_error"] - uni["final_error"])
    assert pre["diff_final_error_mean"] > 0  # worse at the end, though better at 200 labels
    assert summary.comparisons.arms["preset"].checkpoints[-1].difference < 0
    low, high = pre["diff_final_error_low"], pre["diff_final_error_high"]
    assert -1 <= low <= pre["diff_final_error_mean"] <= high <= 1
    text = sweep_markdown(["k"], out)
    assert f"| {pre['final_error']:.4f} |" in text


def test_paired_table_and_verdicts_name_the_end_of_each_run() -> None:
    summary = summary_of(preset_study())
    names = ["uniform", "preset"]
    lines = comparisons_section(summary, names, ERROR_RATE, checkpoints(summary.arms))
    head = next(ln for ln in lines if ln.startswith("| arm \\ labels spent"))
    assert head.endswith("| end of each run |")
    final = summary.comparisons.arms["preset"].final_error
    assert final is not None and final.difference is not None
    row = next(ln for ln in lines if ln.startswith("| preset |"))
    assert row.split("|")[-2].strip().strip("*").startswith(f"{100 * final.difference:+.2f} pt")
    assert f"- at the end of each run: {final.verdict}" in lines
    # the verdict's numbers are the table's: percentage points
    at = summary.comparisons.arms["preset"].checkpoints[-1]
    assert f"- at {at.edges} labels: {at.verdict}" in lines
    assert " pt" in at.verdict or "no difference" in at.verdict


def _reach_rows() -> list[CurveRow]:
    """Ten replicates; *u* reaches 5 % at 500 labels on every one; *d* at 200 on nine and at
    1,000 on one, whose late spike keeps *d*'s mean curve above 5 % until 1,000. The mean curve
    ranks *u* first; paired by replicate, *d* needs detectably fewer labels."""
    rows = []
    grid = range(100, 1001, 100)
    for rep in range(10):
        rows += curve("u", rep, {e: 0.5 if e < 500 else 0.0 for e in grid})
        spike = 0.6 if rep == 0 else 0.0
        rows += curve("d", rep, {e: 0.5 if e < 200 else (spike if e == 900 else 0.0)
                                 for e in grid})
    return rows


def test_in_short_names_the_winner_the_paired_results_show() -> None:
    summary = summary_of(_reach_rows(), budget=1000)
    arms = summary.arms
    assert arms["u"].edges_to_reach["0.05"] == 500 and arms["d"].edges_to_reach["0.05"] == 1000
    entry = summary.comparisons.arms["d"].to_reach("edges")["0.05"]
    assert entry.detected and entry.difference is not None and entry.difference < 0
    sentence = key_results(arms, {}, ["u", "d"], ERROR_RATE)[0]
    assert "*d* needs detectably fewer labels than every other arm" in sentence, sentence
    assert "no difference" not in sentence
    assert "280 on average" in sentence  # the replicates' mean: (1,000 + 9 x 200) / 10
    lines = report_lines(summary, None, figures=[])
    short = lines[lines.index(next(ln for ln in lines if ln.startswith("**In short**"))):]
    assert "mean over replicates of the labels each replicate needed" in short[0]


def test_error_intervals_stay_in_their_range() -> None:
    """Two replicates ending at 0 and 0.9 errors: the t-interval's raw ends lie far outside
    [0, 1]; every interval of an error printed or stored is clipped."""
    rows = (curve("a", 0, {100: 0.5, 200: 0.0}) + curve("a", 1, {100: 0.9, 150: 0.9})
            + curve("b", 0, {100: 0.5, 200: 1.0}) + curve("b", 1, {100: 0.9, 200: 0.0}))
    summary = summary_of(rows, budget=200)
    for arm in summary.arms.values():
        iv = arm.final_error
        assert iv is not None and iv.low is not None and iv.high is not None
        assert 0.0 <= iv.low <= iv.high <= 1.0
    cmp = summary.comparisons.arms["b"]
    for entry in [*cmp.checkpoints, cmp.final_error]:
        assert entry is not None and entry.low is not None and entry.high is not None
        assert -1.0 <= entry.low <= entry.high <= 1.0
    text = "\n".join(under_budget_section(summary.arms, ["a", "b"]))
    cells: list[Any] = re.findall(r"\[([0-9.]+), ([0-9.]+)\] \|$", text, flags=re.M)
    assert cells and all(0.0 <= float(lo) <= float(hi) <= 1.0 for lo, hi in cells)


def test_two_pairs_apart_by_the_same_amount_up_to_rounding_are_not_a_detection() -> None:
    """0.3 - 0.2 and 0.2 - 0.1 differ in the last bit: no spread, not a zero-width interval
    that excludes zero (which called a difference detected with two replicates)."""
    cmp = paired_comparison("a", "b", [0.3, 0.2], [0.2, 0.1])
    assert cmp.difference.half_width > 0  # rounding
    assert cmp.no_spread and not cmp.detected
    assert "no difference detectable with 2 replicates" in cmp.verdict()
