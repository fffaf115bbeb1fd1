"""Output files that are one file (issue #38 point 13): two outputs of one command, or an
output and an input, resolving to the same file — however spelled (``./``, ``..``, a symbolic
or hard link) — are refused in one line with exit 2 before anything is read or computed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from marketsim.cli import infer as infer_cmd
from marketsim.cli import main

LABELS = "task,worker,label\na,u,y\na,v,y\nb,u,n\nb,v,n\n"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "labels.csv").write_text(LABELS)
    (tmp_path / "sub").mkdir()
    (tmp_path / "old.csv").write_text("kept\n")
    (tmp_path / "link.csv").symlink_to(tmp_path / "old.csv")
    os.link(tmp_path / "old.csv", tmp_path / "hard.csv")
    return tmp_path


def no_read(*_a: object, **_k: object) -> None:
    raise AssertionError("the labels were read before the outputs were checked")


@pytest.mark.parametrize(("output", "workers"), [
    ("p.csv", "p.csv"),  # before: the worker table replaced the predictions, exit 0
    ("p.csv", "./p.csv"),
    ("sub/../p.csv", "p.csv"),
    ("old.csv", "link.csv"),
    ("link.csv", "old.csv"),
    ("hard.csv", "old.csv"),
])
def test_infer_refuses_two_outputs_that_are_one_file(
        output: str, workers: str, folder: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(infer_cmd, "load_labels", no_read)
    code = main(["infer", "labels.csv", "--output", output, "--workers", workers])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert (f"--output {output!r} and --workers {workers!r} are the same file" in err), err
    assert not (folder / "p.csv").exists()
    assert (folder / "old.csv").read_text() == "kept\n"


@pytest.mark.parametrize("output", ["./labels.csv", "sub/../labels.csv", "in.csv"])
def test_infer_refuses_an_output_that_is_an_input_however_spelled(
        output: str, folder: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (folder / "in.csv").symlink_to(folder / "labels.csv")
    monkeypatch.setattr(infer_cmd, "load_labels", no_read)
    code = main(["infer", "labels.csv", "--workers", output])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "is the labels file, an input" in err
    assert (folder / "labels.csv").read_text() == LABELS


def test_distinct_outputs_are_written(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["infer", "labels.csv", "--output", "p.csv", "--workers", "sub/w.csv"]) == 0
    assert (folder / "p.csv").read_text().startswith("task,predicted")
    assert (folder / "sub" / "w.csv").read_text().startswith("worker,n_labels")


@pytest.mark.parametrize(("option", "path", "fragment"), [
    ("--output", "nowhere/p.csv", "--output 'nowhere/p.csv': folder 'nowhere' does not exist"),
    ("--workers", "sub", "--workers 'sub' is a folder"),
])
def test_an_output_that_cannot_be_written_is_refused_before_reading(
        option: str, path: str, fragment: str, folder: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a missing folder was found when the file was written, after the fit."""
    monkeypatch.setattr(infer_cmd, "load_labels", no_read)
    code = main(["infer", "labels.csv", option, path])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and fragment in err, err
