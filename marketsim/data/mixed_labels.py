"""One mixed crowd's labels: the humans' label log and the machine annotators' answers joined
into one :class:`~marketsim.data.labels.LabelSet`, with who gave each label (``sources``) and
the confidence each machine stated (``confidence``).

A market hands its two halves over (:meth:`~marketsim.market.machine_calls.MachineCalls.
mixed_labels`); here the set is defined, so an estimator that knows what a model is
(``ds-confidence``, a model's repeats counted once) reads a simulated market's labels as it
reads a mixed label file.
"""

from __future__ import annotations

import numpy as np

from marketsim.data.labels import LabelSet


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
