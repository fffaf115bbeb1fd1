"""Runs that end under budget (a preset closed every task, or the money ran out): the summary
says how many replicates did; their final labels, money and error, like every run's, are each
replicate's own at its last point."""

from __future__ import annotations

from marketsim.record.curves import CurveRow
from marketsim.record.summary import summarise
from marketsim.report.cost_text import under_budget_section


def rows(ends: dict[int, int]) -> list[CurveRow]:
    out = []
    for rep, end in ends.items():
        for edges in range(100, end + 1, 100):
            out.append(CurveRow(edges, 0.5 - edges / 1000, 0.1, float(edges), money=1.2 * edges,
                                arm="preset", replicate=rep))
    return out


def test_summary_counts_the_replicates_that_ended_under_budget() -> None:
    arm = summarise(rows({0: 300, 1: 500, 2: 400}), budget_edges=500)["preset"]
    assert arm.ended_under_budget == 2
    assert arm.final_edges is not None and arm.final_edges.mean == 400
    assert arm.final_money is not None and abs(arm.final_money.mean - 480.0) < 1e-9
    assert arm.final_error is not None and abs(arm.final_error.mean - 0.1) < 1e-9
    lines = under_budget_section({"preset": arm}, ["preset"])
    assert lines[0] == "## Runs that ended under budget"
    assert any(line.startswith("| preset | 2 of 3 | 400 [") for line in lines)


def test_no_under_budget_count_when_every_replicate_spent_the_budget_or_it_is_unknown() -> None:
    """The count and the report's section only when some replicate ended early; the final
    labels, money and error (each replicate's own last point) are there for every run, equal to
    the mean curve's last point when every replicate ended there."""
    for budget in (500, None):
        arm = summarise(rows({0: 500, 1: 500}), budget_edges=budget)["preset"]
        assert arm.ended_under_budget is None
        assert "ended_under_budget" not in arm.model_dump(exclude_none=True)
        assert under_budget_section({"preset": arm}, ["preset"]) == []
        assert arm.final_edges is not None and arm.final_edges.mean == arm.edges[-1] == 500
        assert arm.final_error is not None and arm.final_error.mean == arm.error[-1]
        assert arm.final_error_mean == arm.error[-1]
