"""``--duplicates first|last|error``: a label file that answers a (task, worker) pair more
than once is refused in one line naming the line (the default), or keeps each pair's first or
last answer in file order with one warning line saying how many were dropped; the times read
beside the labels drop the same rows, so each kept label keeps its own time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from marketsim.cli import main
from marketsim.data.load import load_labels, load_labels_timed
from marketsim.data.scores import load_scores
from marketsim.errors import InputError

#: (task, worker, label, time): w1 answers t1 three times (0 at 10, 1 at 11, 1 at 12), w2
#: answers t2 twice (1 at 13, 0 at 14).
ROWS = [("t1", "w1", 0, 10.0), ("t1", "w2", 1, 1.0), ("t2", "w1", 1, 2.0),
        ("t1", "w1", 1, 11.0), ("t2", "w2", 1, 13.0), ("t1", "w1", 1, 12.0),
        ("t2", "w2", 0, 14.0), ("t3", "w3", 0, 5.0)]


def write(tmp_path: Path) -> tuple[Path, Path]:
    path, gold = tmp_path / "labels.csv", tmp_path / "truth.csv"
    path.write_text("task,worker,label,time\n"
                    + "".join(f"{t},{w},{y},{s}\n" for t, w, y, s in ROWS))
    gold.write_text("task,label\nt1,1\nt2,0\nt3,0\n")
    return path, gold


def answers(data, times=None) -> dict[tuple[str, str], tuple[int, float | None]]:
    out = {}
    for i in range(data.n_labels):
        key = (str(data.task_ids[data.tasks[i]]), str(data.worker_ids[data.workers[i]]))
        out[key] = (int(data.class_ids[data.labels[i]]),
                    None if times is None else float(times.values[i]))
    return out


def test_error_is_the_default_and_names_the_line(tmp_path: Path) -> None:
    path, gold = write(tmp_path)
    with pytest.raises(InputError, match=r"labels.csv:5: task 't1' already labelled by worker "
                       r"'w1' \(first at line 2\)"):
        load_labels(path, gold)


@pytest.mark.parametrize(("rule", "t1w1", "t2w2"), [("first", (0, 10.0), (1, 13.0)),
                                                    ("last", (1, 12.0), (0, 14.0))])
def test_first_and_last_keep_that_answer_and_its_time(tmp_path: Path, rule: str,
                                                      t1w1: tuple, t2w2: tuple) -> None:
    path, gold = write(tmp_path)
    notes: list[str] = []
    data, truth, times = load_labels_timed(path, gold, duplicates=rule, on_drop=notes.append)
    assert times is not None and times.values.size == data.n_labels == 5
    # times are measured from the earliest label kept (1.0 here in both cases)
    got = answers(data, times)
    assert got[("t1", "w1")] == (t1w1[0], t1w1[1] - 1.0)
    assert got[("t2", "w2")] == (t2w2[0], t2w2[1] - 1.0)
    assert got[("t1", "w2")] == (1, 0.0) and got[("t3", "w3")] == (0, 4.0)
    assert got[("t2", "w1")] == (1, 1.0)
    assert truth is not None and list(truth) == [1, 0, 0]
    assert notes == [f"{path}: dropped 3 repeated answers of a (task, worker) pair, keeping "
                     f"each pair's {rule} (--duplicates {rule})"]


def test_a_file_without_repeats_is_unchanged_and_nothing_is_said(tmp_path: Path) -> None:
    path = tmp_path / "ok.csv"
    path.write_text("task,worker,label\na,x,0\na,y,1\nb,x,1\n")
    notes: list[str] = []
    plain, _ = load_labels(path)
    first, _ = load_labels(path, duplicates="first", on_drop=notes.append)
    assert notes == []
    for name in ("tasks", "workers", "labels"):
        assert np.array_equal(getattr(plain, name), getattr(first, name))


def test_zhang_and_score_files_take_the_rule_too(tmp_path: Path) -> None:
    zhang = tmp_path / "crowd.txt"
    zhang.write_text("1 1 1\n1 1 2\n2 1 2\n")
    data, _ = load_labels(zhang, duplicates="last")
    assert data.n_labels == 2 and list(data.labels) == [1, 1]
    scores = tmp_path / "scores.csv"
    scores.write_text("task,worker,score\na,x,0.2\na,x,0.9\nb,x,0.5\n")
    data, _ = load_scores(scores, duplicates="first")
    assert data.n_labels == 2 and data.scores is not None and list(data.scores) == [0.2, 0.5]


def test_infer_keeps_the_first_answer_and_warns_once(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    path, gold = write(tmp_path)
    out = tmp_path / "pred.csv"
    assert main(["infer", str(path), "--truth", str(gold), "--method", "mv",
                 "--duplicates", "first", "--output", str(out)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"marketsim: warning: {path}: dropped 3 repeated answers of a (task, "
                   "worker) pair, keeping each pair's first (--duplicates first)"]


@pytest.mark.parametrize("command", ["infer", "calibrate"])
def test_a_bad_rule_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture,
                                           command: str) -> None:
    path, gold = write(tmp_path)
    extra = ["--out", str(tmp_path / "twin.toml")] if command == "calibrate" else []
    assert main([command, str(path), "--truth", str(gold), "--duplicates", "frist",
                 *extra]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "--duplicates 'frist' is not one of: error, first, last" \
        in lines[0], captured.err
    assert not (tmp_path / "twin.toml").exists()


def test_calibrate_default_refuses_repeats_in_one_line(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    path, gold = write(tmp_path)
    assert main(["calibrate", str(path), "--truth", str(gold), "--out",
                 str(tmp_path / "twin.toml")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "already labelled by worker 'w1'" in lines[0]
