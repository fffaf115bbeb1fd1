"""A mixed crowd's sources and confidence carried by every way of building a LabelSet (issue
#41): records, a DataFrame, and the disjoint union of ``stack``; what a file's source and
confidence columns give."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from marketsim.aggregation.confidence_ds import ConfidenceDS
from marketsim.data import load_csv
from marketsim.data.labels import LabelSet

RECORDS = [("t1", "w1", "a", "human", None), ("t1", "gpt", "a", "gpt-4", 0.9),
           ("t2", "w1", "b", "Human", None), ("t2", "gpt", "b", "gpt-4", 0.6),
           ("t2", "w2", "a", "human", None)]


def same_set(a: LabelSet, b: LabelSet) -> None:
    for name in ("tasks", "workers", "labels", "task_ids", "worker_ids", "class_ids"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.sources == b.sources
    np.testing.assert_array_equal(a.confidence, b.confidence)  # NaN where none, in both


def test_records_carry_sources_and_confidence_as_a_file_does(tmp_path: Path) -> None:
    path = tmp_path / "mixed.csv"
    path.write_text("task,worker,label,source,confidence\n" + "".join(
        f"{t},{w},{lab},{s},{'' if c is None else c}\n" for t, w, lab, s, c in RECORDS))
    from_file, _ = load_csv(path)
    data = LabelSet.from_records(RECORDS)
    assert data.sources == ("human", "gpt-4", "human") and data.has_models
    same_set(data, from_file)
    sources_only = LabelSet.from_records([r[:4] for r in RECORDS])
    assert sources_only.sources == data.sources and sources_only.confidence is None
    plain = LabelSet.from_records([r[:3] for r in RECORDS])
    assert plain.sources is None and plain.confidence is None and not plain.has_models


def test_a_frame_carries_sources_and_confidence() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(RECORDS, columns=["item", "who", "answer", "kind", "p"])
    data = LabelSet.from_frame(frame, task="item", worker="who", label="answer", source="kind",
                               confidence="p")
    same_set(data, LabelSet.from_records(RECORDS))
    plain = LabelSet.from_frame(frame, task="item", worker="who", label="answer")
    assert plain.sources is None and plain.confidence is None
    with pytest.raises(ValueError, match="DataFrame has no column 'src'"):
        LabelSet.from_frame(frame, task="item", worker="who", label="answer", source="src")


@pytest.mark.parametrize(("records", "message"), [
    ([("t1", "w1", "a", "human"), ("t2", "w1", "b", "gpt-4")],
     "row 1: column 'source': worker 'w1' is 'gpt-4' here but 'human' at row 0: one worker "
     "has one source"),
    ([("t1", "m", "a", "human"), ("t1", "x", "a", "m")],
     "row 1: column 'source': model 'm' is also a human worker's id \\(row 0\\)"),
    ([("t1", "w1", "a", None)], "column 'source' has a missing value at row 0"),
    ([("t1", "w1", "a", "m", 1.5)], "confidence must be in \\[0, 1\\]"),
    ([("t1", "w1", "a", "m", "high")], "column 'confidence': confidence must be a number"),
    ([("t1", "w1", "a", "human"), ("t1", "w2", "a")], "record 1 is not a \\(task, worker, "
     "label\\[, source\\[, confidence\\]\\]\\) record of the first's length 4"),
])
def test_bad_records_say_which_row_and_what_is_allowed(records: list[tuple], message: str
                                                       ) -> None:
    with pytest.raises(ValueError, match=message):
        LabelSet.from_records(records)


def test_stack_gives_every_instance_the_sets_sources_and_confidence() -> None:
    data = LabelSet.from_records(RECORDS)
    answers = np.array([data.labels, 1 - data.labels, data.labels])
    union = data.stack(answers)
    assert union.sources == ("human", "gpt-4#0", "human", "human", "gpt-4#1", "human",
                             "human", "gpt-4#2", "human")
    assert union.confidence is not None
    np.testing.assert_array_equal(union.confidence, np.tile(data.confidence, 3))
    assert union.has_models and LabelSet.from_records([r[:3] for r in RECORDS]).stack(
        answers).sources is None


def test_ds_confidence_on_a_stack_learns_each_instances_model_on_its_own() -> None:
    rng = np.random.default_rng(5)
    n_tasks, humans = 300, 8
    truth = rng.integers(0, 2, n_tasks)
    tasks = np.repeat(np.arange(n_tasks), 4)
    workers = np.concatenate([rng.choice(humans, 3, replace=False).tolist() + [humans]
                              for _ in range(n_tasks)])
    is_model = workers == humans
    confidence = np.where(is_model, rng.uniform(0.5, 1.0, tasks.size), np.nan)
    data = LabelSet(tasks, workers, np.zeros_like(tasks), n_tasks, humans + 1, 2,
                    confidence=confidence, sources=("human",) * humans + ("gpt",))
    # the model right as often as it says in instance 0, always wrong in instance 1
    model_right = np.where(is_model, np.stack([rng.random(tasks.size) < confidence,
                                               np.zeros(tasks.size, dtype=bool)]), True)
    right = model_right & (rng.random((2, tasks.size)) < np.where(is_model, 1.0, 0.85))
    answers = np.where(right, truth[tasks], 1 - truth[tasks])
    union = ConfidenceDS(n_bins=3).fit(data.stack(answers))
    assert union.models_ == ("gpt#0", "gpt#1")
    for e in range(2):
        alone = ConfidenceDS(n_bins=3).fit(LabelSet(
            tasks, workers, answers[e], n_tasks, humans + 1, 2, confidence=confidence,
            sources=data.sources))
        np.testing.assert_array_equal(union.bin_labels_[e], alone.bin_labels_[0])
        np.testing.assert_allclose(union.bin_accuracy_[e, :3], alone.bin_accuracy_[0, :3],
                                   atol=0.03)
    assert (union.bin_accuracy_[1, :3] < 0.05).all() and (union.bin_accuracy_[0, :3] > 0.5).all()
