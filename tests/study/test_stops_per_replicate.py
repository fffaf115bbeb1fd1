"""Stops per replicate (issue #38, point 8): report.md gives each replicate that ended under
budget its own stop detail, and a preset whose workers leave with tasks open ends as a recorded
stop, never as a stuck market (exit 70) blaming the preset."""

from __future__ import annotations

import json
from pathlib import Path

from marketsim.cli import main
from marketsim.record.curves import CurveRow
from marketsim.record.summary import summarise
from marketsim.record.summary_model import StoppedEarly
from marketsim.report.cost_text import under_budget_section

PRESET_SESSIONS = """
[scenario]
name = "preset sessions"
seed = 3
replicates = 3
[tasks]
count = 30
[workers]
count = 6
session_mean = 12.0
[budget]
edges = 100
batch = 5
initial = "none"
[[arms]]
name = "fixed"
policy = { name = "fixed-overlap", overlap = 3 }
inference = "mv"
"""


def test_a_preset_whose_workers_leave_ends_as_recorded_stops_each_with_its_own_detail(
        tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(PRESET_SESSIONS)
    out = tmp_path / "run"
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(out), "--quiet",
                 "--no-figures"]) == 0
    stopped = json.loads((out / "summary.json").read_text())["arms"]["fixed"]["stopped"]
    sessions = [s for s in stopped if s["causes"] == ["sessions"]]
    assert len(sessions) >= 2 and len({s["detail"] for s in sessions}) >= 2
    assert any("still open under fixed-overlap" in s["detail"] for s in sessions)
    report = (out / "report.md").read_text()
    for stop in stopped:  # each replicate's line carries that replicate's own detail
        line = next(x for x in report.splitlines() if x.startswith("- *fixed*:")
                    and f"in replicate {stop['replicate']} of 3" in x)
        if stop["causes"] != ["closed"]:
            assert line.endswith(f": {stop['detail']}"), (line, stop)


def rows(ends: dict[int, int]) -> list[CurveRow]:
    return [CurveRow(edges, 0.5 - edges / 1000, 0.1, float(edges), arm="a", replicate=rep)
            for rep, end in ends.items() for edges in range(10, end + 1, 10)]


def test_replicates_with_the_same_cause_keep_their_own_details() -> None:
    arm = summarise(rows({0: 40, 1: 60, 2: 50}), budget_edges=100)["a"]
    details = {0: "every worker is stopped: 6 blocked by [blocking]",
               1: "every worker is stopped: 4 blocked by [blocking]; 2 at workers.capacity",
               2: "every worker is stopped: 6 blocked by [blocking]"}
    arm = arm.model_copy(update={"stopped": [
        StoppedEarly(replicate=r, labels=e, causes=["blocking"], detail=details[r])
        for r, e in ((0, 40), (1, 60), (2, 50))]})
    lines = [x for x in under_budget_section({"a": arm}, ["a"]) if x.startswith("- *a*:")]
    assert lines == [
        "- *a*: ran out of workers at 40 and 50 labels (blocking) in replicates 0 and 2 of 3: "
        + details[0],
        "- *a*: ran out of workers at 60 labels (blocking) in replicate 1 of 3: " + details[1],
    ]
