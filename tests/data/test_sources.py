"""Label files with a source column (human or a model's name) and a confidence column."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from marketsim.data import load_csv
from marketsim.errors import InputError

MIXED = """task,worker,label,annotator_type,confidence
t1,w1,a,human,
t1,gpt,a,gpt-4,0.9
t1,gpt,a,gpt-4,0.9
t2,w1,b,Human,
t2,gpt,b,gpt-4,0.6
"""


def test_source_and_confidence_columns(tmp_path: Path) -> None:
    path = tmp_path / "mixed.csv"
    path.write_text(MIXED)
    data, _ = load_csv(path)
    assert data.sources == ("human", "gpt-4") and data.has_models
    np.testing.assert_array_equal(data.confidence, [np.nan, 0.9, 0.9, np.nan, 0.6])
    assert data.n_labels == 5  # the model's repeat is kept here, counted once by aggregation


def test_mapped_columns(tmp_path: Path) -> None:
    path = tmp_path / "mixed.csv"
    path.write_text("item,who,answer,kind,p\nt1,w1,a,human,\nt1,m,b,llama,0.7\n")
    data, _ = load_csv(path, columns={"task": "item", "worker": "who", "source": "kind",
                                      "confidence": "p"})
    assert data.sources == ("human", "llama")
    assert np.isnan(data.confidence[0]) and data.confidence[1] == 0.7


@pytest.mark.parametrize(("body", "message"), [
    ("t1,w1,a,human,\nt1,m,a,m,1.5\n",
     "3: confidence (column 'confidence') '1.5' is not a number in [0, 1]"),
    ("t1,w1,a,human,\nt1,m,a,m,high\n", "3: confidence (column 'confidence') 'high' is not"),
    ("t1,w1,a,human,\nt2,w1,a,m,0.5\n",
     "3: column 'source': worker 'w1' is 'm' here but 'human' at line 2"),
    ("t1,m,a,human,\nt1,x,a,m,0.5\n",
     "3: column 'source': model 'm' is also a human worker's id (line 2)"),
    ("t1,w1,a,human,\nt1,w1,b,human,\n", "3: task 't1' already labelled by worker 'w1'"),
])
def test_bad_input_names_file_line_and_column(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("task,worker,label,source,confidence\n" + body)
    with pytest.raises(InputError) as info:
        load_csv(path)
    assert str(info.value).startswith(f"{path}:{message}")


def test_infer_reports_each_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from marketsim.cli import main

    rows = ["task,worker,label,source,confidence"]
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, 60)
    for t, c in enumerate(truth):
        rows += [f"t{t},h{(t + j) % 6},{c if rng.random() < 0.8 else 1 - c},human,"
                 for j in range(3)]
        rows += [f"t{t},bot,{c if t % 4 else 1 - c},bot,{0.2 if t % 4 == 0 else 0.9}"] * 2
    (tmp_path / "l.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "t.csv").write_text("task,label\n" + "".join(
        f"t{t},{c}\n" for t, c in enumerate(truth)))
    assert main(["infer", str(tmp_path / "l.csv"), "--truth", str(tmp_path / "t.csv"),
                 "--method", "ds-confidence", "--json", "--workers",
                 str(tmp_path / "w.csv")]) == 0
    workers = (tmp_path / "w.csv").read_text().splitlines()
    assert workers[0].startswith("worker,source,n_labels,accuracy,")
    assert workers[1].startswith("h0,human,30,")
    assert any(row.startswith("bot,bot,60,") for row in workers)
    result = json.loads(capsys.readouterr().out)
    assert result["model_repeats_dropped"] == 60 and result["n_labels"] == 240
    by_source = {s["source"]: s for s in result["sources"]}
    assert by_source["bot"]["accuracy_vs_truth"] == 0.75
    assert by_source["human"]["workers"] == 6 and by_source["human"]["labels"] == 180
    bins = [b for b in result["confidence_bins"] if b["source"] == "bot"]
    low = next(b for b in bins if b["confidence_max"] == 0.2)
    high = next(b for b in bins if b["confidence_min"] == 0.9)
    assert low["labels"] == 15 and high["labels"] == 45
    assert low["estimated_accuracy"] < 0.5 < 0.9 < high["estimated_accuracy"]
