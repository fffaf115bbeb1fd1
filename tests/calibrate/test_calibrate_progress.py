"""``marketsim calibrate`` shows its long steps (a bar per step on a terminal, a line per step in
a log, nothing with ``--quiet``), and its "as collected" arm gives every task the file's labels
per task (uniform's even rounds), as the goodness of fit's "labels per task" row shows."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from rich.console import Console

from marketsim.cli import main
from marketsim.report.step_progress import BarSteps, PlainSteps, QuietSteps, make_steps
from tests.calibrate._crowd_files import write_crowd

if TYPE_CHECKING:
    from tests.calibrate._calibrated import Calibrated


def skewed_crowd(tmp_path: Path, per_task: int = 5, n_tasks: int = 80) -> tuple[Path, Path]:
    """A CSV crowd where 3 of 10 workers give most labels, ``per_task`` labels a task."""
    rng = np.random.default_rng(4)
    weight = np.r_[np.full(3, 8.0), np.ones(7)]
    keys = np.log(weight)[None, :] + rng.gumbel(size=(n_tasks, 10))
    workers = np.argsort(-keys, axis=1)[:, :per_task].ravel()
    tasks = np.repeat(np.arange(n_tasks), per_task)
    truth = rng.integers(0, 2, n_tasks)
    right = rng.random(tasks.size) < 0.8
    labels = np.where(right, truth[tasks], 1 - truth[tasks])
    return write_crowd(tmp_path, tasks, workers, labels, truth)


def test_the_as_collected_arm_gives_every_task_the_files_labels_per_task_and_steps_show(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Skewed workers, 5 labels a task: the twin gives every task 5 (before even rounds a
    worker who had labelled every task left restarted the round); each step is a line in a
    log (stderr is not a terminal here)."""
    crowd, gold = skewed_crowd(tmp_path)
    out = tmp_path / "twin.toml"
    assert main(["calibrate", str(crowd), "--truth", str(gold), "--out", str(out),
                 "--task-types", "1"]) == 0
    rows = {r["statistic"]: r for r in
            json.loads(out.with_suffix(".fit.json").read_text())["goodness_of_fit"]}
    assert rows["labels per task"]["real"] == "5.00 (sd 0.00, 5-5)"
    assert rows["labels per task"]["simulated"] == "5.00 (sd 0.00, 5-5)"
    assert "so every task gets 5, as in the file" in out.read_text()
    printed = capsys.readouterr()
    assert "labels per task" in printed.out
    for step in ("fitting the worlds of one matrix per worker",
                 "simulating the twin as collected"):
        assert f"marketsim: {step}..." in printed.err, printed.err
    assert "marketsim: simulating the twin as collected: done in " in printed.err


def test_quiet_shows_no_steps(one_type_twin: Calibrated) -> None:
    """The shared ``--quiet`` run (the steps a run without it shows: the test above)."""
    assert one_type_twin.code == 0 and one_type_twin.out.exists()
    err = one_type_twin.stderr
    assert "marketsim: fitting" not in err and "done in" not in err


def test_a_terminal_gets_a_bar_per_step_that_counts_the_work_done() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    steps = make_steps(quiet=False, console=console)
    assert isinstance(steps, BarSteps)
    with steps.step("fitting the worlds", 8) as advance:
        for _ in range(8):
            advance()
    shown = screen.getvalue()
    assert "fitting the worlds" in shown and "8/8" in shown


def test_the_display_follows_run_s_choice() -> None:
    assert isinstance(make_steps(quiet=True), QuietSteps)
    assert isinstance(make_steps(quiet=False, console=Console(file=io.StringIO())), PlainSteps)
    assert isinstance(make_steps(quiet=True, console=Console(file=io.StringIO(),
                                                             force_terminal=True)), QuietSteps)
