"""``marketsim calibrate`` with a truth chooses the number of task types by the errors each
one's twin reproduces: on a crowd made of two task types it finds them, and reports every
number of types' twin errors (header, ``.fit.json``, printed fit) from replicates the written
scenario does not use; the cross-validation is not run."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from marketsim.aggregation.type_selection import MOMENT_REPLICATES
from marketsim.cli import main
from tests.calibrate.test_calibrate_types import two_type_crowd

if TYPE_CHECKING:
    from tests.calibrate._calibrated import Calibrated


def test_truth_chooses_types_by_the_twins_errors(two_type_twin: Calibrated) -> None:
    out = two_type_twin.out
    assert two_type_twin.code == 0
    assert "simulating each one's twin" in two_type_twin.stderr
    assert "by the twins' errors" in two_type_twin.stdout
    assert "twins' errors per K (majority vote / Dawid-Skene): 1: " in two_type_twin.stdout
    fit = json.loads(out.with_suffix(".fit.json").read_text())
    moments = fit["simulated_moments"]
    assert fit["held_out"] is None and moments["replicates"] == MOMENT_REPLICATES
    assert moments["task_types"] == fit["task_types"] == 2
    assert len(moments["twin_dawid_skene_error_per_types"]) == 4
    gaps = moments["discrepancy_points_per_types"]
    # One matrix per worker cannot make Dawid-Skene as bad as the real crowd makes it.
    assert gaps[0] > gaps[1] + 3.0
    real = (moments["real_majority_vote_error"], moments["real_dawid_skene_error"])
    assert 0.0 < real[0] < real[1] < 0.5
    text = out.read_text()
    assert "# task types by the errors each one's twin reproduces" in text
    assert "nearest the design curve chosen among those with 2 type(s), chosen by the errors" \
        in text
    assert len(tomllib.loads(text)["workers"]["confusion"]["type_matrices"]) == 2


def test_same_seed_same_choice(two_type_twin: Calibrated, tmp_path: Path) -> None:
    """The same file calibrated again (here against the shared run) gives the same record."""
    crowd, gold = two_type_crowd(tmp_path)
    out = tmp_path / "again.toml"
    assert main(["calibrate", str(crowd), "--truth", str(gold), "--out", str(out)]) == 0
    records = []
    for path in (two_type_twin.out, out):
        fit = json.loads(path.with_suffix(".fit.json").read_text())
        records.append((fit["simulated_moments"], fit["design_curve"]))
    assert records[0] == records[1]  # the design curve too: its draws are seeded


@pytest.mark.parametrize(("known", "by"), [(49, "held_out"), (50, "simulated_moments")])
def test_too_few_known_tasks_fall_back_to_held_out_likelihood(tmp_path: Path, known: int,
                                                              by: str) -> None:
    crowd, gold = two_type_crowd(tmp_path, n_tasks=60)  # the rule counts known tasks
    lines = gold.read_text().splitlines()
    gold.write_text("\n".join(lines[:known + 1]) + "\n")  # header + the first tasks' truth
    out = tmp_path / "twin.toml"
    assert main(["calibrate", str(crowd), "--truth", str(gold), "--out", str(out)]) == 0
    fit = json.loads(out.with_suffix(".fit.json").read_text())
    other = {"held_out", "simulated_moments"} - {by}
    assert fit[by] is not None and fit[other.pop()] is None
