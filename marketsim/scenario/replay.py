"""Real-data replay, scenario side: which file is replayed and its loaded labels and truth.

The market side (the requester that only hands out answered tasks, the replay world) is
:mod:`marketsim.market.replay`.

A worker can only be given a task they actually answered, and their answer is the one in the
file, so policies can be compared on real crowds (as Chen, Lin & Zhou evaluated on RTE). Curves
are measured against the data set's truth (tasks without truth are left out of the error).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal, Self

import numpy as np
from pydantic import model_validator

from marketsim.data import dataset_paths, load_labels
from marketsim.data.labels import LabelSet
from marketsim.data.truth import check_truth_coverage
from marketsim.errors import InputError
from marketsim.options import F
from marketsim.scenario.validation import KeyProblem
from marketsim.tables import Table

#: Keys holding file or folder paths, relative to the scenario file as written.
PATH_KEYS = ("labels", "truth", "data_dir")


class ReplaySpec(Table):
    """``[replay]``: replay a real data set's answers instead of simulating workers

    A reference data set by name, or a labels file with its truth."""

    dataset: str | None = F(None, "a reference data set by name (`python -m marketsim list`)",
                            shown="none")
    labels: str | None = F(None, "labels file (relative to the scenario file); give this with "
                           "`truth`, or `dataset`", shown="none")
    truth: str | None = F(None, "truth file, required with `labels`", shown="none")
    data_dir: str | None = F(None, "folder of the reference data sets (relative to the "
                             "scenario file); `--data-dir` and `$MARKETSIM_DATA` come first",
                             shown="../shared/data")
    format: Literal["zhang", "csv"] | None = F(None, "labels file format",
                                               shown="from the file")

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.dataset is None) == (self.labels is None):
            raise KeyProblem("dataset", "give either replay.dataset or replay.labels (with "
                             "truth)")
        if self.labels is not None and self.truth is None:
            raise KeyProblem("truth", "is required with replay.labels")
        return self

    def relative_to(self, folder: Path) -> ReplaySpec:
        """This spec with its relative paths taken relative to ``folder`` (the scenario
        file's: worker processes may run in another directory)."""
        return self.model_copy(update={k: str(folder / v) for k in PATH_KEYS
                                       if (v := getattr(self, k)) is not None})

    def paths(self) -> tuple[Path, Path | None]:
        """Labels and truth files."""
        if self.dataset is not None:
            crowd, truth = dataset_paths(self.dataset, self.data_dir)
            return crowd, truth
        assert self.labels is not None
        return Path(self.labels), None if self.truth is None else Path(self.truth)


@dataclass(frozen=True)
class ReplayData:
    """The replayed labels, the truth (class index, -1 unknown) and the answer lookup."""

    labels: LabelSet
    truth: np.ndarray

    @property
    def pair_keys(self) -> np.ndarray:
        """``task * n_workers + worker`` of every answer in the file."""
        return self.labels.tasks * self.labels.n_workers + self.labels.workers


@lru_cache(maxsize=8)
def _load_cached(labels: str, truth: str | None, fmt: str | None, stamp: float) -> ReplayData:
    data, truth_idx = load_labels(labels, truth, fmt)
    if truth_idx is None:
        raise InputError("replay needs the truth: give replay.truth", source=labels)
    truth_arr = np.asarray(truth_idx, dtype=np.int64)
    check_truth_coverage(data, truth_arr, truth_file=str(truth), labels_file=labels)
    if truth_arr.shape[0] != data.n_tasks:  # pragma: no cover - loaders align truth to tasks
        raise InputError("truth does not cover the tasks", source=truth)
    return ReplayData(data, truth_arr)


def load_replay(spec: ReplaySpec) -> ReplayData:
    """Load (once per process) the data a replay scenario names."""
    labels, truth = spec.paths()
    stamp = os.stat(labels).st_mtime if os.path.exists(labels) else 0.0
    return _load_cached(str(labels), None if truth is None else str(truth), spec.format, stamp)


def empirical_confusion(data: ReplayData) -> np.ndarray:
    """Each worker's confusion matrix measured against the truth (rows without data uniform):
    the 'true' worker quality a replay market's ability error is measured against."""
    lab = data.labels
    k = lab.n_classes
    known = data.truth[lab.tasks] >= 0
    counts = np.zeros((lab.n_workers, k, k))
    np.add.at(counts, (lab.workers[known], data.truth[lab.tasks[known]], lab.labels[known]), 1.0)
    totals = counts.sum(axis=2, keepdims=True)
    return np.where(totals > 0, counts / np.maximum(totals, 1.0), 1.0 / k)
