"""One mixed crowd's labels: the humans' label log and the machine annotators' answers joined
into one :class:`~marketsim.data.labels.LabelSet`, with who gave each label (``sources``) and
the confidence each machine stated (``confidence``).

A market hands its two halves over (:meth:`~marketsim.market.machine_calls.MachineCalls.
mixed_labels`); here the set is defined, so an estimator that knows what a model is
(``ds-confidence``, a model's repeats counted once) reads a simulated market's labels as it
reads a mixed label file. A mixed label file is split the other way for ``marketsim
calibrate`` (:func:`split_sources`): the humans' labels, fitted as a crowd, and each model's
answers, fitted as a machine annotator (:mod:`~marketsim.aggregation.machine_fit`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from marketsim.data.labels import LabelSet
from marketsim.data.sources import HUMAN


def with_machine_labels(  # noqa: PLR0913 - the humans' set and the machines' answers
    humans: LabelSet, tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
    confidence: np.ndarray, machine_names: tuple[str, ...],
) -> LabelSet:
    """One mixed crowd's :class:`~marketsim.data.labels.LabelSet`: the humans' labels, then
    the machines' answers (``workers``: ``humans.n_workers + m`` for machine ``m``), with
    ``sources`` (:data:`HUMAN` per human worker, then ``machine_names``) and ``confidence``
    (NaN for a human's label, the machine's stated one otherwise).

    Task, class and human worker ids are the humans'; a machine's worker id is its name. A
    model's repeated answers are kept as labels: estimators count them once
    (:mod:`~marketsim.aggregation.model_repeats`). ValueError when a machine answer's worker
    is not one of the machines or when the humans' labels carry scores (machines give none).
    """
    n_humans, n_machines = humans.n_workers, len(machine_names)
    workers = np.asarray(workers, dtype=np.int64)
    if workers.size and (workers.min() < n_humans or workers.max() >= n_humans + n_machines):
        raise ValueError(f"machine answers' workers must be {n_humans}..."
                         f"{n_humans + n_machines - 1} (the machines after the humans)")
    if humans.scores is not None:
        raise ValueError("machine answers cannot join labels with scores (a continuous market)")
    human_confidence = (np.full(humans.n_labels, np.nan) if humans.confidence is None
                        else humans.confidence)
    default_ids = np.array_equal(humans.worker_ids, np.arange(n_humans))
    worker_ids = (np.arange(n_humans + n_machines) if default_ids else np.concatenate(
        [humans.worker_ids.astype(object), np.asarray(machine_names, dtype=object)]))
    return LabelSet(
        np.concatenate([humans.tasks, np.asarray(tasks, dtype=np.int64)]),
        np.concatenate([humans.workers, workers]),
        np.concatenate([humans.labels, np.asarray(labels, dtype=np.int64)]),
        humans.n_tasks, n_humans + n_machines, humans.n_classes,
        humans.task_ids, worker_ids, humans.class_ids,
        confidence=np.concatenate([human_confidence,
                                   np.asarray(confidence, dtype=np.float64)]),
        sources=humans.worker_sources + tuple(machine_names))


@dataclass(frozen=True)
class ModelAnswers:
    """The models' answers of a mixed label file, one per (model, task): ``model`` (code into
    ``names``), ``task`` and ``label`` (indices of the file's tasks and classes; a label of -1
    is a class the crowd's twin does not have, a wrong answer whatever the truth) and
    ``confidence`` (NaN: none); ``task_ids`` and ``class_ids`` name those indices.
    ``repeats``: answers dropped per model (a task asked again keeps its first answer),
    ``changed``: tasks per model whose repeats disagreed (a model sampled at temperature >
    0)."""

    names: tuple[str, ...]
    model: np.ndarray
    task: np.ndarray
    label: np.ndarray
    confidence: np.ndarray
    repeats: np.ndarray
    changed: np.ndarray
    task_ids: np.ndarray
    class_ids: np.ndarray

    def on(self, task_ids: np.ndarray, class_ids: np.ndarray) -> ModelAnswers:
        """The answers re-indexed onto tasks ``task_ids`` and classes ``class_ids`` (the
        humans' after calibrate's checks): an answer on a task the humans did not label is
        dropped, a class they never gave is -1."""
        task = _positions(self.task_ids[self.task], np.asarray(task_ids))
        label = np.where(self.label >= 0, _positions(self.class_ids[np.maximum(self.label, 0)],
                                                     np.asarray(class_ids)), -1)
        keep = task >= 0
        return replace(self, model=self.model[keep], task=task[keep], label=label[keep],
                       confidence=self.confidence[keep], task_ids=np.asarray(task_ids),
                       class_ids=np.asarray(class_ids))

    @property
    def dropped(self) -> int:
        """Answers dropped as repeats, all models."""
        return int(self.repeats.sum())


def _positions(values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The index of each of ``values`` in ``ids`` (distinct), -1 where absent."""
    if ids.size == 0:
        return np.full(values.size, -1, dtype=np.int64)
    keys, wanted = ids.astype(str), values.astype(str)
    order = np.argsort(keys, kind="stable")
    at = np.minimum(np.searchsorted(keys[order], wanted), ids.size - 1)
    found = keys[order][at] == wanted
    return np.where(found, order[at], -1).astype(np.int64)


def split_sources(data: LabelSet, times: np.ndarray | None = None
                  ) -> tuple[LabelSet, ModelAnswers | None, np.ndarray]:
    """A mixed crowd's labels split into the humans' (their own :class:`LabelSet`: the same
    tasks and classes, the human workers only) and the models' answers, each model's first
    answer per task (by ``times`` when given, else in file order): a deterministic model's
    repeat says nothing new. Also the human labels' rows (to subset their times). ``None``
    for the models when no worker is a model."""
    if not data.has_models:
        return data, None, np.arange(data.n_labels)
    sources = np.asarray(data.worker_sources, dtype=object)
    is_human = sources == HUMAN
    human_rows = np.flatnonzero(is_human[data.workers])
    kept_workers = np.flatnonzero(is_human)
    code = np.cumsum(is_human) - 1
    humans = LabelSet(data.tasks[human_rows], code[data.workers[human_rows]],
                      data.labels[human_rows], data.n_tasks, kept_workers.size, data.n_classes,
                      data.task_ids, np.asarray(data.worker_ids)[kept_workers], data.class_ids)
    names = tuple(sorted({str(s) for s in sources[~is_human]}))
    model_of = np.full(data.n_workers, -1, dtype=np.int64)
    model_of[~is_human] = np.searchsorted(np.asarray(names, dtype=object), sources[~is_human])
    rows = np.flatnonzero(~is_human[data.workers])
    when = rows.astype(np.float64) if times is None else np.asarray(times, float)[rows]
    model = model_of[data.workers[rows]]
    order = np.lexsort((rows, when, data.tasks[rows], model))  # by model, task, time, line
    rows, model = rows[order], model[order]
    pair = model * data.n_tasks + data.tasks[rows]
    first = np.ones(rows.size, dtype=bool)
    first[1:] = pair[1:] != pair[:-1]
    start = np.cumsum(first) - 1
    differs = data.labels[rows] != data.labels[rows][first][start]
    changed_pairs = np.unique(pair[differs])
    confidence = (np.full(data.n_labels, np.nan) if data.confidence is None
                  else data.confidence)
    answers = ModelAnswers(
        names, model[first], data.tasks[rows[first]], data.labels[rows[first]],
        confidence[rows[first]],
        np.bincount(model[~first], minlength=len(names)),
        np.bincount(changed_pairs // max(data.n_tasks, 1), minlength=len(names)),
        np.asarray(data.task_ids), np.asarray(data.class_ids))
    return humans, answers, human_rows
