"""Label-file loaders: both formats, encodings and line endings, ids, truth, and error messages."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from marketsim.data.loaders import (
    dataset_paths,
    detect_format,
    load_csv,
    load_labels,
    load_zhang,
)
from marketsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


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


def test_zhang_large_file_is_fast(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 200_000
    tasks = np.repeat(np.arange(1, n // 10 + 1), 10)
    workers = np.tile(np.arange(1, 11), n // 10)
    labels = rng.integers(1, 4, n)
    text = "\n".join(f"{t} {w} {lab}" for t, w, lab in zip(tasks, workers, labels, strict=True))
    path = write(tmp_path, "big.txt", text + "\n")
    started = time.perf_counter()
    data, _ = load_zhang(path)
    assert time.perf_counter() - started < 2.0
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


# --- reference data sets --------------------------------------------------------------------
def test_dataset_paths_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MARKETSIM_DATA", raising=False)
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
