"""A two-column truth file whose header names its columns otherwise (Zheng et al.'s
``d_sentiment`` has ``q,truth`` beside labels headed ``id,worker,answer``) is read by
position: the column no role names is the task. Other headers keep their one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from marketsim.data import load_csv
from marketsim.errors import InputError


def test_a_two_column_truth_file_is_read_by_position(tmp_path: Path) -> None:
    crowd = tmp_path / "answer.csv"
    crowd.write_text("id,worker,answer\nq1,w1,1\nq2,w1,0\nq3,w2,1\n")
    for header, rows in (("q,truth", "q2,1\nq1,0\n"), ("truth,q", "1,q2\n0,q1\n"),
                         ("a,b", "q2,1\nq1,0\n")):
        gold = tmp_path / "truth.csv"
        gold.write_text(f"{header}\n{rows}")
        data, truth = load_csv(crowd, gold, columns={"task": "id"})
        assert truth is not None
        assert dict(zip(data.task_ids, truth.tolist(), strict=True)) == \
            {"q1": 0, "q2": 1, "q3": -1}, header


@pytest.mark.parametrize(("header", "fragment"), [
    ("a,b,c", "missing column 'task' or 'question'"),
    ("task,task", "column 'task' appears twice"),
])
def test_other_truth_headers_still_fail_in_one_line(tmp_path: Path, header: str,
                                                    fragment: str) -> None:
    crowd = tmp_path / "answer.csv"
    crowd.write_text("task,worker,label\nq1,w1,1\n")
    gold = tmp_path / "truth.csv"
    gold.write_text(f"{header}\n" + ",".join(["q1"] + ["1"] * (header.count(",")))+ "\n")
    with pytest.raises(InputError, match=fragment):
        load_csv(crowd, gold)
