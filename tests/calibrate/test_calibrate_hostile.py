"""Hostile label files for ``marketsim calibrate`` (issue #28, data the reviewers bring): one
worker, one task, all labels identical, a class never labelled, a truth file covering few
tasks or naming tasks nobody labelled, a stray third class in a binary file, one label per
task. Each gives a one-line exit-2 error or a scenario with a ``marketsim: warning:`` line
saying what the fit cannot learn, never a traceback or a silently wrong scenario. A whole fit
takes 10-30 s: the default loop fits two shapes and checks every other shape's warning up to
the fit; the slow step fits them all."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from marketsim.cli import build_parser, main
from marketsim.cli.calibrate import checked_input, load
from marketsim.data.calibration_input import calibration_warnings, labelled_only
from marketsim.data.labels import LabelSet
from marketsim.scenario.parser import load_scenario


def write_crowd(path: Path, tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray) -> Path:
    path.write_text("task,worker,label\n" + "".join(
        f"t{t},w{w},{x}\n" for t, w, x in zip(tasks, workers, labels, strict=True)))
    return path


def write_truth(path: Path, tasks: np.ndarray, classes: np.ndarray) -> Path:
    path.write_text("task,label\n" + "".join(f"t{t},{c}\n" for t, c in zip(tasks, classes,
                                                                          strict=True)))
    return path


def noisy_crowd(n_tasks: int, per_task: int, n_workers: int, seed: int = 0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Tasks, workers, labels (80 % right) and the truth of a small binary crowd."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_tasks)
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.concatenate([rng.choice(n_workers, per_task, replace=False)
                              for _ in range(n_tasks)])
    right = rng.random(tasks.size) < 0.8
    return tasks, workers, np.where(right, truth[tasks], 1 - truth[tasks]), truth


def calibrate(tmp_path: Path, crowd: Path, truth: Path | None,
              capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    argv = ["calibrate", str(crowd), "--out", str(tmp_path / "twin.toml")]
    argv += ["--truth", str(truth)] if truth is not None else []
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def warnings_of(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("marketsim: warning:")]


def hostile_files(shape: str, tmp_path: Path) -> tuple[Path, Path | None]:
    """The labels file (and truth file) of a hostile shape the fit runs on with a warning."""
    if shape == "few truths":
        tasks, workers, labels, truth = noisy_crowd(120, 4, 10)
        gold = write_truth(tmp_path / "truth.csv", np.arange(3), truth[:3])
        return write_crowd(tmp_path / "crowd.csv", tasks, workers, labels), gold
    if shape == "stray class":
        tasks, workers, labels, _ = noisy_crowd(150, 4, 10)
        labels = labels.copy()
        labels[[5, 77, 301]] = 2
        return write_crowd(tmp_path / "crowd.csv", tasks, workers, labels), None
    tasks, workers, labels, _ = noisy_crowd(60, 1, 1 if shape == "one worker" else 8)
    return write_crowd(tmp_path / "crowd.csv", tasks, workers, labels), None


#: Each hostile shape and the warning calibrate prints before fitting it (the tests marked
#: slow below run the whole fit on the same files: exit 0, the warning, a scenario).
SHAPE_WARNINGS = {
    "one worker": "one worker and no truth file",
    "one label per task": "one label per task and no truth file",
    "few truths": "the truth covers 3 of 120 tasks",
    "stray class": "class '2' is 3 of 600 labels",
}


@pytest.mark.parametrize("shape", SHAPE_WARNINGS)
def test_each_hostile_shape_is_warned_before_the_fit(
        shape: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The warning of each hostile shape, from calibrate's own reading of the files (the
    default loop's cover of the whole-fit tests below, which take 10-30 s each)."""
    crowd, gold = hostile_files(shape, tmp_path)
    argv = ["calibrate", str(crowd), "--out", str(tmp_path / "twin.toml")]
    args = build_parser().parse_args(argv + (["--truth", str(gold)] if gold else []))
    data, truth, _ = load(args, str(crowd), None if gold is None else str(gold), None)
    checked_input(data, truth, str(crowd))
    assert any(SHAPE_WARNINGS[shape] in w for w in warnings_of(capsys.readouterr().err))


def test_all_labels_identical_without_truth_is_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    tasks = np.repeat(np.arange(30), 3)
    crowd = write_crowd(tmp_path / "same.csv", tasks, np.tile([0, 1, 2], 30), np.ones(90, int))
    code, _, err = calibrate(tmp_path, crowd, None, capsys)
    assert code == 2 and err.count("\n") == 1
    assert "same.csv" in err and "every label is class '1'" in err
    assert not (tmp_path / "twin.toml").exists()


def test_labels_of_one_class_are_refused_whatever_classes_the_truth_has(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A twin's classes are the classes workers gave (issue #38 point 16): a truth file's
    other class is not one, so one class is left and nothing to fit (before: a 2-class twin
    whose workers answered class 0 by the fit's smoothing alone)."""
    tasks = np.repeat(np.arange(30), 3)
    crowd = write_crowd(tmp_path / "same.csv", tasks, np.tile([0, 1, 2], 30), np.ones(90, int))
    truth = write_truth(tmp_path / "truth.csv", np.arange(30), np.arange(30) % 2)
    code, _, err = calibrate(tmp_path, crowd, truth, capsys)
    assert code == 2 and err.count("\n") == 1
    assert "same.csv" in err and "every label is class '1'" in err
    assert not (tmp_path / "twin.toml").exists()


@pytest.mark.slow  # the whole fit; test_each_hostile_shape_is_warned_before_the_fit
@pytest.mark.parametrize("shape", ["one worker", "one label per task"])
def test_no_truth_and_nothing_to_learn_accuracy_from_is_warned(
        shape: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    tasks, workers, labels, _ = noisy_crowd(60, 1, 1 if shape == "one worker" else 8)
    crowd = write_crowd(tmp_path / "crowd.csv", tasks, workers, labels)
    code, out, err = calibrate(tmp_path, crowd, None, capsys)
    assert code == 0
    assert any(f"{shape} and no truth file" in w for w in warnings_of(err))
    # the real error against Dawid-Skene's own posterior would be 0 %: not printed as one
    assert "n/a (no truth)" in out


def test_one_task_is_fitted_with_a_warning(tmp_path: Path,
                                           capsys: pytest.CaptureFixture) -> None:
    crowd = write_crowd(tmp_path / "one.csv", np.zeros(8, int), np.arange(8),
                        np.array([1, 0, 1, 1, 0, 1, 1, 1]))
    truth = write_truth(tmp_path / "truth.csv", np.zeros(1, int), np.ones(1, int))
    code, _, err = calibrate(tmp_path, crowd, truth, capsys)
    assert code == 0
    assert any("only 1 labelled task" in w for w in warnings_of(err))
    assert load_scenario(tmp_path / "twin.toml").budget.edges == 8


@pytest.mark.slow  # the whole fit; test_each_hostile_shape_is_warned_before_the_fit
def test_a_truth_file_covering_few_tasks_is_warned(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    tasks, workers, labels, truth = noisy_crowd(120, 4, 10)
    crowd = write_crowd(tmp_path / "crowd.csv", tasks, workers, labels)
    gold = write_truth(tmp_path / "truth.csv", np.arange(3), truth[:3])
    code, _, err = calibrate(tmp_path, crowd, gold, capsys)
    assert code == 0
    assert any("the truth covers 3 of 120 tasks" in w for w in warnings_of(err))
    assert "3 of 120 tasks" in (tmp_path / "twin.toml").read_text()


def test_tasks_only_the_truth_names_stay_out_of_the_twin(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Before: 240 tasks in the twin, the labels spread 2 per task instead of 4."""
    tasks, workers, labels, truth = noisy_crowd(120, 4, 10)
    crowd = write_crowd(tmp_path / "crowd.csv", tasks, workers, labels)
    extra = np.r_[truth, np.zeros(120, int)]
    gold = write_truth(tmp_path / "truth.csv", np.arange(240), extra)
    code, _, err = calibrate(tmp_path, crowd, gold, capsys)
    assert code == 0
    assert any("names 120 tasks nobody labelled" in w for w in warnings_of(err))
    doc = tomllib.loads((tmp_path / "twin.toml").read_text())
    assert doc["tasks"]["count"] == 120 and doc["budget"]["edges"] == 480
    assert doc["budget"]["batch"] == 120


@pytest.mark.slow  # the whole fit; test_each_hostile_shape_is_warned_before_the_fit
def test_a_stray_third_class_in_a_binary_file_is_warned(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    tasks, workers, labels, _ = noisy_crowd(150, 4, 10)
    labels = labels.copy()
    labels[[5, 77, 301]] = 2
    crowd = write_crowd(tmp_path / "crowd.csv", tasks, workers, labels)
    code, _, err = calibrate(tmp_path, crowd, None, capsys)
    assert code == 0
    assert any("class '2' is 3 of 600 labels" in w and "3 classes" in w
               for w in warnings_of(err))
    assert load_scenario(tmp_path / "twin.toml").tasks.classes == 3


def test_labelled_only_keeps_ids_and_order() -> None:
    data = LabelSet(np.array([0, 2, 2]), np.array([0, 1, 0]), np.array([1, 0, 1]), 4, 2, 2,
                    np.array(["a", "b", "c", "d"]))
    kept, truth, dropped = labelled_only(data, np.array([1, 0, -1, 1]))
    assert dropped == 2 and kept.n_tasks == 2
    assert list(kept.task_ids) == ["a", "c"] and list(kept.tasks) == [0, 1, 1]
    assert truth is not None and list(truth) == [1, -1]
    assert calibration_warnings(kept, truth, dropped)[0].startswith(
        "the truth file names 2 tasks nobody labelled")


def test_a_clean_file_gets_no_warning() -> None:
    tasks, workers, labels, truth = noisy_crowd(100, 3, 10)
    data = LabelSet(tasks, workers, labels, 100, 10, 2)
    assert calibration_warnings(data, truth) == []
    assert [w[:16] for w in calibration_warnings(data, None)] == ["no truth file: t"]


def test_many_rare_classes_are_one_warning_that_asks_whether_answers_are_numbers() -> None:
    # A counting task's answers (numbers 0-59) read as 60 classes: one line, not 57.
    rng = np.random.default_rng(3)
    tasks = np.repeat(np.arange(200), 10)
    workers = np.tile(np.arange(10), 200)
    labels = np.where(rng.random(tasks.size) < 0.8, rng.integers(0, 3, tasks.size),
                      rng.integers(3, 60, tasks.size))
    data = LabelSet(tasks, workers, labels, 200, 10, 60)
    truth = rng.integers(0, 3, 200)
    notes = calibration_warnings(data, truth)
    rare = [n for n in notes if "under 1 %" in n]
    assert len(rare) == 1 and rare[0].startswith("57 of the 60 classes are each under 1 %")
    assert "a number, a count or a score" in rare[0]
