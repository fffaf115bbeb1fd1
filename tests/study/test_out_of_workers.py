"""A market that runs out of workers (blocking removed them all, capacity or sessions used the
pool up) is a recorded result, not an error: the arm's curve stops there, the reports say where
and why, and the other arms and sweep points run (issue #31, defect 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from marketsim.cli import main

SWEEP = """
[scenario]
name = "blocking sweep"
seed = 4
replicates = 2
[tasks]
count = 300
[workers]
count = 6
model = "spammer-hammer"
[workers.spammer_hammer]
hammer_fraction = 0.15
[budget]
edges = 500
batch = 50
[sweep]
"arms[1].blocking.min_accuracy" = [0.3, 0.8]
[[arms]]
name = "uniform"
policy = "uniform"
inference = "one-coin"
[[arms]]
name = "blocking"
policy = "uniform"
inference = "one-coin"
gold = { count = 20, rate = 0.3 }
blocking = { after = 3, min_accuracy = 0.8 }
"""


def test_a_sweep_whose_arm_runs_out_of_workers_runs_every_point_and_says_where(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.toml").write_text(SWEEP)
    out = tmp_path / "run"
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(out), "--quiet",
                 "--no-figures"]) == 0
    # point 1 (min_accuracy 0.8): every worker of the blocking arm is blocked in both replicates
    summary = json.loads((out / "points" / "p001" / "summary.json").read_text())
    blocking, uniform = summary["arms"]["blocking"], summary["arms"]["uniform"]
    assert [s["causes"] for s in blocking["stopped"]] == [["blocking"], ["blocking"]]
    assert all(s["labels"] < 500 for s in blocking["stopped"])
    assert blocking["edges"][-1] <= min(s["labels"] for s in blocking["stopped"])
    assert uniform["edges"][-1] == 500 and not uniform.get("stopped")  # the other arm ran on
    report = (out / "points" / "p001" / "report.md").read_text()
    labels = " and ".join(f"{s['labels']:,}" for s in blocking["stopped"])
    assert f"- *blocking*: ran out of workers at {labels} labels (blocking)" in report
    assert "6 blocked by [blocking] (lower blocking.min_accuracy" in report
    # said once, in one section: where and why, then the labels and error at the end
    assert report.count("## Runs that ended under budget") == 1
    assert report.count("ran out of workers at") == 1
    assert "Stopped before the budget" not in report
    section = report.split("## Runs that ended under budget", 1)[1].split("\n## ", 1)[0]
    assert "ran out of workers at" in section and "| blocking | 2 of 2 |" in section
    sweep_md = (out / "sweep.md").read_text()
    assert "points/p001 (arms[1].blocking.min_accuracy = 0.8), *blocking*: ran out of " \
        "workers" in sweep_md
    # the units' checkpoints keep the stop: resuming reuses them, re-rendering keeps the text
    capsys.readouterr()
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(out), "--quiet",
                 "--no-figures"]) == 0
    assert "damaged" not in capsys.readouterr().err
    assert json.loads((out / "points" / "p001" / "summary.json").read_text())["arms"][
        "blocking"]["stopped"] == blocking["stopped"]
    assert main(["report", str(out / "points" / "p001"), "--no-figures"]) == 0
    assert "ran out of workers at" in (out / "points" / "p001" / "report.md").read_text()


@pytest.mark.parametrize(("workers", "cause", "words"), [
    ({"count": 6, "capacity": 150}, "capacity", "6 at workers.capacity = 150 (raise it)"),
    ({"count": 6, "session_mean": 100}, "sessions", "left after their session"),
])
def test_capacity_or_sessions_using_up_the_pool_is_a_recorded_stop(
        tmp_path: Path, workers: dict, cause: str, words: str) -> None:
    lines = [f"{k} = {v}" for k, v in workers.items()]
    (tmp_path / "s.toml").write_text("\n".join([
        "[scenario]", "seed = 4", "replicates = 2", "[tasks]", "count = 300", "[workers]",
        *lines, "[budget]", "edges = 1500", "batch = 50",
        "[[arms]]", 'name = "uniform"', 'policy = "uniform"']))
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "run"),
                 "--quiet", "--no-figures"]) == 0
    arm = json.loads((tmp_path / "run" / "summary.json").read_text())["arms"]["uniform"]
    assert len(arm["stopped"]) == 2 and all(cause in s["causes"] for s in arm["stopped"])
    assert words in (tmp_path / "run" / "report.md").read_text()
