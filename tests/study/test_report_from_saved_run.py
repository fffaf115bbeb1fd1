"""A report is built from what the run saved (issue #38, point 11): ``report RUN_DIR`` checks
curves.csv against the unit checkpoints (and, without them, against the scenario's budget and
the recorded early stops) and refuses a truncated or edited file in one line, exit 2, leaving
summary.json and report.md as they were; a re-render never writes a ``complete`` or
``seconds`` it did not measure; resuming or re-running into a folder keeps the run time the
earlier invocations measured (the recorded time is the sum over invocations)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from marketsim.cli import main

TINY = """
[scenario]
name = "saved"
seed = 5
replicates = 2

[tasks]
count = 30

[workers]
count = 6

[budget]
edges = 120
batch = 30

[[arms]]
name = "uniform"
policy = "uniform"

[[arms]]
name = "entropy"
policy = "entropy-greedy"
"""


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("saved")
    (base / "s.toml").write_text(TINY)
    assert main(["run", str(base / "s.toml"), "--out", str(base / "run"), "--quiet",
                 "--no-figures"]) == 0
    return base / "run"


def copy_run(finished: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    return out


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _write(path: Path, rows: list[list[str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def _truncate(run: Path) -> None:
    """Drop the last two rows (the end of the last unit's curve), as a cut copy would."""
    _write(run / "curves.csv", _rows(run / "curves.csv")[:-2])


def _edit(run: Path) -> None:
    """Change the last row's error rate (a number no replicate recorded)."""
    rows = _rows(run / "curves.csv")
    rows[-1][rows[0].index("error_rate")] = "0.5"
    _write(run / "curves.csv", rows)


def _refused(run: Path, capsys: pytest.CaptureFixture[str]) -> str:
    before = {name: (run / name).read_bytes() for name in ("summary.json", "report.md")}
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for name, data in before.items():  # nothing rewritten from the damaged file
        assert (run / name).read_bytes() == data, name
    return lines[0]


@pytest.mark.parametrize("damage", [_truncate, _edit])
def test_report_refuses_a_curves_file_unlike_the_checkpoints(
        finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage) -> None:
    run = copy_run(finished, tmp_path)
    damage(run)
    line = _refused(run, capsys)
    assert "curves.csv" in line and "replicate 1 of arm 'entropy'" in line
    assert "r000001_a001.json" in line and "Delete curves.csv" in line
    # the remedy it names works: the same file as the run wrote
    original = (finished / "curves.csv").read_bytes()
    (run / "curves.csv").unlink()
    assert main(["report", str(run), "--quiet", "--no-figures"]) == 0
    assert (run / "curves.csv").read_bytes() == original
    assert json.loads((run / "summary.json").read_text())["complete"] is True


def test_without_checkpoints_a_curve_cut_short_of_the_budget_is_refused(
        finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = copy_run(finished, tmp_path)
    shutil.rmtree(run / "units")
    _truncate(run)
    line = _refused(run, capsys)
    assert "curves.csv" in line and "replicate 1 of arm 'entropy'" in line
    assert "not budget.edges = 120" in line


def test_a_rerender_keeps_the_measured_time_and_completeness(
        finished: Path, tmp_path: Path) -> None:
    run = copy_run(finished, tmp_path)
    summary = json.loads((run / "summary.json").read_text())
    summary["seconds"] = 1234.5  # what the run measured (a known value)
    (run / "summary.json").write_text(json.dumps(summary))
    assert main(["report", str(run), "--quiet", "--no-figures"]) == 0
    again = json.loads((run / "summary.json").read_text())
    assert again["seconds"] == 1234.5 and again["complete"] is True
    assert "run time: 1234.5 s" in (run / "report.md").read_text()


def test_rerun_and_resume_keep_the_earlier_invocations_time(
        finished: Path, tmp_path: Path) -> None:
    run = copy_run(finished, tmp_path)
    summary = json.loads((run / "summary.json").read_text())
    summary["seconds"] = 1234.5
    (run / "summary.json").write_text(json.dumps(summary))
    toml = finished.parent / "s.toml"
    # the same study into the finished folder: nothing to simulate, the time is kept
    assert main(["run", str(toml), "--out", str(run), "--quiet", "--no-figures"]) == 0
    assert json.loads((run / "summary.json").read_text())["seconds"] == 1234.5
    # one unit lost: the resume simulates it and adds its own time to the earlier ones'
    (run / "units" / "r000001_a001.json").unlink()
    assert main(["run", "--resume", str(run), "--quiet", "--no-figures"]) == 0
    resumed = json.loads((run / "summary.json").read_text())
    assert resumed["seconds"] > 1234.5 and resumed["complete"] is True


def test_resume_after_a_kill_counts_the_checkpointed_units_time(
        finished: Path, tmp_path: Path) -> None:
    """Killed before summary.json was written: the units' own measured times stand in for
    the earlier invocation."""
    run = copy_run(finished, tmp_path)
    for name in ("summary.json", "curves.csv"):
        (run / name).unlink()
    (run / "units" / "r000001_a001.json").unlink()
    kept = sum(json.loads(p.read_text())["seconds"] for p in (run / "units").glob("*.json"))
    assert main(["run", "--resume", str(run), "--quiet", "--no-figures"]) == 0
    assert json.loads((run / "summary.json").read_text())["seconds"] >= kept
