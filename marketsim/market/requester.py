"""Task hand-out: the requester gives each arriving worker a task from the policy's ranking.

:class:`Requester` serves simulated crowds; :class:`~marketsim.market.replay.ReplayRequester`
serves a replayed real crowd (only pairs the file answered). Both follow :class:`TaskRequester`.
The market hands them full permutations of the tasks (see
:func:`marketsim.market.policy_guard.checked_ranking`).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from marketsim.data.compact_labels import compact_id_dtype
from marketsim.market.pairs import HandedPairs, ReceivedPairs


class TaskRequester(Protocol):
    """What the market needs from a requester."""

    def new_round(self, ranking: np.ndarray) -> None:
        """Start a round from a fresh ranking (a permutation of the tasks)."""

    def mark(self, task: int, worker: int) -> None:
        """``worker`` holds or labelled ``task``: never hand them that task again."""

    def assign(self, worker: int) -> int | None:
        """Next task for ``worker``, or ``None`` if none is left for them."""

    def release(self, task: int, worker: int) -> None:
        """``worker`` abandoned ``task`` unlabelled: hand it out again."""


class Marks(Protocol):
    """Any requester: it remembers who holds or labelled what."""

    def mark(self, task: int, worker: int) -> None:
        """``worker`` holds or labelled ``task``."""


def mark_all(requester: Marks, tasks: np.ndarray, workers: np.ndarray) -> None:
    """``requester.mark`` for each pair (the initial graph): a :class:`Requester` marks them
    at once (:meth:`Requester.mark_many`, no Python int per pair), others one by one."""
    if isinstance(requester, Requester):
        requester.mark_many(tasks, workers)
        return
    for task, worker in zip(tasks.tolist(), workers.tolist(), strict=True):
        requester.mark(task, worker)


class Requester:
    """Hands out tasks from the current ranking: each round gives distinct tasks, and a worker
    never gets a task they already hold or labelled (:class:`~marketsim.market.pairs.HandedPairs`,
    which asks the label log about the pairs received before the last refresh).

    With ``even_rounds`` (the policy's fact, :attr:`~marketsim.policies.base.Policy.even_rounds`)
    a round hands every task out once before the next pass: a new ranking continues the round
    (the tasks it has not handed out first), a worker who labelled every task left in it gets
    nothing, and :meth:`end_round` ends it unfinished only when no idle worker can go on.

    Scalar code, run once per label: the ranking is read through a memoryview (numpy scalar
    indexing would cost several times more; a list of Python ints, 36 bytes a task) and the
    round's hand-outs kept in a ``bytearray``.
    """

    def __init__(self, n_tasks: int, n_workers: int, budget: int = 0,
                 log: ReceivedPairs | None = None, even_rounds: bool = False) -> None:
        self.n_tasks = n_tasks
        self.even_rounds = even_rounds
        #: Tasks handed out (from the ranking) since the round's pass started.
        self.round_handed = 0
        self.given = bytearray(n_tasks)  # 1 where handed out this round
        self.done_pairs = HandedPairs(n_tasks, n_workers, budget, log)
        self.n_workers = n_workers
        #: Abandoned tasks, handed out first to the next worker who has not held them.
        self.returned: list[int] = []
        self.new_round(np.arange(n_tasks))

    def new_round(self, ranking: np.ndarray) -> None:
        """Start a round from a fresh ranking (with even rounds, an unfinished round goes on:
        the ranking's tasks not yet handed out in it first, in their order; vectorised)."""
        ranking = np.asarray(ranking, dtype=compact_id_dtype(self.n_tasks))  # 4 B a task
        going_on = self.even_rounds and 0 < self.round_handed < self.n_tasks
        if going_on:
            taken = np.frombuffer(self.given, dtype=np.uint8)[ranking].view(bool)
            ranking = np.concatenate([ranking[~taken], ranking[taken]])
        self.ranking = ranking
        self._order = self.ranking.data
        self.cursor = 0
        if not going_on:
            self._next_pass()
        self.done_pairs.settle()

    def _next_pass(self) -> None:
        """A new pass over the ranking: every task may be handed out again."""
        self.cursor = 0
        self.given = bytearray(self.n_tasks)
        self.round_handed = 0

    def end_round(self) -> bool:
        """End an unfinished even round that no idle worker can go on with (each labelled every
        task left in it): True when there was one, the next pass then starts; False when the
        round is a fresh pass (the market is stuck) or rounds are not even."""
        if not self.even_rounds or self.round_handed == 0:
            return False
        self._next_pass()
        return True

    def mark(self, task: int, worker: int) -> None:
        """Remember that ``worker`` holds or labelled ``task``."""
        self.done_pairs.add(task, worker)

    def mark_many(self, tasks: np.ndarray, workers: np.ndarray) -> None:
        """:meth:`mark` for each pair, vectorised (no Python int per pair)."""
        self.done_pairs.add_many(tasks, workers)

    def assign(self, worker: int) -> int | None:
        """Next task for ``worker``, or ``None`` if none is left for them this round."""
        order, pairs = self._order, self.done_pairs
        if self.returned:
            for pos, task in enumerate(self.returned):
                if not pairs.has(task, worker):
                    del self.returned[pos]
                    self.mark(task, worker)
                    return task
        for _ in range(2):
            given = self.given
            self.cursor, pos = pairs.scan(order, given, self.cursor, worker)  # marks the pair
            if pos >= 0:
                task = order[pos]
                given[task] = 1
                self.round_handed += 1
                return task
            if self.even_rounds and self.cursor < len(order):
                return None  # they labelled every task left in the round: it is not over
            # The ranking is used up this round: start a new pass over it.
            self._next_pass()
        return None

    def release(self, task: int, worker: int) -> None:
        """``worker`` abandoned ``task`` unlabelled: the next arriving worker who has not held
        it gets it first (``worker`` keeps it marked: never handed it again)."""
        self.returned.append(task)
