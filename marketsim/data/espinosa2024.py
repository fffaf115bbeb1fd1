"""Espinosa & Salathé (2024): 1,000 tweets about vaccines labelled for stance (negative, neutral,
positive) by experts and by six language models, each under eight prompts: a real data set of
model labels with a gold standard, for the aggregation of a mixed crowd.

Where it comes from: the public files of https://github.com/digitalepidemiologylab/
llm_crowd_experts_annotation (folder ``data/``; licence EUPL-1.2, cite Espinosa & Salathé,
"Use of large language models as a scalable approach to understanding public health
discourse", 2024). It is not copied into this project: clone the repository and copy (or
link) its ``data/`` folder to ``espinosa2024/`` in the reference data folder
(:mod:`marketsim.data.datasets`: ``--data-dir``, ``$MARKETSIM_DATA``, ``../shared/data``).

What is read: each model's answers (``<model>_annotations_simple.csv``: ``id_tweets``, the
answer, ``prompt``), one worker per (model, prompt), named ``<model>/prompt <k>`` (``gpt-3.5``
for GPT prompts 1-8 and ``gpt-4`` for 41-48, as the authors' scripts name them, ``llama3-70b``,
``llama3-8b``, ``mistral``, ``mixtral``), which is also its source: a deterministic model's
answer is a function of the model, the prompt and the item, so a model under another prompt is
another annotator, not a repeat (counted as one source, its eight prompts' identical answers
would count once and its differing ones as contradictions). The truth is the experts' stance
on the 757 tweets on which they at least partly agreed
(``epfl_annotations_simple_partial_agreement.csv``); the labels are those of these tweets. The
MTurk crowd's counts (``mturk_annotations_simple.csv``) are **not** read: their ``id_tweets``
number the rows of the authors' MTurk table (joined to the experts' tweets by text, which is
not public), not the experts' tweets, so no public key joins the crowd's labels to the
models'.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from marketsim.data.datasets import find_data_dir
from marketsim.data.frames import encode
from marketsim.data.labels import LabelSet
from marketsim.errors import InputError

#: The folder of the data set inside the reference data folder.
FOLDER = "espinosa2024"
#: Each model file's stem and the source it holds (GPT: by prompt, see :func:`gpt_source`).
MODEL_FILES = {"gpt": "gpt", "llama70b": "llama3-70b", "llama8b": "llama3-8b",
               "mistral": "mistral", "mixtral": "mixtral"}
#: The experts' stance on the tweets they at least partly agreed on: the truth.
TRUTH_FILE = "epfl_annotations_simple_partial_agreement.csv"


def gpt_source(prompt: int) -> tuple[str, int]:
    """The GPT model and prompt number of the GPT file's ``prompt`` (1-8: GPT-3.5, 41-48:
    GPT-4, prompts 1-8 each)."""
    return ("gpt-4", prompt - 40) if prompt > 40 else ("gpt-3.5", prompt)


def espinosa_folder(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The data set's folder; InputError naming what is missing and how to get it."""
    folder = find_data_dir(data_dir) / FOLDER
    needed = [f"{stem}_annotations_simple.csv" for stem in MODEL_FILES] + [TRUTH_FILE]
    missing = [name for name in needed if not (folder / name).is_file()]
    if missing:
        raise InputError(f"{', '.join(missing)} not found: copy the data/ folder of "
                         "github.com/digitalepidemiologylab/llm_crowd_experts_annotation to "
                         f"{FOLDER}/ in the data folder", source=str(folder))
    return folder


def _rows(path: Path) -> list[list[str]]:
    """The data rows of a headed CSV file (header dropped)."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        return list(csv.reader(handle))[1:]


def load_espinosa2024(
    data_dir: str | os.PathLike[str] | None = None,
) -> tuple[LabelSet, np.ndarray]:
    """The models' labels of the experts' tweets (every worker a model: its source is its
    name, ``<model>/prompt <k>``) and the experts' stance (class index per task)."""
    folder = espinosa_folder(data_dir)
    truth_rows = _rows(folder / TRUTH_FILE)
    tweets = {row[0]: k for k, row in enumerate(truth_rows)}
    task: list[int] = []
    worker: list[str] = []
    answer: list[str] = []
    for stem, model in MODEL_FILES.items():
        for tweet, value, prompt in (row[:3] for row in _rows(folder / f"{stem}_annotations_"
                                                               "simple.csv")):
            if tweet not in tweets:
                continue
            name, number = gpt_source(int(prompt)) if stem == "gpt" else (model, int(prompt))
            who = f"{name}/prompt {number}"
            task.append(tweets[tweet])
            worker.append(who)
            answer.append(value.strip().lower())
    stance = [row[1].strip().lower() for row in truth_rows]
    codes, classes = encode(np.array(answer + stance, dtype=object), sort=True)
    worker_codes, worker_ids = encode(np.array(worker, dtype=object), sort=False)
    data = LabelSet(np.array(task, dtype=np.int64), worker_codes, codes[:len(answer)],
                    len(truth_rows), len(worker_ids), len(classes),
                    task_ids=np.array([row[0] for row in truth_rows]),
                    worker_ids=worker_ids.astype(str), class_ids=classes.astype(str),
                    sources=tuple(worker_ids.astype(str).tolist()))
    return data, codes[len(answer):]
