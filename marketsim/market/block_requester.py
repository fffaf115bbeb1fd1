"""The requester of the block engine (``[scenario] engine = "blocks"``): the rule of
:class:`~marketsim.market.requester.Requester` — each round hands out distinct tasks from the
ranking, in its order, and a worker is never handed a task twice — applied to a whole block of
arrivals in one call.

The walk over the ranking with the pair check is sequential (each hand-out changes what the
next arrival may get), so it runs in C (:mod:`marketsim.market._native.hand_out`), or, where the
extension could not be built, in the Python loop :func:`walk_python`, which follows it step for
step (same results; ``tests/market/test_block_requester.py`` compares them). The pairs handed out
are a bit filter (exact when every pair fits in a byte a label of the budget, else hashed) in
front of a table of the pairs handed out since the last refresh and of the label log's incidence
matrix, which holds every pair received before it: what
:class:`~marketsim.market.pairs.HandedPairs` keeps, in arrays C can read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from marketsim.market.pairs import MAX_FILTER_BYTES

#: The walk's signature (``hand_out.walk``, :func:`walk_python`).
Walk = Callable[..., int]

walk_native: Walk | None
try:
    from marketsim.market._native.hand_out import walk as _compiled_walk

    walk_native = _compiled_walk
except ImportError:  # no C compiler at install: the Python loop below (same results)
    walk_native = None

#: The slots of the walk's state array (see ``hand_out.c``).
CURSOR, NEED, HANDED, REFUSED, STUCK, RECENT, EPOCH, EVEN, ROUND = range(9)
STATE_SLOTS = 9

#: The open-addressing hash of the table of recent pairs (``hand_out.c``'s ``slot_of``).
_GOLDEN = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1


def _slot(key: int, mask: int) -> int:
    return ((key * _GOLDEN) & _MASK64) >> 17 & mask


def walk_python(order: np.ndarray, given: np.ndarray, workers: np.ndarray, tasks_out: np.ndarray,
                filt: np.ndarray, bits: int, exact: int, n_workers: int,
                indptr: np.ndarray | None, indices: np.ndarray | None, n_classes: int,
                recent: np.ndarray | None, stamp: np.ndarray, state: np.ndarray) -> int:
    """``hand_out.walk`` in Python, step for step (the fallback, and its reference)."""
    n = order.size

    def has(task: int, worker: int) -> bool:
        key = task * n_workers + worker
        bit = key if exact else key % bits
        if not filt[bit >> 3] >> (bit & 7) & 1:
            return False
        if exact:
            return True
        assert recent is not None
        mask = recent.size - 1
        s = _slot(key, mask)
        while recent[s] != -1:
            if recent[s] == key:
                return True
            s = (s + 1) & mask
        if indptr is None or indices is None:
            return False
        low = worker * n_classes
        lo, hi = int(indptr[task]), int(indptr[task + 1])
        pos = lo + int(np.searchsorted(indices[lo:hi], low))
        return pos < hi and int(indices[pos]) < low + n_classes

    def mark(task: int, worker: int) -> None:
        key = task * n_workers + worker
        bit = key if exact else key % bits
        filt[bit >> 3] |= 1 << (bit & 7)
        if exact or recent is None:
            return
        mask = recent.size - 1
        s = _slot(key, mask)
        while recent[s] != -1 and recent[s] != key:
            s = (s + 1) & mask
        if recent[s] == -1:
            recent[s] = key
            state[RECENT] += 1

    def next_pass() -> None:
        state[CURSOR] = state[ROUND] = 0
        given[:] = 0

    def assign(worker: int) -> int:
        for _ in range(2):
            cursor = int(state[CURSOR])
            while cursor < n and given[order[cursor]]:
                cursor += 1
            state[CURSOR] = cursor
            for pos in range(cursor, n):
                task = int(order[pos])
                if not given[task] and not has(task, worker):
                    given[task] = 1
                    state[ROUND] += 1
                    mark(task, worker)
                    return task
            if state[EVEN] and cursor < n:
                return -1  # they labelled every task left in the round: it is not over
            next_pass()
        return -1

    i = 0
    while i < workers.size and state[NEED] > 0 and not state[STUCK]:
        w = int(workers[i])
        if not exact and recent is not None and 2 * (state[RECENT] + 1) > recent.size:
            raise ValueError("walk: the table of recent pairs is full")
        task = assign(w)
        tasks_out[i] = task
        if task >= 0:
            state[HANDED] += 1
            state[NEED] -= 1
            state[EPOCH] += 1
            state[REFUSED] = 0
        elif stamp[w] != state[EPOCH]:
            stamp[w] = state[EPOCH]
            state[REFUSED] += 1
            if state[REFUSED] >= n_workers:
                if state[EVEN] and state[ROUND] > 0:  # no one can go on with the round
                    next_pass()
                    state[REFUSED] = 0
                    state[EPOCH] += 1
                else:
                    state[STUCK] = 1
        i += 1
    return i


class BlockRequester:
    """Hands out tasks to blocks of arrivals from the current ranking (the requester's rule).

    ``incidence`` gives the log's incidence matrix of the labels received so far (read at each
    new round, after the refresh merged them); ``per_refresh`` bounds the hand-outs between two
    refreshes (the size of the table of recent pairs); ``even_rounds``: the requester's even
    rounds (:class:`~marketsim.market.requester.Requester`)."""

    def __init__(self, n_tasks: int, n_workers: int, n_classes: int, budget: int,
                 per_refresh: int, incidence: Callable[[], Any],
                 native: bool = True, even_rounds: bool = False) -> None:
        self.n_tasks, self.n_workers, self.n_classes = n_tasks, n_workers, n_classes
        self.incidence = incidence
        room = 8 * min(max(int(budget), 64), MAX_FILTER_BYTES)
        #: Every pair one bit (small markets), or a hashed bit per pair (odd size: keys spread).
        self.exact = n_tasks * n_workers <= room
        self.bits = n_tasks * n_workers if self.exact else room - 1
        self.filter = np.zeros((self.bits >> 3) + 1, dtype=np.uint8)
        size = 1 << max(4, int(2 * max(per_refresh, 1)).bit_length())
        #: Pairs handed out since the last refresh (hashed mode; -1 = empty slot).
        self.recent: np.ndarray | None = None if self.exact else np.full(size, -1, np.int64)
        self.given = np.zeros(n_tasks, dtype=np.uint8)
        self.stamp = np.full(n_workers, -1, dtype=np.int64)
        self.state = np.zeros(STATE_SLOTS, dtype=np.int64)
        self.state[EVEN] = int(even_rounds)
        self.ranking = np.arange(n_tasks, dtype=np.int64)
        self._indptr: np.ndarray | None = None
        self._indices: np.ndarray | None = None
        self._walk = walk_native if native and walk_native is not None else walk_python

    def new_round(self, ranking: np.ndarray) -> None:
        """Start a round from a fresh ranking (a permutation of the tasks): the pairs handed
        out so far are in the log now, so the table of recent ones starts empty. An unfinished
        even round goes on: the ranking's tasks not yet handed out in it first."""
        ranking = np.ascontiguousarray(ranking, dtype=np.int64)
        if self.state[EVEN] and 0 < self.state[ROUND] < self.n_tasks:
            taken = self.given[ranking].view(bool)
            ranking = np.concatenate([ranking[~taken], ranking[taken]])
        else:
            self.given[:] = 0
            self.state[ROUND] = 0
        self.ranking = ranking
        self.state[CURSOR] = 0
        self.state[REFUSED] = 0
        self.state[EPOCH] += 1
        if self.recent is not None:
            self.recent.fill(-1)
            self.state[RECENT] = 0
            mat = self.incidence()
            if mat is None:
                raise ValueError("the block engine needs the label log's incidence matrix")
            self._indptr, self._indices = mat.indptr, mat.indices

    def forget_log(self) -> None:
        """Let go of the log's incidence arrays before a refresh merges new labels into fresh
        ones, so that the old arrays (4 bytes a label) are not held through the fit; the next
        round reads the new ones (:meth:`new_round`)."""
        self._indptr = self._indices = None

    def mark(self, tasks: np.ndarray, workers: np.ndarray) -> None:
        """Remember that ``workers`` labelled ``tasks`` (the initial graph: received before the
        first refresh, so in the filter only)."""
        key = np.asarray(tasks, dtype=np.int64) * self.n_workers + np.asarray(workers, np.int64)
        bit = key if self.exact else key % self.bits
        np.bitwise_or.at(self.filter, bit >> 3, (1 << (bit & 7)).astype(np.uint8))

    def assign(self, workers: np.ndarray, need: int) -> tuple[np.ndarray, int, bool]:
        """Hand tasks to the arriving ``workers`` until ``need`` are handed out: (each consumed
        arrival's task, -1 when none was left for them; arrivals consumed; whether every worker
        arrived and was refused since the last hand-out, i.e. the market is stuck)."""
        workers = np.ascontiguousarray(workers, dtype=np.int64)
        out = np.empty(workers.size, dtype=np.int64)
        self.state[NEED] = need
        self.state[STUCK] = 0
        used = self._walk(self.ranking, self.given, workers, out, self.filter, self.bits,
                          int(self.exact), self.n_workers, self._indptr, self._indices,
                          self.n_classes, self.recent, self.stamp, self.state)
        return out[:used], int(used), bool(self.state[STUCK])
