"""``infer`` input checks of issue #13 through :func:`marketsim.cli.main` (items 1, 9, 11, 13, 15).

Each test drives the command line (or the atomic writers) only, so it runs unchanged on the
code before the fix and fails there.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.record import files as report_files

LABELS = (
    "task,worker,label\n"
    "a,w1,yes\na,w2,yes\na,c,no\n"
    "b,w1,no\nb,w2,no\nb,c,yes\n"
    "c,w1,yes\nc,w2,no\n"
    "d,w1,no\nd,w2,no\nd,c,yes\n"
)
TRUTH = "task,label\na,yes\nb,no\nc,yes\nd,no\n"


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["infer", *args])
    out, err = capsys.readouterr()
    return code, out, err


def one_error(code: int, out: str, err: str) -> str:
    """The single stderr line of a refused run (exit 2, nothing on stdout, no traceback)."""
    assert code == 2, err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "labels.csv").write_text(LABELS)
    (tmp_path / "truth.csv").write_text(TRUTH)
    return tmp_path


# --- item 1: a truth file that does not match the labels ---------------------------------------
def test_truth_of_another_dataset_is_refused(folder: Path, capsys) -> None:
    (folder / "other.csv").write_text("task,label\nx,yes\ny,no\nz,no\n")
    line = one_error(*run(["labels.csv", "--truth", "other.csv"], capsys))
    assert line.startswith("marketsim: error: other.csv: covers none of the 4 tasks of labels.csv")


def test_shifted_zhang_truth_is_refused(folder: Path, capsys) -> None:
    (folder / "crowd.txt").write_text("1 1 1\n1 2 1\n2 1 2\n2 2 2\n")
    (folder / "shifted.txt").write_text("3 1\n4 2\n")
    line = one_error(*run(["crowd.txt", "--truth", "shifted.txt"], capsys))
    assert "shifted.txt: covers none of the 2 tasks of crowd.txt" in line


def test_partial_truth_warns_and_reports_coverage(folder: Path, capsys) -> None:
    (folder / "part.csv").write_text("task,label\na,yes\nzz,no\nyy,no\n")
    code, out, err = run(["labels.csv", "--truth", "part.csv", "--json"], capsys)
    assert code == 0
    assert err == ("marketsim: warning: part.csv covers 1 of 4 tasks (25.0 %), and has truth "
                   "for 2 tasks nobody labelled; the error rate is over those 3 tasks only\n")
    coverage = json.loads(out)["truth_coverage"]
    assert coverage == {"covered": 1, "total": 4, "fraction": 0.25, "truth_only": 2}


def test_partial_true_means_warn(folder: Path, capsys) -> None:
    (folder / "scores.csv").write_text("task,worker,score\np,s1,0.2\np,s2,0.3\nq,s1,0.7\n")
    (folder / "means.csv").write_text("task,mean\np,0.25\n")
    code, out, err = run(["scores.csv", "--scores", "--truth", "means.csv", "--json"], capsys)
    assert code == 0 and "means.csv covers 1 of 2 tasks (50.0 %); the RMSE" in err
    assert json.loads(out)["truth_coverage"]["covered"] == 1


def test_full_truth_is_silent(folder: Path, capsys) -> None:
    code, out, err = run(["labels.csv", "--truth", "truth.csv", "--json"], capsys)
    assert code == 0 and err == ""
    assert json.loads(out)["truth_coverage"] == {"covered": 4, "total": 4, "fraction": 1.0,
                                                 "truth_only": 0}


def test_replay_refuses_a_truth_that_covers_nothing(folder: Path) -> None:
    from marketsim.errors import InputError
    from marketsim.scenario.replay import ReplaySpec, load_replay

    (folder / "crowd.txt").write_text("1 1 1\n1 2 1\n2 1 2\n2 2 2\n")
    (folder / "other.txt").write_text("7 1\n8 2\n")
    spec = ReplaySpec(labels=str(folder / "crowd.txt"), truth=str(folder / "other.txt"))
    with pytest.raises(InputError, match="covers none of the 2 tasks"):
        load_replay(spec)


# --- item 9: --dataset without --data-dir finds the data where `run` does ---------------------
def test_dataset_without_data_dir_uses_the_shared_data(folder: Path, monkeypatch, capsys) -> None:
    root = Path(__file__).resolve().parents[2].parent / "shared" / "data"
    if not (root / "zhang2014" / "rte_crowd.txt").is_file():
        pytest.skip(f"reference data not found in {root}")
    monkeypatch.delenv("MARKETSIM_DATA", raising=False)
    code, out, err = run(["--dataset", "rte", "--method", "mv", "--json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["labels_file"] == str(root / "zhang2014" / "rte_crowd.txt")
    assert 0.09 <= result["error_rate"] <= 0.115  # Table 3: majority vote 10.31 %


# --- item 13: tab- and semicolon-separated files, --delimiter, --columns -----------------------
@pytest.mark.parametrize(("name", "sep"), [("labels.tsv", "\t"), ("semi.csv", ";"),
                                           ("pipe.csv", "|"), ("tab.csv", "\t")])
def test_other_delimiters_are_detected(folder: Path, capsys, name: str, sep: str) -> None:
    (folder / name).write_text(LABELS.replace(",", sep))
    code, out, err = run([name, "--truth", "truth.csv", "--json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert (result["n_tasks"], result["n_workers"], result["n_labels"]) == (4, 3, 11)


def test_delimiter_option(folder: Path, capsys) -> None:
    (folder / "semi.txt").write_text(LABELS.replace(",", ";"))
    code, out, err = run(["semi.txt", "--format", "csv", "--delimiter", "semicolon", "--json"],
                         capsys)
    assert code == 0, err
    assert json.loads(out)["n_labels"] == 11
    line = one_error(*run(["labels.csv", "--delimiter", "x"], capsys))
    assert "--delimiter 'x'" in line and "tab" in line


def test_columns_option_maps_names(folder: Path, capsys) -> None:
    text = LABELS.replace("task,worker,label", "item,annotator,answer_text")
    (folder / "mapped.csv").write_text(text)
    cols = "task=item,worker=annotator,label=answer_text"
    code, out, err = run(["mapped.csv", "--columns", cols, "--truth", "truth.csv", "--json"],
                         capsys)
    assert code == 0, err
    assert json.loads(out)["error_rate"] is not None


@pytest.mark.parametrize(("spec", "fragment"), [
    ("task=item,worker=annotator,colour=answer_text", "unknown role 'colour'"),
    ("task=itemz,worker=annotator,label=answer_text", "no column 'itemz'"),
])
def test_columns_errors_name_file_and_columns(folder: Path, capsys, spec: str,
                                              fragment: str) -> None:
    (folder / "mapped.csv").write_text(
        LABELS.replace("task,worker,label", "item,annotator,answer_text"))
    line = one_error(*run(["mapped.csv", "--columns", spec], capsys))
    assert line.startswith("marketsim: error: mapped.csv:1: ") and fragment in line
    assert "'item', 'annotator', 'answer_text'" in line


# --- item 15: an output file that is an input -------------------------------------------------
@pytest.mark.parametrize(("option", "target"), [
    ("--output", "labels.csv"), ("--workers", "truth.csv"), ("--output", "./truth.csv"),
    ("--workers", "features.csv"),
])
def test_output_naming_an_input_is_refused(folder: Path, capsys, option: str,
                                           target: str) -> None:
    (folder / "features.csv").write_text("task,f1\na,1\nb,0\nc,1\nd,0\n")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    args = ["labels.csv", "--truth", "truth.csv", "--method", "ds-features", "--features",
            "features.csv", option, target]
    line = one_error(*run(args, capsys))
    assert option in line and "input" in line
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_output_through_a_link_to_an_input_is_refused(folder: Path, capsys) -> None:
    try:
        os.symlink(folder / "labels.csv", folder / "alias.csv")
    except OSError:  # pragma: no cover - no symlinks on this system
        pytest.skip("cannot make a symbolic link")
    line = one_error(*run(["labels.csv", "--output", "alias.csv"], capsys))
    assert "--output" in line and "labels" in line
    assert (folder / "labels.csv").read_text() == LABELS


# --- item 11: files written with the usual mode, not 0600 -------------------------------------
WRITERS = {
    "bytes": lambda p: report_files.write_bytes_atomic(p, b"x"),
    "text": lambda p: report_files.write_text_atomic(p, "x"),
    "json": lambda p: report_files.write_json_atomic(p, {"x": 1}),
    "csv": lambda p: report_files.write_csv_atomic(p, ["a"], [["1"]]),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_writers_respect_the_umask(tmp_path: Path, writer: str, umask: int,
                                          mode: int) -> None:
    old = os.umask(umask)
    try:
        WRITERS[writer](tmp_path / "out.file")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "out.file").st_mode) == mode


def test_infer_output_files_respect_the_umask(folder: Path, capsys) -> None:
    old = os.umask(0o022)
    try:
        code, _, err = run(["labels.csv", "--output", "post.csv", "--workers", "w.csv"], capsys)
    finally:
        os.umask(old)
    assert code == 0, err
    for name in ("post.csv", "w.csv"):
        assert stat.S_IMODE(os.stat(folder / name).st_mode) == 0o644
