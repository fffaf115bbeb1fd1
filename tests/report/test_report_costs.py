"""Worker-aware metrics (issue #16, item 4): money and simulated time to each target, their
paired comparisons, the gold spend and blocked workers, in ``summary.json``, ``report.md``, the
plots and the API — and reports of markets without prices, declines or gold stay as they were.

Built on hand-made curve rows, so every expected figure is worked out by hand here."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from marketsim.api import StudyResult
from marketsim.record.curves import CurveRow, write_curves
from marketsim.record.stats import mean_interval, paired_comparison
from marketsim.record.summary import build_summary, summarise
from marketsim.record.summary_model import ArmSummary, Summary, summary_json
from marketsim.record.units import UnitResult
from marketsim.report.glossary import unlink_terms
from marketsim.report.render import render_report

EDGES = (100, 200, 300, 400, 500)
#: Error per checkpoint: below 5 % from the 3rd point, back above at the 4th on replicate 1.
ERRORS = {0: (0.2, 0.08, 0.04, 0.03, 0.009), 1: (0.2, 0.04, 0.03, 0.06, 0.008)}


def curve(arm: str, rep: int, *, price: float = float("nan"), time_step: float = 1.0,
          gold: float = 0.0, blocked: float = 0.0, errors: tuple[float, ...] | None = None
          ) -> list[CurveRow]:
    """One unit's rows: money = price x edges, sim_time = time_step x edges, gold answers
    (each at ``price``) and blocked workers growing linearly to ``gold`` and ``blocked`` at
    the end."""
    errs = errors or ERRORS[rep]
    n = len(EDGES)
    return [CurveRow(e, err, 0.1, time_step * e, money=price * e,
                     gold_labels=gold * (i + 1) / n, blocked_workers=blocked * (i + 1) / n,
                     gold_money=price * gold * (i + 1) / n,
                     arm=arm, replicate=rep)
            for i, (e, err) in enumerate(zip(EDGES, errs, strict=True))]


def plain_arms(arms: dict[str, ArmSummary]) -> dict[str, dict]:
    """Per-arm summaries as the JSON objects ``summary.json`` holds."""
    return {k: v.model_dump(mode="json", exclude_unset=True) for k, v in arms.items()}


def summary_of(rows: list[CurveRow], arms: list[str]) -> Summary:
    units = {}
    for r in rows:
        units.setdefault((arms.index(r.arm), r.replicate), []).append(r)
    results = [UnitResult(rep, arm, tuple(u), 0.0) for (arm, rep), u in units.items()]
    return build_summary(name="t", seed=1, replicates=2, arm_names=arms, results=results,
                         seconds=0.0, complete=True)


def test_money_and_time_to_target_read_at_each_replicates_own_crossing() -> None:
    """Replicate 0 stays below 5 % from 300 labels, replicate 1 only from 500 (it goes back
    above at 400): money and time are read at those points, at each replicate's prices."""
    rows = curve("a", 0, price=2.0, time_step=0.5) + curve("a", 1, price=3.0, time_step=2.0)
    arm = plain_arms(summarise(rows))["a"]
    assert arm["edges_to_reach_replicates"]["0.05"] == [300, 500]
    assert arm["money_to_reach_replicates"]["0.05"] == [600.0, 1500.0]
    assert arm["time_to_reach_replicates"]["0.05"] == [150.0, 1000.0]
    iv = mean_interval([600.0, 1500.0], bounds=(0.0, math.inf))
    ci = arm["money_to_reach_ci95"]["0.05"]
    assert (ci["mean"], ci["low"], ci["high"], ci["reached"], ci["of"]) == (
        1050.0, iv.low, iv.high, 2, 2)
    assert arm["time_to_reach_replicates"]["0.01"] == [250.0, 1000.0]
    # mean x per label count: the plots' x values
    assert arm["money"] == [2.5 * e for e in EDGES]
    assert arm["sim_time"] == [1.25 * e for e in EDGES]


def test_target_not_reached_leaves_no_mean() -> None:
    never = (0.3, 0.2, 0.1, 0.09, 0.08)
    rows = curve("a", 0, price=1.5) + curve("a", 1, price=1.5, errors=never)
    ci = plain_arms(summarise(rows))["a"]["money_to_reach_ci95"]["0.05"]
    assert plain_arms(summarise(rows))["a"]["money_to_reach_replicates"]["0.05"] == [450.0, None]
    assert (ci["mean"], ci["reached"], ci["of"]) == (None, 1, 2)


def test_paired_money_and_time_differences_against_the_reference() -> None:
    """'cheap' pays 1 per label and 'dear' 2 (replicate 0) or 2.5 (replicate 1) on the same
    worlds: the paired money interval is that of the per-replicate differences."""
    rows = (curve("cheap", 0, price=1.0) + curve("cheap", 1, price=1.0)
            + curve("dear", 0, price=2.0, time_step=3.0) + curve("dear", 1, price=2.5,
                                                                  time_step=3.0))
    summary = summary_json(summary_of(rows, ["cheap", "dear"]))
    entry = summary["comparisons"]["arms"]["dear"]
    expected = paired_comparison("dear", "cheap", [600.0, 1250.0], [300.0, 500.0])
    money = entry["money_to_reach"]["0.05"]
    assert money["difference"] == pytest.approx(525.0)
    assert (money["low"], money["high"]) == pytest.approx(
        (expected.difference.low, expected.difference.high))
    assert money["detected"] is False  # two replicates, differences 300 and 750
    time = entry["time_to_reach"]["0.05"]
    assert time["difference"] == pytest.approx((900 - 300 + 1500 - 500) / 2)
    assert entry["edges_to_reach"]["0.05"]["difference"] == 0.0
    assert summary["cost_axes"] == ["money", "time"]


def test_gold_spend_and_blocked_workers_at_the_end() -> None:
    rows = (curve("a", 0, price=2.0, gold=40, blocked=3)
            + curve("a", 1, price=1.0, gold=20, blocked=1))
    arm = plain_arms(summarise(rows))["a"]
    assert arm["gold_labels"]["mean"] == 30.0
    # the money paid for the gold answers: 40 x 2 and 20 x 1
    assert arm["gold_money"]["mean"] == pytest.approx(50.0)
    assert arm["blocked_workers"]["mean"] == 2.0
    assert arm["blocked_workers"]["low"] == pytest.approx(
        mean_interval([3.0, 1.0], bounds=(0.0, math.inf)).low)


def test_nan_money_and_flat_markets_add_nothing_to_the_report(tmp_path: Path) -> None:
    """A market without prices (money NaN, as before the worker-aware market) or with every
    label at price 1 and the same times across arms shows no new section and no new plot."""
    for price in (float("nan"), 1.0):
        folder = tmp_path / f"p{price}"
        folder.mkdir()
        rows = [r for a in ("x", "y") for rep in (0, 1) for r in curve(a, rep, price=price)]
        write_curves(folder / "curves.csv", rows)
        summary = summary_json(render_report(folder))
        report = (folder / "report.md").read_text().replace(str(folder), "RUN")
        assert summary["cost_axes"] == []
        assert ("money_to_reach_ci95" in summary["arms"]["x"]) == (price == 1.0)
        for text in ("money", "simulated time", "Gold questions", "error_vs_"):
            assert text not in report.replace("error_vs_budget", ""), (price, text)
        assert not (folder / "error_vs_money.png").exists()
        assert not (folder / "error_vs_time.png").exists()


def test_old_curves_csv_without_the_new_columns_still_reports(tmp_path: Path) -> None:
    path = tmp_path / "curves.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["arm", "replicate", "edges", "error_rate", "ability_error", "sim_time"])
        for rep in (0, 1):
            for e, err in zip(EDGES, ERRORS[rep], strict=True):
                writer.writerow(["old", rep, e, err, 0.1, e / 2])
    summary = summary_json(render_report(tmp_path))
    arm = summary["arms"]["old"]
    assert "money_to_reach_ci95" not in arm and "gold_labels" not in arm
    assert arm["edges_to_reach_replicates"]["0.05"] == [300, 500]
    report = (tmp_path / "report.md").read_text()
    assert "## Labels needed to reach" in report
    assert "to reach each target" not in report and "Gold questions" not in report


def test_report_shows_money_time_plots_and_gold_when_relevant(tmp_path: Path) -> None:
    rows = (curve("cheap", 0, price=1.0) + curve("cheap", 1, price=1.0)
            + curve("dear", 0, price=2.0, time_step=3.0, gold=10, blocked=2)
            + curve("dear", 1, price=2.5, time_step=3.0, gold=10, blocked=2))
    write_curves(tmp_path / "curves.csv", rows)
    render_report(tmp_path)
    report = (tmp_path / "report.md").read_text()
    section = report.split("## Labels, money and time to reach each target")[1].split("\n## ")[0]
    row = next(line for line in section.splitlines() if line.startswith("| dear |"))
    assert "mean 925.00 [" in row  # money to 5 %: 300 x 2.0 and 500 x 2.5
    assert "Least money to each target" in section
    assert "Paired differences against *cheap*" not in section  # may be negative: below
    paired = report.split("## Paired comparisons against *cheap*")[1].split("\n## ")[0]
    assert "Paired differences against *cheap* in money and time to each target" in paired
    for stem in ("error_vs_money", "error_vs_time"):
        assert (tmp_path / f"{stem}.png").stat().st_size > 0
        assert f"]({stem}.png)" in report and f"`{stem}.svg`" in report
    gold = report.split("## Gold questions and blocked workers")[1].split("\n## ")[0]
    assert "| dear | 10.0 [10.0, 10.0] |" in gold and "| cheap | 0.0 [0.0, 0.0] |" in gold


def test_money_winner_named_only_when_the_paired_interval_excludes_zero(
        tmp_path: Path) -> None:
    """Three replicates: 'dear' costs more on every one by a steady amount (detected); 'noisy'
    costs more on two and less on one (not detected, so no claim)."""
    errors = ERRORS[0]
    rows = []
    for rep, (dear, noisy) in enumerate(((2.0, 3.0), (2.1, 0.5), (2.2, 2.0))):
        rows += curve("cheap", rep, price=1.0, errors=errors)
        rows += curve("dear", rep, price=dear, errors=errors)
        rows += curve("noisy", rep, price=noisy, errors=errors)
    write_curves(tmp_path / "curves.csv", rows)
    render_report(tmp_path, figures=False)  # the claims, not the plots
    report = unlink_terms((tmp_path / "report.md").read_text())
    claims = report.split("Least money to each target")[1].split("\n\n", 2)[1]
    five = next(line for line in claims.splitlines() if line.startswith("- **5 % error**"))
    assert "*cheap* needs the least money on average (300.00), but no difference from " \
           "*noisy* (550.00) is detectable with 3 replicates" in five
    assert "*dear*" not in five  # detectably dearer: not among the close ones
    summary_dear = summary_json(render_report(tmp_path, figures=False))["comparisons"]["arms"][
        "dear"]
    assert summary_dear["money_to_reach"]["0.05"]["detected"] is True
    assert "dear is worse than cheap" in summary_dear["money_to_reach"]["0.05"]["verdict"]


def test_api_money_and_time_to_target_frames() -> None:
    pytest.importorskip("pandas")
    rows = curve("a", 0, price=2.0, time_step=0.5) + curve("a", 1, price=3.0, time_step=2.0)
    summary = summary_of(rows, ["a"])
    result = StudyResult(None, summary, ())  # type: ignore[arg-type]
    money = result.money_to_target
    five = money[money["target"] == 0.05]
    assert list(five["money"]) == [600.0, 1500.0] and list(five["mean"]) == [1050.0] * 2
    time = result.time_to_target
    assert list(time[time["target"] == 0.01]["time"]) == [250.0, 1000.0]
    labels = result.labels_to_target
    assert str(labels["labels"].dtype) == "Int64"
    no_money = StudyResult(None, summary_of(curve("a", 0) + curve("a", 1), ["a"]),  # type: ignore[arg-type]
                           ())
    assert no_money.money_to_target.empty
