"""Label-file loaders: both formats, encodings and line endings, ids, truth, and error messages."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from marketsim.data import (
    dataset_paths,
    datasets,
    detect_format,
    load_csv,
    load_features,
    load_labels,
    load_scores,
    load_zhang,
)
from marketsim.data.parsing import _read_records
from marketsim.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


def zhang_dir() -> Path:
    """Folder of Zhang et al.'s data sets (``MARKETSIM_DATA`` or ../shared/data/zhang2014)."""
    env = os.environ.get("MARKETSIM_DATA")
    if env:
        base = Path(env)
        return base / "zhang2014" if (base / "zhang2014").is_dir() else base
    return ROOT.parent / "shared" / "data" / "zhang2014"


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8"))
    return path


def error_of(func, *args) -> InputError:  # noqa: ANN001
    with pytest.raises(InputError) as info:
        func(*args)
    return info.value


# --- zhang format ---------------------------------------------------------------------------
def test_zhang_basic_with_truth(tmp_path: Path) -> None:
    crowd = write(tmp_path, "c.txt", "1 1 2\n1 2 2\n2 1 1\n\n3\t2\t1\n")
    truth = write(tmp_path, "t.txt", "1 2\n2 1\n2 1\n5 3\n")
    data, y = load_zhang(crowd, truth)
    assert data.n_labels == 4
    assert data.task_ids.tolist() == [1, 2, 3, 5]  # task 5 only in the truth: unlabelled
    assert data.worker_ids.tolist() == [1, 2]
    assert data.class_ids.tolist() == [1, 2, 3]  # truth class 3 extends the classes
    assert data.labels.tolist() == [1, 1, 0, 0]
    assert y is not None and y.tolist() == [1, 0, -1, 2]
    assert data.task_degree.tolist() == [2, 1, 1, 0]


def test_zhang_crlf_bom_no_final_newline(tmp_path: Path) -> None:
    crowd = write(tmp_path, "c.txt", b"\xef\xbb\xbf10 7 1\r\n10 8 2\r\n11 7 2")
    data, y = load_zhang(crowd)
    assert y is None
    assert (data.n_tasks, data.n_workers, data.n_classes, data.n_labels) == (2, 2, 2, 3)
    assert data.tasks.tolist() == [0, 0, 1]


def test_zhang_zero_based_classes(tmp_path: Path) -> None:
    data, _ = load_zhang(write(tmp_path, "c.txt", "1 1 0\n1 2 1\n"))
    assert data.class_ids.tolist() == [0, 1]
    assert data.labels.tolist() == [0, 1]


def test_load_labels_and_detect_format(tmp_path: Path) -> None:
    assert detect_format("x.CSV") == "csv"
    assert detect_format("x.txt") == "zhang"
    assert detect_format("x.txt", "csv") == "csv"
    with pytest.raises(InputError, match="unknown format"):
        detect_format("x.txt", "xml")
    path = write(tmp_path, "labels.txt", "task,worker,label\nq,w,a\n")
    data, _ = load_labels(path, fmt="csv")
    assert data.task_ids.tolist() == ["q"]


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        ("1 1 1\n1 2\n", "2", "expected 3"),
        ("1 1 1\n\n1 2 1 4\n", "3", "found 4"),
        ("1 1 1\n1 2 x\n", "2", "'x' is not an integer"),
        ("1 1 1\n1 2 1.5\n", "2", "'1.5' is not an integer"),
        ("1 1 1\n2 1 1\n1 1 2\n", "3", "task '1' already labelled by worker '1' (first at line 1)"),
    ],
)
def test_zhang_errors_name_file_and_line(
    tmp_path: Path, content: str, line: str, fragment: str
) -> None:
    path = write(tmp_path, "c.txt", content)
    err = error_of(load_zhang, path)
    assert err.source == str(path) and err.where == line
    assert fragment in str(err)
    assert str(err).startswith(f"{path}:{line}: ")


def test_zhang_empty_missing_and_non_utf8(tmp_path: Path) -> None:
    assert "no labels" in str(error_of(load_zhang, write(tmp_path, "e.txt", "\n \n")))
    missing = tmp_path / "nope.txt"
    err = error_of(load_zhang, missing)
    assert err.source == str(missing) and "not found" in str(err)
    err = error_of(load_zhang, write(tmp_path, "b.txt", b"1 1 1\n1 2 \xe9\n"))
    assert err.where == "2" and "UTF-8" in str(err)


def test_zhang_conflicting_truth(tmp_path: Path) -> None:
    crowd = write(tmp_path, "c.txt", "1 1 1\n2 1 2\n")
    truth = write(tmp_path, "t.txt", "1 1\n1 1\n2 2\n1 2\n")
    err = error_of(load_zhang, crowd, truth)
    assert err.source == str(truth) and err.where == "4"
    assert "conflicting truth for task '1'" in str(err) and "line 1" in str(err)


def test_zhang_large_file_loads_exactly(tmp_path: Path) -> None:
    """A 200,000-label file loads exactly (its speed is benchmarked, not unit-tested)."""
    rng = np.random.default_rng(0)
    n = 200_000
    tasks = np.repeat(np.arange(1, n // 10 + 1), 10)
    workers = np.tile(np.arange(1, 11), n // 10)
    labels = rng.integers(1, 4, n)
    text = "\n".join(f"{t} {w} {lab}" for t, w, lab in zip(tasks, workers, labels, strict=True))
    path = write(tmp_path, "big.txt", text + "\n")
    data, _ = load_zhang(path)
    assert data.n_labels == n and data.n_workers == 10 and data.n_classes == 3
    np.testing.assert_array_equal(data.labels, labels - 1)


# --- csv format -----------------------------------------------------------------------------
def test_csv_string_ids_bom_crlf_quotes(tmp_path: Path) -> None:
    labels = write(
        tmp_path,
        "l.csv",
        '\ufeffQuestion,extra,Worker,Answer\r\n"a,1",x,"w ""1""",cat\r\n\r\n'
        '"a,1",x,w2,dog\r\nb,y,w2,cat\r\n',
    )
    truth = write(tmp_path, "t.csv", 'question,truth\r\n"a,1",dog\r\nc,bird\r\n')
    data, y = load_csv(labels, truth)
    assert data.task_ids.tolist() == ["a,1", "b", "c"]
    assert data.worker_ids.tolist() == ['w "1"', "w2"]
    assert data.class_ids.tolist() == ["bird", "cat", "dog"]  # truth-only 'bird' added
    assert data.labels.tolist() == [1, 2, 1]
    assert data.n_tasks == 3 and data.task_degree.tolist() == [2, 1, 0]
    assert y is not None and y.tolist() == [2, -1, 0]
    assert data.scores is None


def test_csv_numeric_classes_sort_numerically_and_scores(tmp_path: Path) -> None:
    labels = write(
        tmp_path,
        "l.csv",
        "worker,task,label,score\nw,t1,10,0.5\nw,t2,9,\nv,t1,10.0,1e-3\nv,t2,2,2\n",
    )
    data, _ = load_csv(labels)
    assert data.class_ids.tolist() == [2, 9, 10]
    assert data.class_ids.dtype == np.int64
    assert data.labels.tolist() == [2, 1, 2, 0]  # "10" and "10.0" are one class
    assert data.scores is not None
    np.testing.assert_allclose(data.scores, [0.5, np.nan, 1e-3, 2.0])


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        ("tsk,worker,label\n", "1", "missing column 'task' or 'question'; found columns 'tsk'"),
        ("task,worker\n", "1", "missing column 'label' or 'answer'"),
        ("task,worker,label\na,w,1\nb,w\n", "3", "expected 3 fields"),
        ("task,worker,label\na,w,1\nb,w,1\n\na,w,2\n", "5", "task 'a' already labelled by "
         "worker 'w' (first at line 2)"),
        ("task,worker,label\na,,1\n", "2", "empty worker"),
        ("task,question,worker,label\n", "1", "both give the task"),
        ("task,worker,label,score\na,w,1,high\n", "2", "score 'high' is not a number"),
    ],
)
def test_csv_errors_name_file_and_line(
    tmp_path: Path, content: str, line: str, fragment: str
) -> None:
    path = write(tmp_path, "l.csv", content)
    err = error_of(load_csv, path)
    assert err.source == str(path) and err.where == line
    assert fragment in str(err)


def test_csv_empty_header_only_and_bad_truth(tmp_path: Path) -> None:
    assert "empty file" in str(error_of(load_csv, write(tmp_path, "e.csv", "")))
    assert "no labels" in str(error_of(load_csv, write(tmp_path, "h.csv", "task,worker,label\n")))
    labels = write(tmp_path, "l.csv", "task,worker,label\na,w,x\n")
    truth = write(tmp_path, "t.csv", "task,label\na,x\na,y\n")
    err = error_of(load_csv, labels, truth)
    assert err.source == str(truth) and err.where == "3" and "conflicting truth" in str(err)
    bad = write(tmp_path, "b.csv", b"task,worker,label\na,w,\xff\n")
    assert error_of(load_csv, bad).where == "2"


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("quoted", [False, True])
def test_csv_fast_and_quoted_paths_agree_on_records_and_lines(
    tmp_path: Path, newline: str, quoted: bool
) -> None:
    """Without quotes the whole file goes through the C reader at once (line = record number);
    with quotes records are read one by one. Both give the same records and line numbers."""
    q = '"' if quoted else ""
    rows = ["", "task,worker,label", "a,w,1", "", "  ,  ", f"{q}b{q},w,2", "", " c ,w,1 "]
    path = write(tmp_path, "l.csv", newline.join(rows) + newline)
    header_line, header, _, lines = _read_records(path)
    assert (header_line, header) == (2, ["task", "worker", "label"])
    # the whitespace-only record (line 5) is dropped here (quoted path) or by _columns
    assert lines.tolist() == ([3, 6, 8] if quoted else [3, 5, 6, 8])
    data, _ = load_csv(path)
    assert data.task_ids.tolist() == ["a", "b", "c"] and data.n_labels == 3
    bad = write(tmp_path, "b.csv", newline.join(rows + ["", f"{q}d{q},w"]) + newline)
    err = error_of(load_csv, bad)
    assert err.where == "10" and "expected 3 fields" in str(err)
    empty = write(tmp_path, "e.csv", newline.join(rows + ["", ",,", f"{q}d{q},,1"]) + newline)
    err = error_of(load_csv, empty)
    assert err.where == "11" and "empty worker value" in str(err)


# --- continuous scores ----------------------------------------------------------------------
def test_scores_both_layouts_missing_scores_and_truth(tmp_path: Path) -> None:
    plain = write(tmp_path, "s.csv", "task,worker,score\nt1,a,0.25\nt1,b,\nt2,a,1\nt3,b,0\n")
    data, truth = load_scores(plain)
    assert truth is None and data.n_classes == 1 and data.labels.tolist() == [0, 0, 0, 0]
    assert data.task_ids.tolist() == ["t1", "t2", "t3"] and data.worker_ids.tolist() == ["a", "b"]
    np.testing.assert_array_equal(data.scores, [0.25, np.nan, 1.0, 0.0])
    # the task,worker,label,score layout: the label column is ignored (it may be empty)
    labelled = write(tmp_path, "l.csv",
                     "Question,Worker,Label,Score\nt1,a,yes,0.25\nt1,b,,\nt2,a,no,1\nt3,b,x,0\n")
    means = write(tmp_path, "m.csv", "task,value\nt2,0.9\nt4,0.5\nt2,0.90\n")
    data2, truth2 = load_scores(labelled, means)
    np.testing.assert_array_equal(data2.scores, data.scores)
    assert data2.task_ids.tolist() == ["t1", "t2", "t3", "t4"]  # truth-only t4 is added
    np.testing.assert_array_equal(truth2, [np.nan, 0.9, np.nan, 0.5])
    assert data2.task_degree.tolist() == [2, 1, 1, 0]


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        ("task,worker,score\na,w,0.5\nb,w,1.5\n", "3", "score '1.5' is not a number in [0, 1]"),
        ("task,worker,score\na,w,-0.1\n", "2", "score '-0.1' is not a number in [0, 1]"),
        ("task,worker,score\na,w,nan\n", "2", "score 'nan' is not a number in [0, 1] (leave "
         "the cell empty for a missing score)"),
        ("task,worker,score\na,w,inf\n", "2", "score 'inf'"),
        ("task,worker,score\na,w,0.5\nb,w,high\nc,w,2\n", "3", "score 'high'"),
        ("task,worker,label\na,w,1\n", "1", "missing column 'score'"),
        ("task,worker,score\na,w,0.1\na,w,\n", "3", "task 'a' already labelled by worker 'w' "
         "(first at line 2)"),
        ("task,worker,score\na,w,0.1\nb,w\n", "3", "expected 3 fields"),
        ("task,worker,score\na,,0.1\n", "2", "empty worker value"),
    ],
)
def test_scores_errors_name_file_and_line(
    tmp_path: Path, content: str, line: str, fragment: str
) -> None:
    path = write(tmp_path, "s.csv", content)
    err = error_of(load_scores, path)
    assert err.source == str(path) and err.where == line
    assert fragment in str(err)


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        ("task,mean\na,0.5\na,0.6\n", "3", "conflicting truth for task 'a': '0.6' here, '0.5' "
         "at line 2"),
        ("task,mean\na,\n", "2", "empty mean value"),
        ("task,mean\na,1.2\n", "2", "mean '1.2' is not a number in [0, 1]"),
        ("task,label\na,1\n", "1", "missing column 'mean' or 'value'"),
        ("task,mean,value\na,1,1\n", "1", "both give the mean"),
    ],
)
def test_score_truth_errors(tmp_path: Path, content: str, line: str, fragment: str) -> None:
    scores = write(tmp_path, "s.csv", "task,worker,score\na,w,0.5\n")
    truth = write(tmp_path, "m.csv", content)
    err = error_of(load_scores, scores, truth)
    assert err.source == str(truth) and err.where == line
    assert fragment in str(err)


def test_scores_whole_file_errors(tmp_path: Path) -> None:
    assert "empty file" in str(error_of(load_scores, write(tmp_path, "e.csv", "\n \n")))
    assert "no scores (only a header)" in str(
        error_of(load_scores, write(tmp_path, "h.csv", "task,worker,score\n")))
    err = error_of(load_scores, write(tmp_path, "n.csv", "task,worker,score\na,w,\nb,w,\n"))
    assert "every score cell is empty" in str(err) and err.where is None
    scores = write(tmp_path, "s.csv", "task,worker,score\na,w,0.5\n")
    err = error_of(load_scores, scores, write(tmp_path, "t.csv", "task,mean\n"))
    assert "no truth rows" in str(err)


def test_scores_many_rows_load_exactly(tmp_path: Path) -> None:
    """200,000 scores over many workers load exactly (their speed is benchmarked, not tested:
    a timed unit test fails on a loaded machine)."""
    rng = np.random.default_rng(0)
    n = 200_000
    scores = rng.random(n)
    body = "\n".join(f"t{i // 8},w{i % 8 + 8 * (i // 80_000)},{s:.6f}"
                     for i, s in enumerate(scores.tolist()))
    path = write(tmp_path, "big.csv", "task,worker,score\n" + body + "\n")
    data, _ = load_scores(path)
    assert data.n_labels == n and data.n_tasks == n // 8
    np.testing.assert_allclose(data.scores, scores, atol=1e-6)


# --- binary task features -------------------------------------------------------------------
def test_features_alignment_missing_cells_and_tasks(tmp_path: Path) -> None:
    path = write(tmp_path, "f.csv", "f1,Question,f2\n1,c,0\n0.0,a,\n\n1.0, b ,1\n")
    table = load_features(path, np.array(["a", "b", "c", "d"]))
    assert table.names == ("f1", "f2")
    np.testing.assert_array_equal(table.values,
                                  [[0, np.nan], [1, 1], [1, 0], [np.nan, np.nan]])
    assert table.has_row.tolist() == [True, True, True, False]


def test_features_integer_task_ids(tmp_path: Path) -> None:
    path = write(tmp_path, "f.csv", "task,x\n007,1\n+2,0\n")
    table = load_features(path, np.array([2, 7, 9]))
    np.testing.assert_array_equal(table.values[:, 0], [0, 1, np.nan])
    err = error_of(load_features, write(tmp_path, "g.csv", "task,x\n7.0,1\n"), np.array([7]))
    assert err.where == "2" and "task '7.0' is not in the labels file" in str(err)


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        ("task,f1,f2\na,1,0\nb,0,2\n", "3", "feature 'f2': '2' is not 0 or 1"),
        ("task,f1\na,yes\n", "2", "feature 'f1': 'yes' is not 0 or 1"),
        ("task,f1\na,nan\n", "2", "'nan' is not 0 or 1 (leave the cell empty"),
        ("task,f1\na,1\nb,0\n a ,1\n", "4", "task 'a' already has a feature row (first at "
         "line 2)"),
        ("task,f1\na,1\nzz,0\n", "3", "task 'zz' is not in the labels file"),
        ("task\na\n", "1", "no feature columns"),
        ("task,f1,f2\na,1,0\nb,1\n", "3", "expected 3 fields as in the header, found 2"),
        ("task,f1,f2\na,1,0\nb,1,0,1\n", "3", "expected 3 fields as in the header, found 4"),
        ("task,f1,,f3\na,1,0,1\n", "1", "feature column 3 has no name"),
        ("task,f1,F1\na,1,0\n", "1", "column 'F1' appears twice"),
        ("id,f1\na,1\n", "1", "missing column 'task' or 'question'"),
        ("task,f1\n,1\n", "2", "empty task value"),
        ('task,f1\n"a\n",1\n"b",7\n', "4", "'7' is not 0 or 1"),
    ],
)
def test_features_errors_name_file_and_line(
    tmp_path: Path, content: str, line: str, fragment: str
) -> None:
    path = write(tmp_path, "f.csv", content)
    err = error_of(load_features, path, np.array(["a", "b", "a\n"]))
    assert err.source == str(path) and err.where == line
    assert fragment in str(err)


def test_features_whole_file_errors(tmp_path: Path) -> None:
    ids = np.array(["a"])
    assert "empty file" in str(error_of(load_features, write(tmp_path, "e.csv", ""), ids))
    err = error_of(load_features, write(tmp_path, "h.csv", "task,f1\n\n , \n"), ids)
    assert "no feature rows" in str(err) and err.where is None


# --- reference data sets --------------------------------------------------------------------
def test_dataset_paths_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MARKETSIM_DATA", raising=False)
    # no ../shared/data beside the project nor beside the current folder
    monkeypatch.setattr(datasets, "PROJECT_ROOT", tmp_path / "project")
    monkeypatch.chdir(tmp_path)
    msg = str(error_of(dataset_paths, "nope"))
    assert "bluebird, rte, dog, web" in msg
    msg = str(error_of(dataset_paths, "rte"))
    assert "--data-dir" in msg and "MARKETSIM_DATA" in msg
    msg = str(error_of(dataset_paths, "rte", tmp_path))
    assert "rte_crowd.txt not found" in msg
    write(tmp_path, "rte_crowd.txt", "1 1 1\n")
    write(tmp_path, "rte_truth.txt", "1 1\n")
    monkeypatch.setenv("MARKETSIM_DATA", str(tmp_path))
    assert dataset_paths("rte") == (tmp_path / "rte_crowd.txt", tmp_path / "rte_truth.txt")


@pytest.mark.parametrize(
    ("name", "shape", "with_truth"),
    [
        ("bluebird", (108, 39, 4212, 2), 108),
        ("rte", (800, 164, 8000, 2), 800),
        ("dog", (807, 109, 8070, 4), 807),
        ("web", (2665, 177, 15567, 5), 2653),
    ],
)
def test_reference_datasets(name: str, shape: tuple[int, ...], with_truth: int) -> None:
    folder = zhang_dir()
    if not (folder / f"{name}_crowd.txt").is_file():
        pytest.skip(f"reference data not found in {folder}")
    data, truth = load_zhang(*dataset_paths(name, folder))
    assert (data.n_tasks, data.n_workers, data.n_labels, data.n_classes) == shape
    assert truth is not None and int((truth >= 0).sum()) == with_truth
