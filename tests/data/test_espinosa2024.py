"""The Espinosa & Salathé (2024) loader, on tiny files in the data set's own format (made up
here: the real files are not part of the project)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from marketsim.data.espinosa2024 import FOLDER, MODEL_FILES, TRUTH_FILE, load_espinosa2024
from marketsim.errors import InputError


def write_files(root: Path) -> None:
    folder = root / FOLDER
    folder.mkdir()
    (folder / TRUTH_FILE).write_text(
        "id_tweets,stance_epfl,agreement\n3,neutral,Partial agreement\n"
        "7,positive,Full agreement\n")
    for stem in MODEL_FILES:
        column = "sentiment_llama" if stem == "llama8b" else f"sentiment_{stem}"
        prompts = (1, 41) if stem == "gpt" else (1, 2)
        rows = [f"{tweet},{answer},{p}" for p in prompts
                for tweet, answer in ((3, "neutral"), (7, "Negative"), (9, "positive"))]
        (folder / f"{stem}_annotations_simple.csv").write_text(
            f"id_tweets,{column},prompt\n" + "\n".join(rows) + "\n")


def test_models_labels_on_the_experts_tweets(tmp_path: Path) -> None:
    write_files(tmp_path)
    data, truth = load_espinosa2024(tmp_path)
    assert data.task_ids.tolist() == ["3", "7"]  # tweet 9 has no expert stance: left out
    assert list(data.class_ids) == ["negative", "neutral", "positive"]
    assert truth.tolist() == [1, 2]
    assert data.n_workers == 10 and data.n_labels == 20
    assert data.sources is not None and data.sources[:2] == ("gpt-3.5/prompt 1",
                                                             "gpt-4/prompt 1")
    assert set(data.sources) == set(data.worker_ids.tolist()) and data.has_models
    assert np.all(data.labels[data.tasks == 1] == 0)  # 'Negative' read as negative


def test_missing_files_say_where_to_get_them(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="llm_crowd_experts_annotation"):
        load_espinosa2024(tmp_path)


def test_infer_reads_it_as_a_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from marketsim.cli import main

    write_files(tmp_path)
    assert main(["infer", "--dataset", "espinosa2024", "--data-dir", str(tmp_path),
                 "--method", "mv", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n_tasks_with_truth"] == 2 and result["error_rate"] == 0.5
    assert len(result["sources"]) == 10
    assert {s["accuracy_vs_truth"] for s in result["sources"]} == {0.5}
