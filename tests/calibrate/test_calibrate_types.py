"""``marketsim calibrate`` with task types: on a crowd whose workers are good on one type of
task and poor on the other, a mixture of two types is chosen (the twins' errors choose two
types, and the one of them nearest the design curve) and the scenario carries it
(``type_shares``, ``type_matrices``) and runs; ``--task-types 1`` keeps one matrix per
worker; a bad ``--task-types`` is one line with exit code 2; ``--duplicates first`` reads a
file with repeated pairs and times, keeping each kept label's own time."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from marketsim.cli import main
from marketsim.scenario.parser import load_scenario
from marketsim.study.runner import run_unit

if TYPE_CHECKING:
    from tests.calibrate._calibrated import Calibrated

N_TASKS, N_WORKERS, PER_TASK = 400, 10, 8


def two_type_crowd(tmp_path: Path, seed: int = 0, times: bool = False,
                   n_tasks: int = N_TASKS) -> tuple[Path, Path]:
    """Workers 0-4 right 95 % on type-0 tasks and 50 % on type-1 tasks, workers 5-9 the
    other way round; 30 % of the tasks are of type 0."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_tasks)
    kind = (rng.random(n_tasks) < 0.7).astype(int)
    tasks = np.repeat(np.arange(n_tasks), PER_TASK)
    workers = np.argsort(rng.random((n_tasks, N_WORKERS)), axis=1)[:, :PER_TASK].ravel()
    good = (workers < 5) == (kind[tasks] == 0)
    right = rng.random(tasks.size) < np.where(good, 0.95, 0.5)
    labels = np.where(right, truth[tasks], 1 - truth[tasks])
    crowd, gold = tmp_path / "crowd.csv", tmp_path / "truth.csv"
    head = "task,worker,label" + (",time" if times else "")
    rows = [f"t{t},w{w},{y}" + (f",{i}" if times else "")
            for i, (t, w, y) in enumerate(zip(tasks, workers, labels, strict=True))]
    crowd.write_text(head + "\n" + "\n".join(rows) + "\n")
    gold.write_text("task,label\n" + "".join(f"t{t},{x}\n" for t, x in enumerate(truth)))
    return crowd, gold


def test_two_task_types_are_chosen_and_the_twin_runs(two_type_twin: Calibrated) -> None:
    out = two_type_twin.out
    assert two_type_twin.code == 0
    printed = two_type_twin.stdout
    assert "task types: 1 type (" in printed and "2 task types BIC" in printed
    fit = json.loads(out.with_suffix(".fit.json").read_text())
    bic = {c["world"]: c["bic"] for c in fit["candidates"]}
    assert fit["world"].startswith("2 task types"), bic
    # of the two worlds with 2 types (shares shared or per class), the nearer the curve
    judged = [c["world"] for c in fit["design_curve"]["candidates"]]
    assert fit["task_types"] == 2 and fit["world"] == fit["design_curve"]["world"]
    # and the worlds with difficulty on the design curve, with pulls or with the per-label
    # accuracy restored, judged whatever the number of types (here they lose: the crowd has
    # two types)
    on_curve = [w for w in judged if w.endswith("task difficulty on the design curve")
                or "ambiguous tasks pulling toward one class" in w
                or w.endswith("per-label accuracy restored")]
    assert sorted(set(judged) - set(on_curve)) == ["2 task types",
                                                   "2 task types, shares per class"]
    text = out.read_text()
    assert "<- chosen" in text and "# candidate worlds" in text and "type shares" in text
    table = tomllib.loads(text)["workers"]["confusion"]
    assert "matrices" not in table and len(table["type_matrices"]) == 2
    assert all(len(m) == N_WORKERS for m in table["type_matrices"])
    # each class's shares (one row, or one per class: types are then named within each class,
    # so a row is sorted on its own before the 30/70 split is compared)
    shares = np.sort(np.atleast_2d(np.asarray(table["type_shares"])), axis=1)
    assert np.allclose(shares, [0.3, 0.7], atol=0.08), shares
    scenario = load_scenario(out)
    result = run_unit(scenario.with_overrides(replicates=1), 0, 0)
    assert result.rows[-1].edges == N_TASKS * PER_TASK


def test_task_types_1_keeps_one_matrix_per_worker(one_type_twin: Calibrated) -> None:
    out = one_type_twin.out
    assert one_type_twin.code == 0, one_type_twin.stderr
    text = out.read_text()
    assert "--task-types 1" in text.splitlines()[1]
    assert "task types" not in json.loads(out.with_suffix(".fit.json").read_text())["world"]
    assert "matrices" in tomllib.loads(text)["workers"]["confusion"]


@pytest.mark.parametrize("value", ["0", "5", "two", "auto2"])
def test_a_bad_task_types_is_one_line_and_exit_2(tmp_path: Path, value: str,
                                                 capsys: pytest.CaptureFixture) -> None:
    crowd, gold = two_type_crowd(tmp_path, n_tasks=10)
    assert main(["calibrate", str(crowd), "--truth", str(gold), "--task-types", value,
                 "--out", str(tmp_path / "x.toml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--task-types must be auto or a number from 1 to 4, " \
        f"got {value!r}" in err
    assert not (tmp_path / "x.toml").exists()


def test_duplicates_first_keeps_each_label_s_time(one_type_twin: Calibrated) -> None:
    """Labels repeated at the end of the file with a later time and the other answer
    (:func:`~tests.conftest.repeated_crowd`): --duplicates first keeps the original
    rows, so the fitted rate is the original's (one label per time unit) and the twin is
    fitted on the original answers."""
    n = 100 * PER_TASK  # the labels before the repeats
    out, err = one_type_twin.out, one_type_twin.stderr
    assert one_type_twin.code == 0, err
    assert "marketsim: warning: " in err and "dropped 40 repeated answers" in err
    text = out.read_text()
    assert "--duplicates first" in text.splitlines()[1]
    arrivals = json.loads(out.with_suffix(".fit.json").read_text())["arrivals"]
    assert arrivals["labels"] == n and arrivals["span"] == n - 1
    assert tomllib.loads(text)["workers"]["arrivals"]["rate"] == pytest.approx(1.0)
