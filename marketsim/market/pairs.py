"""Which (task, worker) pairs were handed out, so that no worker gets a task twice; compact for
big markets (issue #30).

The pairs handed out since the last refresh are a Python set (the initial graph's, added at
once, a sorted array); older ones are asked of the label log, whose incidence matrix holds
every received label (a few bytes a label, where a set of every pair costs about 80). A bit
filter (one byte a label of the budget) answers most "never" without a look at the log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

#: The compiled scan of :meth:`HandedPairs.scan` (``None`` without a C compiler at install:
#: the same loop in Python, same results).
FirstNew = Callable[[memoryview, bytearray, int, bytearray, int, int], tuple[int, int]]
first_new_native: FirstNew | None
try:
    from marketsim.market._native.hand_out import first_new as _compiled_first_new

    first_new_native = _compiled_first_new
except ImportError:  # pragma: no cover - built wherever a C compiler is
    first_new_native = None

#: The bit filter's size at most (bytes): past it, more "never"s are asked of the log.
MAX_FILTER_BYTES = 1 << 28

#: Pairs checked against the log at once by :meth:`HandedPairs.settle`.
BLOCK = 1 << 16


class ReceivedPairs(Protocol):
    """What :class:`HandedPairs` asks the label log."""

    def received_pairs(self, tasks: np.ndarray, workers: np.ndarray) -> np.ndarray | None:
        """Whether each pair is among the merged labels (``None``: the log cannot say)."""

    def received_pair(self, task: int, worker: int) -> bool:
        """Whether one pair is among the merged labels."""


class HandedPairs:
    """The set of (task, worker) pairs handed out so far: ``add`` and ``has``.

    When every pair fits in one bit at most a byte a label (``n_tasks * n_workers`` bits at
    most 8 per label the market can buy: every small market), the filter is an exact bit per
    pair and nothing else is kept; otherwise it is the hashed filter in front of the recent
    set and the log.
    """

    #: ``add(task, worker)``: remember that ``worker`` holds or labelled ``task``.
    add: Callable[[int, int], None]
    #: ``has(task, worker)``: whether ``worker`` was ever handed ``task``.
    has: Callable[[int, int], bool]

    def __init__(self, n_tasks: int, n_workers: int, budget: int,
                 log: ReceivedPairs | None = None) -> None:
        self.n_workers = n_workers
        self.recent: set[int] = set()
        #: Keys added at once (:meth:`add_many`) not yet settled, sorted: no Python int each.
        self.pending = np.zeros(0, dtype=np.int64)
        self.log = log
        #: Pairs handed out before the last :meth:`settle` that the log holds: asked of it.
        self.settled = 0
        room = 8 * min(max(int(budget), 64), MAX_FILTER_BYTES)
        self.exact = n_tasks * n_workers <= room
        # exact: bit = key; hashed: a byte a label the market can buy (capped), odd so that
        # keys spread over it, and about 12 % of "never" asks the log
        self._bits = n_tasks * n_workers if self.exact else room - 1
        self._filter = bytearray((self._bits >> 3) + 1)
        self.add = self._set_bit if self.exact else self._add
        self.has = self._bit if self.exact else self._has

    def _set_bit(self, task: int, worker: int) -> None:
        key = task * self.n_workers + worker
        self._filter[key >> 3] |= 1 << (key & 7)

    def _bit(self, task: int, worker: int) -> bool:
        key = task * self.n_workers + worker
        return bool(self._filter[key >> 3] >> (key & 7) & 1)

    def _add(self, task: int, worker: int) -> None:
        key = task * self.n_workers + worker
        self.recent.add(key)
        bit = key % self._bits
        self._filter[bit >> 3] |= 1 << (bit & 7)

    def _has(self, task: int, worker: int) -> bool:
        key = task * self.n_workers + worker
        if key in self.recent:
            return True
        if self.pending.size:
            at = int(np.searchsorted(self.pending, key))
            if at < self.pending.size and self.pending[at] == key:
                return True
        bit = key % self._bits
        if not self._filter[bit >> 3] >> (bit & 7) & 1 or self.log is None or not self.settled:
            return False
        return self.log.received_pair(task, worker)

    def scan(self, order: memoryview, given: bytearray, cursor: int,
             worker: int) -> tuple[int, int]:
        """The requester's scan for one arriving worker, one call per hand-out: ``cursor``
        moved past the tasks of ``order`` already ``given`` this round, and the position of the
        first task from there not given and never handed to ``worker`` (-1: none), that pair
        added. With the exact filter the compiled scan runs (``hand_out.first_new``: this loop
        was a sixth of the main command's time in Python), else the loop below."""
        if self.exact and first_new_native is not None:
            return first_new_native(order, given, cursor, self._filter, self.n_workers, worker)
        end = len(order)
        while cursor < end and given[order[cursor]]:
            cursor += 1
        if self.exact:  # the filter's bits read and set in the loop (a call per task costs more)
            bits, m = self._filter, self.n_workers
            for pos in range(cursor, end):
                task = order[pos]
                if not given[task]:
                    key = task * m + worker
                    if not bits[key >> 3] >> (key & 7) & 1:
                        bits[key >> 3] |= 1 << (key & 7)
                        return cursor, pos
            return cursor, -1
        has = self._has
        for pos in range(cursor, end):
            task = order[pos]
            if not given[task] and not has(task, worker):
                self._add(task, worker)
                return cursor, pos
        return cursor, -1

    def add_many(self, tasks: np.ndarray, workers: np.ndarray) -> None:
        """:meth:`add` for many pairs at once (the initial graph), vectorised."""
        keys = np.asarray(tasks, dtype=np.int64) * self.n_workers
        keys += workers
        bits = keys if self.exact else keys % self._bits
        np.bitwise_or.at(np.frombuffer(self._filter, dtype=np.uint8), bits >> 3,
                         np.left_shift(1, bits & 7).astype(np.uint8))
        if not self.exact:
            self.pending = np.union1d(self.pending, keys)

    def settle(self) -> None:
        """Drop from the set the pairs the log now holds (after it merged its labels at a
        refresh); pairs still in flight stay. Vectorised over the set."""
        if self.exact or self.log is None or not (self.recent or self.pending.size):
            return
        keys = np.concatenate([self.pending, np.fromiter(self.recent, dtype=np.int64,
                                                         count=len(self.recent))])
        kept = []
        for a in range(0, keys.size, BLOCK):  # a block at a time: small temporaries
            block = keys[a:a + BLOCK]
            held = self.log.received_pairs(block // self.n_workers, block % self.n_workers)
            if held is None:  # the log keeps no incidence: the set keeps every pair
                return
            self.settled += int(held.sum())
            kept.extend(block[~held].tolist())
        self.recent = set(kept)
        self.pending = np.zeros(0, dtype=np.int64)
