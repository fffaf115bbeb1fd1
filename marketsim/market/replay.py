"""Real-data replay, market side: a worker can only be given a task they actually answered
(whether a ranking or a worker-aware policy chooses), and their answer is the one in the file,
so policies can be compared on real crowds (as Chen, Lin & Zhou evaluated on RTE). Curves are
measured against the data set's truth (tasks without truth are left out of the error)."""

from __future__ import annotations

import numpy as np

from marketsim.scenario.replay import ReplayData, empirical_confusion
from marketsim.workers.base import World
from marketsim.workers.confusion import ConfusionWorkers
from marketsim.workers.draws import accuracy

#: A replayed crowd's worker model: its measured confusion matrices answer gold questions (the
#: file answers every task); it is measured like any class-label crowd.
REPLAYED_CROWD = ConfusionWorkers()


class ReplayAnswers:
    """Look up the file's answer of each (task, worker) pair; no random draw."""

    def __init__(self, data: ReplayData) -> None:
        self.n_workers = data.labels.n_workers
        keys = data.pair_keys.tolist()
        self.answers: dict[int, int] = dict(zip(keys, data.labels.labels.tolist(), strict=True))

    def answer(self, task: int, worker: int) -> tuple[int, float | None]:
        """The label ``worker`` gave ``task`` in the file (no score)."""
        return self.answers[task * self.n_workers + worker], None


def answered_tasks(data: ReplayData) -> list[np.ndarray]:
    """The tasks each worker answered in the file (in file order): the only ones a replay may
    hand them, by a ranking (:class:`ReplayRequester`) or a worker-aware policy's ``assign``
    (:class:`~marketsim.market.assign.WorkerAwareRequester`, given them as ``only``)."""
    lab = data.labels
    order = np.argsort(lab.workers, kind="stable")
    starts = np.searchsorted(lab.workers[order], np.arange(lab.n_workers + 1))
    return [lab.tasks[order[starts[j] : starts[j + 1]]] for j in range(lab.n_workers)]


class ReplayRequester:
    """Hands out, from the current ranking, only tasks the worker answered in the file,
    preferring tasks not yet handed out this round.

    A round is one ranking; with ``even_rounds`` (the policy's fact,
    :attr:`~marketsim.policies.base.Policy.even_rounds`: uniform's) it is a pass that hands every
    task with an answer left in the file out once before the next pass starts, across rankings,
    as :class:`~marketsim.market.requester.Requester` does for a simulated crowd: a worker with
    no answer left among the pass's tasks gets nothing until it ends (the workers holding those
    answers arrive: a replayed worker's arrival weight is positive), so every task gets its share
    of the labels within one wherever the file holds enough answers.
    """

    def __init__(self, data: ReplayData, even_rounds: bool = False) -> None:
        lab = data.labels
        self.n_workers = lab.n_workers
        self.even_rounds = even_rounds
        self.remaining = [list(tasks) for tasks in answered_tasks(data)]
        #: Answers each task has left in the file for the requester to hand out.
        self.left = np.bincount(lab.tasks, minlength=lab.n_tasks)
        self.rank_pos = np.arange(lab.n_tasks)
        self.given = np.zeros(lab.n_tasks, dtype=bool)

    def new_round(self, ranking: np.ndarray) -> None:
        """Start a round: remember each task's position in the ranking (with even rounds, an
        unfinished pass goes on)."""
        pos = np.full(self.given.shape[0], len(ranking), dtype=np.int64)
        pos[np.asarray(ranking, dtype=np.int64)] = np.arange(len(ranking))
        self.rank_pos = pos
        if not self.even_rounds:
            self.given[:] = False

    def mark(self, task: int, worker: int) -> None:
        """``worker`` holds or labelled ``task``: it is no longer available to them."""
        tasks = self.remaining[worker]
        if task in tasks:
            tasks.remove(task)
            self.left[task] -= 1

    def release(self, task: int, worker: int) -> None:
        """``worker`` abandoned ``task``: only they can give the file's answer, so it is theirs
        to be handed again (with even rounds, the pass owes the task its label again)."""
        self.remaining[worker].append(task)
        self.left[task] += 1
        if self.even_rounds:
            self.given[task] = False

    def assign(self, worker: int) -> int | None:
        """The best-ranked task the worker answered, preferring tasks not yet given this round
        (with even rounds, only those, until the pass has handed out every task it can)."""
        tasks = self.remaining[worker]
        if not tasks:
            return None
        cand = np.asarray(tasks)
        fresh = ~self.given[cand]
        if self.even_rounds and not fresh.any():
            if (~self.given & (self.left > 0)).any():
                return None  # the pass still wants tasks only others can answer
            self.given[:] = False  # the pass is over: the next one starts
            fresh[:] = True
        pool = cand[fresh] if fresh.any() else cand
        task = int(pool[np.argmin(self.rank_pos[pool])])
        self.given[task] = True
        tasks.remove(task)
        self.left[task] -= 1
        return task


def replay_world(
    data: ReplayData, initial: str, n_classes: int, prior: np.ndarray, rng: np.random.Generator
) -> World:
    """The world of a replay market: the data set's truth and measured worker quality; the
    initial graph gives each task one of its real answers (``one-per-task``) or nothing."""
    lab = data.labels
    confusion = empirical_confusion(data)
    if n_classes > lab.n_classes:  # truth-only classes: pad with uniform rows/columns
        pad = np.full((lab.n_workers, n_classes, n_classes), 1.0 / n_classes)
        pad[:, : lab.n_classes, : lab.n_classes] = confusion
        confusion = pad
    if initial == "one-per-task":
        order = np.lexsort((rng.random(lab.n_labels), lab.tasks))
        first = np.ones(order.size, dtype=bool)
        first[1:] = lab.tasks[order][1:] != lab.tasks[order][:-1]
        pick = order[first]
    else:
        pick = np.zeros(0, dtype=np.int64)
    return World(
        truth=data.truth.copy(),
        confusion=confusion,
        ability=accuracy(confusion, prior),
        initial_tasks=lab.tasks[pick],
        initial_workers=lab.workers[pick],
        initial_labels=lab.labels[pick],
        model=REPLAYED_CROWD,
    )
