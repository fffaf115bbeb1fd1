"""A model's repeated answers count once.

A deterministic model (temperature 0) asked the same task again gives the same answer: the
repeat carries no new information, and an estimator that counted it would weigh that model
twice. A repeat is detected by its **source and task**: two labels from workers of the same
model source (``LabelSet.sources``: one model may hold several worker indices, e.g. one per
run or prompt) on the same task with the **same answer** are one label (the first in label
order is kept, with its confidence). Different answers of one model on one task are kept:
they are not the repeat of one deterministic answer (a model sampled at temperature > 0, or
asked with different prompts) and each says something. Human labels are never merged.
"""

from __future__ import annotations

import numpy as np

from marketsim.data.labels import LabelSet
from marketsim.data.sources import HUMAN


def source_codes(data: LabelSet) -> tuple[np.ndarray, tuple[str, ...]]:
    """Each worker's model code (0.. in order of the models' names) or -1 for a human, and
    the models' names."""
    sources = np.asarray(data.worker_sources, dtype=object)
    models = tuple(sorted({s for s in data.worker_sources if s != HUMAN}))
    codes = np.full(data.n_workers, -1, dtype=np.int64)
    if models:
        is_model = sources != HUMAN
        codes[is_model] = np.searchsorted(np.asarray(models, dtype=object), sources[is_model])
    return codes, models


def count_model_answers_once(data: LabelSet) -> tuple[LabelSet, int]:
    """``data`` without a model's repeated answers (same source, same task, same answer: the
    first kept), and how many labels were dropped. ``data`` itself when there are none."""
    if not data.has_models:
        return data, 0
    codes, models = source_codes(data)
    label_model = codes[data.workers]
    rows = np.flatnonzero(label_model >= 0)
    k = data.n_classes
    keys = (label_model[rows] * data.n_tasks + data.tasks[rows]) * k + data.labels[rows]
    _, first = np.unique(keys, return_index=True)
    if first.size == rows.size:
        return data, 0
    keep = np.ones(data.n_labels, dtype=bool)
    keep[rows] = False
    keep[rows[first]] = True
    return data.subset(keep), int(data.n_labels - keep.sum())
