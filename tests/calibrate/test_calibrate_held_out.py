"""``marketsim calibrate --task-types auto`` on a file without a truth reports the held-out
likelihood that chose the number of task types (per K, in the scenario's header, ``.fit.json``
and the printed fit, beside BIC), and a file with fewer tasks than folds keeps one type with
a note saying so. (With a truth the twins' errors choose: test_calibrate_moments.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from marketsim.cli import main

if TYPE_CHECKING:
    from tests.calibrate._calibrated import Calibrated


def test_auto_reports_the_held_out_likelihood_per_k(no_truth_twin: Calibrated) -> None:
    out = no_truth_twin.out
    assert no_truth_twin.code == 0, no_truth_twin.stderr
    printed = no_truth_twin.stdout
    assert "held-out log-lik per K: 1: " in printed and "4: " in printed
    assert "BIC" in printed and "by held-out likelihood" in printed
    fit = json.loads(out.with_suffix(".fit.json").read_text())
    held = fit["held_out"]
    assert fit["simulated_moments"] is None
    assert held["folds"] == 5 and held["task_types"] > 1
    assert fit["task_types"] == held["task_types"]
    assert len(held["log_likelihood_per_types"]) == 4
    assert np.allclose(np.sum(held["per_fold"], axis=1), held["log_likelihood_per_types"])
    assert held["gain"] > held["standard_error"]
    text = out.read_text()
    assert "# task types by held-out likelihood (5-fold cross-validation over tasks" in text
    assert f"nearest the design curve chosen among those with {held['task_types']} type(s)" in text


def test_forced_types_skip_the_cross_validation(one_type_twin: Calibrated) -> None:
    out = one_type_twin.out
    assert one_type_twin.code == 0, one_type_twin.stderr
    assert json.loads(out.with_suffix(".fit.json").read_text())["held_out"] is None
    assert "held-out" not in out.read_text()


def test_fewer_tasks_than_folds_keep_one_type_and_say_so(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    crowd, gold = tmp_path / "crowd.csv", tmp_path / "truth.csv"
    crowd.write_text("task,worker,label\n" + "".join(
        f"t{t},w{w},{(t + w) % 2}\n" for t in range(3) for w in range(4)))
    gold.write_text("task,label\nt0,0\nt1,1\nt2,0\n")
    out = tmp_path / "twin.toml"
    assert main(["calibrate", str(crowd), "--truth", str(gold), "--out", str(out)]) == 0
    note = "3 tasks, fewer than 5 folds: one type kept without cross-validation"
    assert f"# task types by held-out likelihood: {note}." in out.read_text()
    assert note in capsys.readouterr().out
    fit = json.loads(out.with_suffix(".fit.json").read_text())
    assert fit["task_types"] == 1 and fit["held_out"]["note"] == note
