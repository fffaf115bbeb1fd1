"""Labels and ids read exactly (issue #38 point 13): class labels never pass through a float,
integers of any size are ids and classes, and every entry point (CSV/TSV and zhang files
through ``infer``, ``fit_predict(df)``, ``LabelSet.from_frame``/``from_records``) gives back
each label and id exactly as the input spelled it. Ambiguous columns (two of one name, one
column for two roles) are refused naming the columns."""

from __future__ import annotations

import csv
import io
import tempfile
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from marketsim.aggregation.registry import make_estimator
from marketsim.cli import main
from marketsim.data.csv_labels import load_csv
from marketsim.data.labels import LabelSet
from marketsim.data.zhang import load_zhang

BIG = 2**53  # the first integer after which floats skip integers


def infer(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["infer", *args])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# --- CSV class labels -----------------------------------------------------------------------
def test_two_labels_above_2_53_are_two_classes_and_predicted_as_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: one class, and the prediction 9007199254740992 was in neither file."""
    a, b = str(BIG + 1), str(BIG + 3)
    (tmp_path / "l.csv").write_text(f"task,worker,label\nt1,u,{a}\nt1,v,{a}\nt1,w,{b}\n"
                                    f"t2,u,{b}\nt2,v,{b}\nt2,w,{a}\n")
    code, err = infer([str(tmp_path / "l.csv"), "--method", "mv", "--output",
                       str(tmp_path / "p.csv")], capsys)
    assert code == 0, err
    out = rows(tmp_path / "p.csv")
    assert {r["task"]: r["predicted"] for r in out} == {"t1": a, "t2": b}
    assert list(out[0])[2:] == [f"p_{a}", f"p_{b}"]


def test_a_label_of_2_64_is_a_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: OverflowError traceback."""
    huge, neg = str(2**64), str(-(2**70))
    (tmp_path / "l.csv").write_text(f"task,worker,label\nt1,u,{huge}\nt1,v,{huge}\nt1,w,1\n"
                                    f"t2,u,{neg}\nt2,v,{neg}\n")
    (tmp_path / "t.csv").write_text(f"task,label\nt1,{huge}\nt2,{neg}\n")
    code, err = infer([str(tmp_path / "l.csv"), "--truth", str(tmp_path / "t.csv"),
                       "--method", "mv", "--output", str(tmp_path / "p.csv")], capsys)
    assert code == 0, err
    assert [(r["predicted"], r["truth"]) for r in rows(tmp_path / "p.csv")] == [
        (huge, huge), (neg, neg)]
    data, _ = load_csv(tmp_path / "l.csv")
    assert data.class_ids.tolist() == [-(2**70), 1, 2**64]  # exact Python ints, in order


def test_numbers_are_written_as_spelled_and_one_value_is_one_class(tmp_path: Path) -> None:
    (tmp_path / "l.csv").write_text("task,worker,label\na,u,1.50\na,v,01\nb,u,1.5\nb,v,1e0\n"
                                    "c,u,0.1\nc,v,0.10000000000000001\n")
    data, _ = load_csv(tmp_path / "l.csv")
    # 0.1 and 0.10000000000000001 are one float but two numbers; 1.50 = 1.5, 01 = 1e0
    assert data.class_ids.tolist() == ["0.1", "0.10000000000000001", "01", "1.50"]
    assert data.labels.tolist() == [3, 2, 3, 2, 0, 1]


def test_integer_classes_stay_integers(tmp_path: Path) -> None:
    (tmp_path / "l.tsv").write_text("task\tworker\tlabel\na\tu\t10\na\tv\t10.0\nb\tu\t-2\n")
    data, _ = load_csv(tmp_path / "l.tsv")
    assert data.class_ids.dtype == np.int64 and data.class_ids.tolist() == [-2, 10]
    assert data.labels.tolist() == [1, 1, 0]


# --- zhang files ----------------------------------------------------------------------------
def test_zhang_ids_and_labels_beyond_int64(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Before: '18446744073709551616' is not an integer."""
    t1, t2 = 2**64, 2**63
    (tmp_path / "crowd.txt").write_text(f"{t1} 1 1\n{t1} {2**80} 1\n{t2} 1 2\n{t2} {2**80} 2\n")
    (tmp_path / "truth.txt").write_text(f"{t1} 1\n{t2} 2\n")
    data, truth = load_zhang(tmp_path / "crowd.txt", tmp_path / "truth.txt")
    assert data.task_ids.tolist() == [t2, t1] and data.worker_ids.tolist() == [1, 2**80]
    assert truth is not None and truth.tolist() == [1, 0]
    code, err = infer([str(tmp_path / "crowd.txt"), "--method", "mv", "--output",
                       str(tmp_path / "p.csv"), "--workers", str(tmp_path / "w.csv")], capsys)
    assert code == 0, err
    assert [(r["task"], r["predicted"]) for r in rows(tmp_path / "p.csv")] == [
        (str(t2), "2"), (str(t1), "1")]
    assert [r["worker"] for r in rows(tmp_path / "w.csv")] == ["1", str(2**80)]


# --- DataFrames and records -----------------------------------------------------------------
def test_fit_predict_on_task_ids_beyond_int64() -> None:
    """Before: OverflowError in fit_predict."""
    df = pd.DataFrame({"task": [2**64, 2**64, 2**64 + 1, 2**64 + 1],
                       "worker": ["a", "b", "a", "b"], "label": [1, 1, 2, 2]})
    out = make_estimator("ds").fit_predict(df)
    assert out.to_dict() == {2**64: 1, 2**64 + 1: 2}


def test_fit_predict_on_labels_beyond_2_53_and_int64() -> None:
    for a, b in ((BIG + 1, BIG + 3), (2**64, 2**64 + 2)):
        df = pd.DataFrame({"task": [1, 1, 1, 2, 2, 2], "worker": list("abcabc"),
                           "label": [a, a, b, b, b, a]})
        out = make_estimator("mv").fit_predict(df)
        assert out.to_dict() == {1: a, 2: b}
        assert all(type(v) is int or isinstance(v, np.integer) for v in out.tolist())


def test_records_with_huge_ints() -> None:
    data = LabelSet.from_records([(2**70, 2**65, 2**64), (1, 2, 2**64 + 1)])
    assert data.task_ids.tolist() == [2**70, 1]
    assert data.class_values.tolist() == [2**64, 2**64 + 1]


def test_a_frame_with_two_label_columns_is_refused() -> None:
    """Before: the two columns were aggregated as pairs (or a length error)."""
    df = pd.DataFrame([[1, "a", 1, 2], [2, "b", 2, 1]],
                      columns=["task", "worker", "label", "label"])
    with pytest.raises(ValueError, match="2 columns named 'label'"):
        make_estimator("mv").fit_predict(df)
    with pytest.raises(ValueError, match="2 columns named 'label'"):
        LabelSet.from_frame(df)


def test_one_column_for_two_roles_is_refused() -> None:
    df = pd.DataFrame({"t": [1, 2], "w": ["a", "b"], "l": [1, 2]})
    with pytest.raises(ValueError, match="task= and label= both name column 't'"):
        LabelSet.from_frame(df, task="t", worker="w", label="t")


# --- --columns against the default names ----------------------------------------------------
def test_columns_label_task_does_not_let_task_claim_the_task_column(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: ``--columns label=task`` read column 'task' as both the task and the label."""
    (tmp_path / "l.csv").write_text("task,worker,label,item\nx,a,n,1\nx,b,n,1\ny,a,n,2\n")
    code, err = infer([str(tmp_path / "l.csv"), "--columns", "label=task"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "--columns label=task" in err and "'task' is also the default task column" in err
    # mapped both ways, the roles are read from their own columns (truth file too)
    (tmp_path / "t.csv").write_text("item,task\n1,x\n2,y\n")
    code, err = infer([str(tmp_path / "l.csv"), "--columns", "label=task,task=item", "--truth",
                       str(tmp_path / "t.csv"), "--method", "mv", "--output",
                       str(tmp_path / "p.csv")], capsys)
    assert code == 0, err
    assert [(r["task"], r["predicted"], r["truth"]) for r in rows(tmp_path / "p.csv")] == [
        ("1", "x", "x"), ("2", "y", "y")]


def test_columns_mapping_a_default_optional_column_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "l.csv").write_text("task,worker,score,answer\nx,a,0.5,n\nx,b,0.2,y\n")
    code, err = infer([str(tmp_path / "l.csv"), "--columns", "label=score"], capsys)
    assert code == 2 and "'score' is also the default score column" in err


# --- round trips: any spelling in, the same spelling out ------------------------------------
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
                min_size=1, max_size=12).map(str.strip).filter(bool)
_NUMERIC = st.one_of(
    st.integers(-(2**80), 2**80).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.tuples(st.integers(-(10**20), 10**20), st.integers(0, 30)).map(
        lambda p: f"{p[0]}.{'0' * p[1]}5"),  # decimals a float rounds
)
_SPELLINGS = st.one_of(
    st.lists(_NUMERIC, min_size=2, max_size=4),
    st.lists(st.one_of(_TEXT, _NUMERIC), min_size=2, max_size=4),
)
_IDS = st.one_of(st.integers(-(2**90), 2**90).map(str), _TEXT)


def _distinct_classes(spellings: list[str]) -> bool:
    """No two spellings of one class: distinct texts, and distinct numbers when all are
    numbers (``1.0`` and ``1`` would be one class, written as the first)."""
    if len(set(spellings)) < len(spellings):
        return False
    try:
        return len({Decimal(s) for s in spellings}) == len(spellings)
    except ArithmeticError:
        return True


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(classes=_SPELLINGS, tasks=st.lists(_IDS, min_size=1, max_size=5, unique=True),
       data=st.data())
def test_csv_round_trip_keeps_every_spelling(classes: list[str], tasks: list[str],
                                             data: st.DataObject) -> None:
    """``infer --output`` writes each task id, predicted class and truth as the files spell
    them, whatever they are (huge integers, long decimals, any text)."""
    assume(_distinct_classes(classes))
    majority = {t: data.draw(st.sampled_from(classes)) for t in tasks}
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["task", "worker", "label"])
    truth = io.StringIO()
    csv.writer(truth, lineterminator="\n").writerows([["task", "label"],
                                                      *majority.items()])
    for t, c in majority.items():
        other = data.draw(st.sampled_from(classes))
        writer.writerows([[t, "w1", c], [t, "w2", c], [t, "w3", other]])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "l.csv").write_text(text.getvalue(), encoding="utf-8")
        (folder / "t.csv").write_text(truth.getvalue(), encoding="utf-8")
        code = main(["infer", str(folder / "l.csv"), "--truth", str(folder / "t.csv"),
                     "--method", "mv", "--output", str(folder / "p.csv"), "--json"])
        assert code == 0
        out = rows(folder / "p.csv")
    assert [r["task"] for r in out] == tasks
    assert {r["task"]: (r["predicted"], r["truth"]) for r in out} == {
        t: (c, c) for t, c in majority.items()}


_HUGE = st.one_of(st.integers(2**53, 2**90), st.integers(-(2**90), -(2**53)))
_VALUES = st.one_of(st.lists(_HUGE, min_size=2, max_size=4, unique=True),
                    st.lists(st.one_of(st.integers(-(2**90), 2**90), _TEXT), min_size=2,
                             max_size=4, unique=True))


@settings(max_examples=40, deadline=None)
@given(labels=_VALUES, tasks=_VALUES,
       data=st.data())
def test_frame_round_trip_keeps_every_value(labels: list[object], tasks: list[object],
                                            data: st.DataObject) -> None:
    """``fit_predict(df)`` answers with the frame's own task ids and label values."""
    majority = {t: data.draw(st.sampled_from(labels)) for t in tasks}
    records = [(t, w, c) for t, c in majority.items() for w, c in
               (("w1", c), ("w2", c), ("w3", data.draw(st.sampled_from(labels))))]
    df = pd.DataFrame(records, columns=["task", "worker", "label"])
    out = make_estimator("mv").fit_predict(df)
    got = dict(zip(out.index.tolist(), out.tolist(), strict=True))
    assert got == majority
    assert all(type(got[t]) is type(c) for t, c in majority.items())


@settings(max_examples=30, deadline=None)
@given(tasks=st.lists(st.integers(-(2**90), 2**90), min_size=1, max_size=5, unique=True),
       workers=st.lists(st.integers(-(2**90), 2**90), min_size=3, max_size=3, unique=True))
def test_zhang_round_trip_keeps_huge_ids(tasks: list[int], workers: list[int]) -> None:
    lines = "".join(f"{t} {w} {1 + k % 2}\n" for k, t in enumerate(tasks) for w in workers)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "crowd.txt").write_text(lines)
        assert main(["infer", str(folder / "crowd.txt"), "--method", "mv", "--json",
                     "--output", str(folder / "p.csv"), "--workers", str(folder / "w.csv")]) == 0
        out = {r["task"]: r["predicted"] for r in rows(folder / "p.csv")}
        assert [r["worker"] for r in rows(folder / "w.csv")] == [str(w) for w in sorted(workers)]
    assert out == {str(t): str(1 + k % 2) for k, t in enumerate(tasks)}
