"""Real-data replay answers: a worker's answer on a task is the one in the data set's file (the
replay requester only hands out pairs the file has)."""

from __future__ import annotations

from marketsim.scenario.replay import ReplayData


class ReplayAnswers:
    """Look up the file's answer of each (task, worker) pair; no random draw."""

    def __init__(self, data: ReplayData) -> None:
        self.n_workers = data.labels.n_workers
        keys = data.pair_keys.tolist()
        self.answers: dict[int, int] = dict(zip(keys, data.labels.labels.tolist(), strict=True))

    def answer(self, task: int, worker: int) -> tuple[int, float | None]:
        """The label ``worker`` gave ``task`` in the file (no score)."""
        return self.answers[task * self.n_workers + worker], None
