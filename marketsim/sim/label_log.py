"""Growable arrays of received labels: the array view that inference runs on."""

from __future__ import annotations

import numpy as np

from marketsim.data.labels import LabelSet


class LabelLog:
    """Append-only (task, worker, label) arrays with amortised O(1) appends."""

    def __init__(self, n_tasks: int, n_workers: int, n_classes: int, capacity: int) -> None:
        self.n_tasks = n_tasks
        self.n_workers = n_workers
        self.n_classes = n_classes
        self.size = 0
        cap = max(int(capacity), 16)
        self._tasks = np.empty(cap, dtype=np.int64)
        self._workers = np.empty(cap, dtype=np.int64)
        self._labels = np.empty(cap, dtype=np.int64)

    def _grow(self, need: int) -> None:
        cap = self._tasks.shape[0]
        if need <= cap:
            return
        new_cap = max(need, 2 * cap)
        for name in ("_tasks", "_workers", "_labels"):
            old = getattr(self, name)
            new = np.empty(new_cap, dtype=np.int64)
            new[: self.size] = old[: self.size]
            setattr(self, name, new)

    def append(self, task: int, worker: int, label: int) -> None:
        """Record one label."""
        if self.size == self._tasks.shape[0]:
            self._grow(self.size + 1)
        i = self.size
        self._tasks[i] = task
        self._workers[i] = worker
        self._labels[i] = label
        self.size = i + 1

    def extend(self, tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray) -> None:
        """Record many labels at once."""
        n = len(tasks)
        self._grow(self.size + n)
        s = slice(self.size, self.size + n)
        self._tasks[s] = tasks
        self._workers[s] = workers
        self._labels[s] = labels
        self.size += n

    def view(self) -> LabelSet:
        """A LabelSet over the labels received so far (shares memory, no copy)."""
        n = self.size
        return LabelSet(
            self._tasks[:n],
            self._workers[:n],
            self._labels[:n],
            self.n_tasks,
            self.n_workers,
            self.n_classes,
        )
