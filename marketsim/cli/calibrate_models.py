"""``marketsim calibrate`` on a mixed label file (a source column naming each label's human or
model source): the humans' labels go through the crowd's fit alone, each model's answers are
fitted as a ``[[machines]]`` table (:mod:`marketsim.aggregation.machine_fit`) and its twin's
answers compared with the real ones (:mod:`marketsim.study.twin_machines`)."""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from marketsim.aggregation.machine_fit import fit_machines
from marketsim.aggregation.registry import make_estimator
from marketsim.cli.notes import print_notes
from marketsim.cli.twin_fit import FitRow
from marketsim.data.labels import LabelSet
from marketsim.data.mixed_labels import ModelAnswers, split_sources
from marketsim.data.timestamps import Timestamps
from marketsim.errors import InputError
from marketsim.scenario.calibration import Calibration
from marketsim.scenario.specs import Scenario
from marketsim.study.twin_machines import twin_machines

#: What a model's measures are against, by how much of the file the truth covers.
TRUTH, HUMANS = "the truth", "the humans' Dawid-Skene answer"


def split_models(data: LabelSet, times: Timestamps | None, labels_file: str
                 ) -> tuple[LabelSet, ModelAnswers | None, Timestamps | None]:
    """The humans' labels (and their times) and the models' first answer per task (a note
    says how many repeats were dropped); the data unchanged without models."""
    humans, answers, rows = split_sources(data, None if times is None else times.values)
    if answers is None:
        return data, None, times
    if humans.n_labels == 0:
        raise InputError("has no human labels (source 'human'): calibrate fits the humans' "
                         "crowd first, then each model against it", source=labels_file)
    if answers.dropped:
        print_notes([f"{labels_file}: {answers.dropped} repeated answer"
                     f"{'s' * (answers.dropped != 1)} of a model to a task dropped (its first "
                     "answer per task is fitted)"])
    kept = None if times is None else replace(times, values=times.values[rows])
    return humans, answers, kept


def fit_models(cal: Calibration, data: LabelSet, truth: np.ndarray | None,
               reference: np.ndarray, answers: ModelAnswers | None) -> Calibration:
    """``cal`` with each model fitted against its humans' world (``data``: the humans' labels
    as fitted; ``reference``: each task's class, the truth where known else Dawid–Skene's)."""
    if answers is None:
        return cal
    answers = answers.on(data.task_ids, data.class_ids)
    known = np.zeros(data.n_tasks, dtype=bool) if truth is None else truth >= 0
    weights = np.tile(cal.prior / cal.prior.sum(), (data.n_tasks, 1))
    if known.any():
        assert truth is not None
        weights[known] = np.eye(cal.n_classes)[truth[known]]
    against = TRUTH if known.all() else HUMANS if not known.any() else \
        f"{TRUTH} where known, else {HUMANS}"
    fits = fit_machines(answers, cal.difficulty_world, data.tasks, data.workers, data.labels,
                        weights, reference, against)
    for name in sorted(set(answers.names) - {f.name for f in fits}):
        print(f"marketsim: warning: model {name!r} answered no task a human labelled: it is "
              "not fitted (a model is fitted against the humans' world)", file=sys.stderr)
    return replace(cal, machines=fits)


def model_rows(scenario: Scenario, cal: Calibration, twin_humans: LabelSet) -> list[FitRow]:
    """Each model's goodness of fit, real against its twin: accuracy and ECE against the
    truth (or, without a full truth, agreement and ECE against the humans' Dawid–Skene
    answer, the twin's on the twin humans' labels)."""
    if not cal.machines:
        return []
    humans_answer = np.asarray(make_estimator("ds").fit(twin_humans).labels_)
    rows = []
    for fit, twin in zip(cal.machines, twin_machines(scenario, humans_answer), strict=True):
        truth = fit.against == TRUTH
        what = "accuracy vs truth" if truth else "agreement with the humans' Dawid-Skene"
        sim_acc, sim_ece = (twin.accuracy, twin.ece) if truth else \
            (twin.agreement, twin.ece_vs_humans)
        ece = "n/a (no confidence)" if fit.measured_ece is None else f"{fit.measured_ece:.4f}"
        rows += [FitRow(f"model {fit.name}: {what}", f"{fit.measured_accuracy:.4f}",
                        f"{sim_acc:.4f}"),
                 FitRow(f"model {fit.name}: ECE ({'vs truth' if truth else 'vs the humans'})",
                        ece, "n/a" if np.isnan(sim_ece) else f"{sim_ece:.4f}")]
    return rows
