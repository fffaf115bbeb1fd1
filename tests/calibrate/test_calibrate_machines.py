"""``calibrate`` on a mixed label file: the humans fitted alone, each model fitted as a
``[[machines]]`` classifier, and the acceptance of issue #41 point 4 — parameter recovery of
each model's accuracy (2 points), rho (0.1) and calibration (0.05 ECE)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from marketsim.aggregation.machine_fit import calibration_error, implied_calibration_error
from marketsim.aggregation.registry import make_estimator
from marketsim.aggregation.source_accuracy import source_accuracy
from marketsim.data.labels import LabelSet
from marketsim.data.mixed_labels import split_sources
from marketsim.scenario.calibration import Calibration
from marketsim.scenario.parser import load_scenario
from tests.calibrate._planted_machines import MODELS, fitted, planted_crowd, write_planted


def recovery_gaps(cal: Calibration) -> list[tuple[str, float, float, float]]:
    """Per model: |accuracy - planted|, |rho - planted| and the gap between the calibration
    error its fitted and planted options imply."""
    gaps = []
    for fit, planted in zip(cal.machines, sorted(MODELS, key=lambda m: m["name"]), strict=True):
        assert fit.name == planted["name"]
        true_ece = implied_calibration_error(planted["accuracy"], planted["insight"],
                                             planted["overconfidence"])
        assert fit.implied_ece is not None
        gaps.append((fit.name, abs(fit.accuracy - planted["accuracy"]),
                     abs(fit.rho - planted["rho"]), abs(fit.implied_ece - true_ece)))
    return gaps


def assert_recovered(cal: Calibration) -> None:
    for name, accuracy, rho, ece in recovery_gaps(cal):
        assert accuracy < 0.02, (name, accuracy)
        assert rho < 0.1, (name, rho)
        assert ece < 0.05, (name, ece)


def test_recovers_each_models_parameters_one_seed() -> None:
    """Acceptance (#41), the default loop's seed: 1500 tasks with a truth."""
    assert_recovered(fitted(0, 1500, with_truth=True))


@pytest.mark.slow
@pytest.mark.parametrize("with_truth", [True, False])
@pytest.mark.parametrize("seed", range(5))
def test_recovers_each_models_parameters_five_seeds(seed: int, with_truth: bool) -> None:
    """Acceptance (#41): 5 seeds of 5000 tasks, with a truth file and without one (the
    accuracy then measured through the humans' posterior, its error integrated over)."""
    assert_recovered(fitted(seed, 5000, with_truth))


def test_split_keeps_each_models_first_answer_by_time() -> None:
    """A model asked a task again: its first answer (by time, else file order) is kept, the
    repeat dropped and a changed answer counted; the humans keep only human workers."""
    data = LabelSet(np.array([0, 0, 1, 0, 1, 1]), np.array([0, 2, 2, 2, 1, 2]),
                    np.array([1, 0, 1, 1, 0, 1]), 2, 3, 2,
                    confidence=np.array([np.nan, 0.6, 0.9, 0.8, np.nan, 0.9]),
                    sources=("human", "human", "gpt"))
    times = np.array([0.0, 5.0, 1.0, 2.0, 3.0, 4.0])
    humans, answers, rows = split_sources(data, times)
    assert humans.n_workers == 2 and humans.n_labels == 2 and humans.sources is None
    assert rows.tolist() == [0, 4]
    assert answers is not None and answers.names == ("gpt",)
    assert answers.task.tolist() == [0, 1]
    assert answers.label.tolist() == [1, 1]  # task 0: the answer at time 2, not the one at 5
    assert answers.confidence.tolist() == [0.8, 0.9]
    assert answers.repeats.tolist() == [2] and answers.changed.tolist() == [1]
    _, in_file_order, _ = split_sources(data)
    assert in_file_order is not None and in_file_order.label.tolist() == [0, 1]


def test_answers_follow_the_humans_tasks_and_classes_by_id() -> None:
    """Re-indexed onto the humans' tasks and classes after calibrate's checks: an answer on a
    task no human labelled is dropped, a class no human gave is -1 (a wrong answer)."""
    data = LabelSet(np.array([0, 1, 0, 1, 2]), np.array([0, 0, 1, 1, 1]),
                    np.array([0, 1, 2, 1, 0]), 3, 2, 3, np.array(["a", "b", "c"]),
                    np.array(["w", "gpt"]), np.array(["x", "y", "z"]),
                    sources=("human", "gpt"))
    _, answers, _ = split_sources(data)
    assert answers is not None
    on = answers.on(np.array(["b", "a"]), np.array(["x", "y"]))
    assert sorted(zip(on.task.tolist(), on.label.tolist(), strict=True)) == [(0, 1), (1, -1)]


def test_calibration_error_of_options_and_of_answers() -> None:
    """A calibrated classifier implies no calibration error, an overconfident one more the
    more overconfident; the binned ECE of answers is the confidence-weighted gap."""
    assert implied_calibration_error(0.8, 0.7, 0.0) == pytest.approx(0.0, abs=1e-12)
    errors = [implied_calibration_error(0.8, 0.7, o) for o in (0.5, 1.0, 2.0)]
    assert 0 < errors[0] < errors[1] < errors[2]
    conf = np.array([0.95, 0.95, 0.55, 0.55, np.nan])
    right = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    assert calibration_error(conf, right) == pytest.approx(0.5 * 0.45 + 0.5 * 0.45)
    assert calibration_error(np.full(3, np.nan), np.ones(3)) is None


def test_a_models_measured_accuracy_is_infers() -> None:
    """One computation: the accuracy ``calibrate`` measures a model's answers by against the
    truth is ``infer``'s ``accuracy_vs_truth`` for that source."""
    data, truth = planted_crowd(1, 300)
    cal = fitted(1, 300, with_truth=True)
    rows = {r["source"]: r for r in source_accuracy(make_estimator("ds").fit(data), data, truth)}
    for fit in cal.machines:
        assert fit.measured_accuracy == pytest.approx(rows[fit.name]["accuracy_vs_truth"],
                                                      abs=1e-6)


@pytest.mark.slow
def test_calibrate_writes_a_mixed_files_models_as_machines(tmp_path: Path) -> None:
    """End to end: the written scenario has one [[machines]] classifier per model and
    validates; its fit names each model's options and goodness of fit; ``infer`` prints the
    same measured accuracy per model."""
    from marketsim.cli import main

    labels, truth = write_planted(tmp_path, 0, 400)
    out = tmp_path / "twin.toml"
    assert main(["calibrate", str(labels), "--truth", str(truth), "--out", str(out),
                 "--quiet", "--task-types", "1"]) == 0
    doc = tomllib.loads(out.read_text())
    assert [m["name"] for m in doc["machines"]] == ["big", "odd", "small"]
    assert all(m["kind"] == "classifier" for m in doc["machines"])
    assert [m.name for m in load_scenario(out).machines] == ["big", "odd", "small"]
    record = json.loads(out.with_suffix(".fit.json").read_text())
    models = {m["name"]: m for m in record["machines"]["models"]}
    assert all(m["repeats"] == 40 and m["answers"] == 400 for m in models.values())
    stats = {r["statistic"] for r in record["goodness_of_fit"]}
    assert {"model big: accuracy vs truth", "model big: ECE (vs truth)"} <= stats
    infer_json = tmp_path / "infer.json"
    import contextlib
    import io
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["infer", str(labels), "--truth", str(truth), "--json"]) == 0
    infer_json.write_text(buffer.getvalue())
    sources = {s["source"]: s for s in json.loads(buffer.getvalue())["sources"]}
    for name, m in models.items():
        assert m["measured_accuracy"] == pytest.approx(sources[name]["accuracy_vs_truth"])


def test_the_written_scenario_holds_each_model_as_a_machine() -> None:
    """The scenario text calibrate writes has one [[machines]] classifier per model with the
    fitted options, validates, and says in its header what was fitted."""
    from marketsim.scenario.calibration import check_text
    from marketsim.scenario.calibration_text import calibrated_text

    cal = fitted(2, 200, with_truth=True)
    text = calibrated_text(cal, "python -m marketsim calibrate mixed.csv --out twin.toml")
    scenario = check_text(text, "twin.toml")
    assert [m.name for m in scenario.machines] == ["big", "odd", "small"]
    for written, fit in zip(scenario.machines, cal.machines, strict=True):
        assert written.kind == "classifier"
        assert written.accuracy == pytest.approx(fit.accuracy, abs=1e-6)
        assert written.rho == pytest.approx(fit.rho, abs=1e-6)
        assert written.overconfidence == pytest.approx(fit.overconfidence, abs=1e-6)
    assert "# models (the file's source column)" in text


def test_a_file_of_model_labels_only_is_refused(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """No human label: one line naming the file, exit 2 (the humans are fitted first)."""
    from marketsim.cli import main

    labels = tmp_path / "models.csv"
    labels.write_text("task,worker,label,source,confidence\nt1,gpt,a,gpt,0.9\n"
                      "t2,gpt,b,gpt,0.8\n")
    assert main(["calibrate", str(labels), "--out", str(tmp_path / "twin.toml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no human labels" in err[0] and str(labels) in err[0]
