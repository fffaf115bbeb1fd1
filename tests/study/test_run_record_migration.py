"""Issue #39 point 4: run folders written before ``run.json`` had a ``record_version`` (the
fixtures under ``fixtures/``, written by marketsim at 2ff353b) are read through one
migration: their flat, omitted-at-default resolved scenario becomes today's typed scenario,
their report is rendered from it, and a resume compares the migrated identity."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.record.summary_model import read_summary, summary_json
from marketsim.scenario.run_migration import read_run
from marketsim.scenario.run_record import recorded_scenario
from marketsim.study.identity import difference
from marketsim.study.run_folder import resume_scenario, run_record

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _copy(name: str, tmp_path: Path) -> Path:
    out = tmp_path / name
    shutil.copytree(FIXTURES / name, out)
    return out


def test_a_version_1_record_migrates_to_the_typed_scenario_it_ran() -> None:
    assert "record_version" not in json.loads((FIXTURES / "v1_classes" / "run.json").read_text())
    record = read_run(FIXTURES / "v1_classes" / "run.json")
    assert record.record_version == 2
    scenario = recorded_scenario(record)
    # the keys version 1 wrote flat are back in their tables
    assert scenario.workers.arrivals.rate == 2.0
    assert scenario.workers.service.mean == 0.5
    assert scenario.workers.spammer_hammer.hammer_fraction == 0.4
    assert scenario.workers.tiers is not None and scenario.workers.tiers.prices == (1.0, 2.0)
    assert scenario.budget.fee == 0.2
    first, second = scenario.arms
    assert first.inference.method == "ds" and first.inference.options.max_iter == 10
    assert second.gold is not None and second.gold.count == 5
    # and it is the study a resume of the folder would run
    assert difference(record, run_record(resume_scenario(FIXTURES / "v1_classes"))) is None


def test_a_version_1_score_market_migrates() -> None:
    scenario = recorded_scenario(read_run(FIXTURES / "v1_scores" / "run.json"))
    assert scenario.workers.model_class.scores
    assert scenario.workers.gaussian_scores.good_fraction == 0.7


@pytest.mark.parametrize("name", ["v1_classes", "v1_scores"])
def test_a_version_1_folder_reports_and_resumes(name: str, tmp_path: Path) -> None:
    folder = _copy(name, tmp_path)
    assert main(["report", str(folder), "--quiet", "--no-figures"]) == 0
    text = (folder / "report.md").read_text()
    assert "## Setup" in text and "no `run.json`" not in text
    curves = (folder / "curves.csv").read_bytes()
    # one unit to simulate again: the last arm's (v1_classes' first arm is uniform, whose even
    # rounds, session 17, changed its curves where a worker had labelled every task left in a
    # round; its entropy-greedy arm's are unchanged)
    sorted((folder / "units").glob("r000001_a*.json"))[-1].unlink()
    assert main(["run", "--resume", str(folder), "--jobs", "1", "--quiet", "--no-figures"]) == 0
    assert (folder / "curves.csv").read_bytes() == curves


def test_another_study_is_refused_against_a_version_1_folder(tmp_path: Path) -> None:
    folder = _copy("v1_classes", tmp_path)
    scenario = resume_scenario(folder).with_overrides(seed=8)
    old = read_run(folder / "run.json")
    assert difference(old, run_record(scenario)) == "seed 7 there, 8 here"


def test_a_version_1_record_whose_scenario_no_longer_reads_is_named(tmp_path: Path) -> None:
    folder = _copy("v1_classes", tmp_path)
    meta = json.loads((folder / "run.json").read_text())
    meta["resolved_scenario"]["arms"][0]["inference"]["method"] = "no-such-method"
    (folder / "run.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match="a run.json of an earlier version"):
        read_run(folder / "run.json")


@pytest.mark.parametrize("name", ["v1_classes", "v1_scores"])
def test_a_version_1_summary_reads_with_the_error_named_for_what_it_is(name: str) -> None:
    """Version 1 called every arm's headline error ``error_rate``, an RMSE too; version 2
    calls it ``error`` beside the arm's ``metric``, with the same numbers."""
    path = FIXTURES / name / "summary.json"
    old = json.loads(path.read_text())
    summary = read_summary(path)
    assert summary.record_version == 2
    for arm_name, arm in summary.arms.items():
        before = old["arms"][arm_name]
        assert arm.error == before["error_rate"]
        assert (arm.error_low, arm.error_high) == (before["error_rate_low"],
                                                  before["error_rate_high"])
        assert arm.final_error_mean == before["final_error_rate"]
        assert arm.metric == ("rmse" if name == "v1_scores" else "error_rate")
    written = summary_json(summary)
    assert written["record_version"] == 2
    assert not any(k.startswith("error_rate") or k == "final_error_rate"
                   for arm in written["arms"].values() for k in arm)
