"""``marketsim calibrate`` hygiene (issue #38 point 16): the twin's classes are the classes
workers gave; every user string written into the scenario is escaped by the TOML writer, and
the options that name outputs are checked before the fit; Python warnings are shown as
``infer`` shows them (one ``marketsim: note:`` line each, no internal path, no repeat); a score
file's refusal names no option calibrate lacks."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marketsim.cli import calibrate as calibrate_cmd
from marketsim.cli import main
from marketsim.data.calibration_input import worker_classes_only
from marketsim.data.labels import LabelSet
from marketsim.scenario.parser import load_scenario
from marketsim.scenario.toml_out import comment, dumps
from tests.calibrate._calibrated import Calibrated, calibrated


def write_crowd(path: Path, seed: int = 1) -> tuple[Path, Path]:
    """150 tasks of classes 0, 1 and (only in the truth) 2, 4 labels each by 10 workers who
    answer 0 or 1 only; the truth file beside it."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, 150)
    lines = ["task,worker,label"]
    for t, c in enumerate(truth.tolist()):
        for w in rng.choice(10, 4, replace=False).tolist():
            answer = int(rng.integers(0, 2)) if c == 2 else (c if rng.random() < 0.8 else 1 - c)
            lines.append(f"t{t},w{w},{answer}")
    path = path / "crowd.csv"
    path.write_text("\n".join(lines) + "\n")
    (path.parent / "truth.csv").write_text(
        "task,label\n" + "".join(f"t{t},{c}\n" for t, c in enumerate(truth.tolist())))
    return path, path.parent / "truth.csv"


def calibrate(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["calibrate", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


NAMES = ['a\nb', 'say "hi" \\ back\\slash', "snow ☃ é 名前 \u2028 tab\there", "x\r\x1b\x7f"]


@pytest.fixture(scope="module")
def named_twin(tmp_path_factory: pytest.TempPathFactory) -> Calibrated:
    """``calibrate`` of :func:`write_crowd`'s file (a class only the truth has) with a
    ``--name`` of line breaks, quotes and Unicode: the run the class test and the name test
    read, each for its own claims."""
    crowd, truth = write_crowd(tmp_path_factory.mktemp("named_twin"))
    return calibrated(crowd, crowd.parent / "twin.toml", "--truth", str(truth),
                      "--task-types", "1", "--name", " | ".join(NAMES))


# --- classes: the workers' --------------------------------------------------------------------
def test_a_class_only_the_truth_has_is_not_a_class_of_the_twin(named_twin: Calibrated) -> None:
    """Before: a 3-class twin whose workers answered class '2' (no real worker ever did) in
    about a tenth of its labels."""
    out, err = named_twin.out, named_twin.stderr
    assert named_twin.code == 0 and "Traceback" not in err, err
    warned = [line for line in err.splitlines() if "class '2'" in line]
    assert len(warned) == 1 and warned[0].startswith("marketsim: warning:")
    assert "not a class of the twin" in warned[0] and "'0', '1'" in warned[0]
    scenario = load_scenario(out)
    assert scenario.tasks.classes == 2
    doc = tomllib.loads(out.read_text())
    matrices = np.asarray(doc["workers"]["confusion"]["matrices"])
    assert matrices.shape[1:] == (2, 2)


def test_worker_classes_only_renumbers_labels_and_forgets_truth_only_classes() -> None:
    data = LabelSet(np.array([0, 0, 1, 2]), np.array([0, 1, 0, 1]), np.array([1, 3, 3, 1]),
                    4, 2, 4, class_ids=np.array(["a", "b", "c", "d"]))
    kept, truth, notes = worker_classes_only(data, np.array([0, 1, 2, 3]))
    assert kept.class_ids.tolist() == ["b", "d"] and kept.n_classes == 2
    assert kept.labels.tolist() == [0, 1, 1, 0]
    assert truth is not None and truth.tolist() == [-1, 0, -1, 1]
    assert len(notes) == 2 and "class 'a'" in notes[0] and "its 1 task" in notes[0]


# --- names and output paths -----------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cs",))))
def test_any_text_is_one_comment_line_and_one_toml_string(text: str) -> None:
    doc = tomllib.loads(f"{comment(text)}\n{comment('command: ' + text)}\n"
                        + dumps({"scenario": {"name": text}}))
    assert doc == {"scenario": {"name": text}}


def test_a_name_with_line_breaks_quotes_and_unicode_round_trips(named_twin: Calibrated
                                                                 ) -> None:
    """Before: a line break in --name broke the header comment after the whole fit
    (TOMLDecodeError traceback)."""
    name, out = " | ".join(NAMES), named_twin.out
    assert named_twin.code == 0 and "Traceback" not in named_twin.stderr, named_twin.stderr
    text = out.read_text(encoding="utf-8")
    assert tomllib.loads(text)["scenario"]["name"] == name
    assert load_scenario(out).name == name
    assert all(line.startswith("#") for line in text.split("\n\n")[0].split("\n"))


def no_read(*_a: object, **_k: object) -> None:
    raise AssertionError("the labels were read before the options were checked")


@pytest.mark.parametrize(("args", "fragment"), [
    (["--name", ""], "--name '' is blank"),
    (["--name", " \n"], "is blank"),
    (["--seed", str(2**64)], "--seed: scenario.seed must be <="),
    (["--jobs", "0"], "--jobs must be >= 1, got 0"),
    (["--out", "nowhere/twin.toml"], "folder 'nowhere' does not exist"),
    (["--out", "twin.toml", "--truth", "twin.fit.json"],
     "--out (fit) 'twin.fit.json' is the truth file, an input"),
    (["--out", "link.toml"], "--out 'link.toml' is the labels file, an input"),
    (["--out", "./sub/../crowd.fit.toml"], "is the labels file, an input"),
])
def test_names_and_outputs_are_checked_before_anything_is_read(
        args: list[str], fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a bad --name or --out was found after the whole fit (or never: the fit record
    overwrote an input)."""
    write_crowd(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "twin.fit.json").write_text("task,label\nt1,0\n")
    (tmp_path / "link.toml").symlink_to(tmp_path / "crowd.csv")
    (tmp_path / "crowd.fit.fit.json").symlink_to(tmp_path / "crowd.csv")
    monkeypatch.setattr(calibrate_cmd, "load_labels_timed", no_read)
    out = [] if "--out" in args else ["--out", "twin.toml"]
    code, stdout, err = calibrate(["crowd.csv", *out, *args], capsys)
    assert code == 2 and stdout == "" and err.count("\n") == 1, err
    assert fragment in err


# --- warnings, as infer shows them ----------------------------------------------------------
def test_warnings_are_one_note_line_each_as_infer_prints_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: raw Python warnings with internal file paths, the same one twice."""
    rng = np.random.default_rng(2)
    lines = ["task,worker,label"] + [f"t{t},w{w},{rng.integers(0, 2)}" for t in range(60)
                                     for w in rng.choice(8, 3, replace=False).tolist()]
    crowd = tmp_path / "random.csv"
    crowd.write_text("\n".join(lines) + "\n")
    code, _, err = calibrate([str(crowd), "--out", str(tmp_path / "twin.toml"),
                              "--task-types", "1"], capsys)
    assert code == 0, err
    notes = [line for line in err.splitlines() if line.startswith("marketsim: note:")]
    assert ".py:" not in err and "Warning:" not in err
    assert not any(line.startswith(" ") for line in err.splitlines())  # no source line shown
    assert len(notes) == len(set(notes)) >= 1
    capsys.readouterr()
    assert main(["infer", str(crowd), "--json"]) == 0
    infer_notes = [line for line in capsys.readouterr().err.splitlines()
                   if line.startswith("marketsim: note:")]
    assert infer_notes and set(infer_notes) <= set(notes)


# --- a score file ---------------------------------------------------------------------------
def test_a_score_file_is_refused_without_naming_an_option_calibrate_lacks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: '... a file of continuous scores needs --scores', an option of infer only."""
    crowd = tmp_path / "scores.csv"
    crowd.write_text("task,worker,score\na,u,0.5\na,v,0.7\n")
    code, _, err = calibrate([str(crowd), "--out", str(tmp_path / "twin.toml")], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "scores.csv:1" in err and "--scores" not in err
    assert "continuous scores" in err
