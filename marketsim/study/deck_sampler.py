"""The design sampler's other workers under arrivals from a deck (``[workers.arrivals] order =
"deck"``): how many labels each worker gives, then which tasks they go to.

The market deals arrivals as cards of a shuffled deck holding worker j ``counts[j]`` times
(:class:`~marketsim.market.arrivals.Deck`), less the initial graph's cards. The sampler draws
each worker's total among ``total`` more labels as the market's cards would fall: the rest of
the first deck's cards by a multivariate hypergeometric draw, whole fresh decks for every
deck's worth beyond it (:func:`deck_totals`). It then deals those labels to the tasks' open
slots as a random bipartite graph with these degrees, no worker twice on a task and never a
task's initial worker again (:func:`deal_slots`): the few busy workers one by one on distinct
tasks by the slots left, then the others' cards shuffled onto the rest (a configuration
model) whose few clashes are repaired by random swaps, every round vectorised. What it
leaves out: the market's frontier (a worker's labels spread over the tasks open when they
arrive) and a card the market loses to a worker who has labelled every open task.
"""

from __future__ import annotations

import numpy as np

#: Rounds of swap repairs at most; each round repairs a good share of the clashes left (a
#: clash swaps with a random slot, accepted unless it makes a clash of its own), so the few
#: clashes of a sparse crowd are gone in a handful. A clash still left after them (a worker
#: whose count fills nearly every task) is dropped: its task gets one label fewer.
REPAIR_ROUNDS = 64
#: A worker is busy when their labels exceed the open tasks over this: dealt one by one to
#: distinct tasks (:func:`deal_busy`); the cards of the others, shuffled onto the slots,
#: rarely clash (3 of 900 on the tests' sparse crowd, gone in one round of swaps). There are
#: at most ``BUSY`` times the mean labels per task busy workers, so their loop stays short
#: whatever the crowd's size.
BUSY = 8
#: (task, worker) pairs up to which :class:`HeldPairs` counts the pairs held (an int64 per
#: pair, 64 MiB at most) rather than sorting the slots: the 1,000,000-label file has 5.6
#: million (51,000 tasks, 110 workers).
DENSE_PAIRS = 1 << 23
#: Random partner slots tried per clash and round (the first that fits is swapped): a clash
#: of a worker on most tasks finds a task without them in one try out of a few dozen.
TRIES = 16


def deck_totals(counts: np.ndarray, dealt: np.ndarray, total: int,
                rng: np.random.Generator) -> np.ndarray:
    """Each worker's labels among the next ``total`` cards: the first deck is ``counts``
    less the ``dealt`` initial cards, then whole decks of ``counts`` (the market's
    reshuffles), the last one partly: multivariate hypergeometric draws."""
    first = np.maximum(counts - dealt, 0)
    left = int(first.sum())
    if total <= left:
        return rng.multivariate_hypergeometric(first, total)
    whole, rest = divmod(total - left, int(counts.sum()))
    out = first + whole * counts
    return out + rng.multivariate_hypergeometric(counts, rest) if rest else out


def capped(totals: np.ndarray, room: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``totals`` with no worker above ``room`` (the tasks they may still label): a capped
    worker's surplus goes to workers with room, chosen by their totals (uniformly if none)."""
    out = np.minimum(totals, room)
    short = int(totals.sum() - out.sum())
    while short > 0 and (out < room).any():  # a few rounds, not the workers
        free = np.flatnonzero(out < room)
        share = totals[free].astype(np.float64) + 1e-9
        add = rng.choice(free, size=min(short, free.size), replace=False,
                         p=share / share.sum())
        out[add] += 1
        short -= add.size
    return out


class HeldPairs:
    """The (task, worker) pairs the slots hold, keyed ``task * m + worker``: as counts per
    pair where the pairs are at most :data:`DENSE_PAIRS` (``n_tasks`` given), else as the
    sorted keys. The counts are kept as the repairs move workers; sorting every slot cost a
    repair round of the 1,000,000-label file (973,250 slots) 0.15 s, most of its sampler's
    time."""

    def __init__(self, tasks: np.ndarray, workers: np.ndarray, m: int,
                 n_tasks: int | None) -> None:
        self.m = m
        self.keys = tasks * m + workers
        dense = n_tasks is not None and n_tasks * m <= DENSE_PAIRS
        self.counts = (np.bincount(self.keys, minlength=(n_tasks or 0) * m) if dense
                       else None)
        self.sorted = None if dense else np.sort(self.keys)

    def move(self, slots: np.ndarray, tasks: np.ndarray, workers: np.ndarray) -> None:
        """Take in new workers at ``slots`` (distinct pairs before and after, as one round's
        swaps on distinct tasks make them, so the counts move by one each)."""
        old, new = self.keys[slots], tasks[slots] * self.m + workers[slots]
        self.keys[slots] = new
        if self.counts is not None:
            self.counts[old] -= 1
            self.counts[new] += 1
        else:
            self.sorted = np.sort(self.keys)

    def holds(self, keys: np.ndarray) -> np.ndarray:
        """Which pair ``keys`` some slot holds."""
        if self.counts is not None:
            return np.asarray(self.counts[keys] > 0)
        assert self.sorted is not None
        if self.sorted.size == 0:
            return np.zeros(keys.shape, dtype=bool)
        at = np.minimum(np.searchsorted(self.sorted, keys), self.sorted.size - 1)
        return np.asarray(self.sorted[at] == keys)

    def clashes(self, tasks: np.ndarray, workers: np.ndarray, first: np.ndarray) -> np.ndarray:
        """The slots whose worker is the task's initial worker or already on the task at an
        earlier slot (only the slots of a pair held twice are sorted, where counts are kept)."""
        key = self.keys
        shared = (np.flatnonzero(self.counts[key] > 1) if self.counts is not None
                  else np.arange(key.size))
        dup = np.zeros(key.size, dtype=bool)
        if shared.size > 1:
            sub = key[shared]
            order = np.argsort(sub, kind="stable")
            dup[shared[order[1:]]] = sub[order][1:] == sub[order][:-1]
        return dup | (workers == first[tasks])


def deal_slots(more: np.ndarray, totals: np.ndarray, first: np.ndarray,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(tasks, workers)``: task i ``more[i]`` slots (fewer where a clash outlived the
    repairs or the workers' totals fall short of the slots), worker j ``totals[j]`` of them,
    no pair twice and no task's initial worker (``first[i]``, -1 for none), in task order.

    The busy workers first (:func:`deal_busy`), then every card still in hand (the others',
    and a busy worker's that found no open task of their own: the last of a crowd of busy
    workers can find the slots left bunched on fewer tasks than their cards) shuffled onto
    the slots left, and every clash repaired by swaps with any slot (:func:`repaired`)."""
    left = more.copy()
    busy = np.flatnonzero(totals > max(int((more > 0).sum()), 1) / BUSY)
    busy_tasks, busy_workers = deal_busy(left, totals, busy, first, rng)
    rest = totals - np.bincount(busy_workers, minlength=totals.size)
    tasks = np.repeat(np.arange(left.size, dtype=np.int64), left)
    workers = rng.permutation(np.repeat(np.arange(totals.size, dtype=np.int64), rest))
    if workers.size < tasks.size:  # fewer cards than slots: random slots stay empty
        tasks = np.sort(rng.permutation(tasks)[:workers.size])
    tasks, workers = repaired(np.concatenate([busy_tasks, tasks]),
                              np.concatenate([busy_workers, workers]), first, left.size,
                              totals.size, rng)
    order = np.argsort(tasks * totals.size + workers)  # (task, worker): distinct pairs
    return tasks[order], workers[order]


def deal_busy(left: np.ndarray, totals: np.ndarray, busy: np.ndarray, first: np.ndarray,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The busy workers' labels, most labels first, each on distinct tasks (never their own
    initial task) drawn with chance by the task's slots ``left`` (Gumbel keys on log slots),
    which it updates; a worker with more labels than open tasks places what fits. A loop over
    the busy workers only: fewer than ``BUSY`` times the labels per task, whatever the
    crowd's size."""
    tasks_out, workers_out = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for j in busy[np.argsort(-totals[busy], kind="stable")].tolist():
        open_ = np.flatnonzero((left > 0) & (first != j))
        take = min(int(totals[j]), open_.size)
        if take == 0:
            continue
        keys = np.log(left[open_]) - np.log(-np.log(rng.random(open_.size)))
        pick = open_[np.argpartition(-keys, take - 1)[:take]] if take < open_.size else open_
        left[pick] -= 1
        tasks_out.append(pick.astype(np.int64))
        workers_out.append(np.full(take, j, dtype=np.int64))
    return np.concatenate(tasks_out), np.concatenate(workers_out)


def repaired(tasks: np.ndarray, workers: np.ndarray, first: np.ndarray, n_tasks: int,
             m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The slots ``(tasks, workers)`` with their clashes (a pair twice, a task's initial
    worker) repaired by swaps: a clash tries ``TRIES`` random partner slots and swaps with
    the first that fits; the swaps of one round touch distinct tasks (one clash per task
    tries a round). A clash left after
    :data:`REPAIR_ROUNDS` rounds is dropped."""
    workers = workers.copy()
    held = HeldPairs(tasks, workers, m, n_tasks)
    for _ in range(REPAIR_ROUNDS):
        bad = np.flatnonzero(held.clashes(tasks, workers, first))
        if bad.size == 0:
            break
        # one clash per task a round: two on one task would each block the other's swap
        bad = bad[np.unique(tasks[bad], return_index=True)[1]]
        tries = rng.integers(tasks.size, size=(bad.size, TRIES))
        ta, wa = tasks[bad][:, None], workers[bad][:, None]
        tb, wb = tasks[tries], workers[tries]
        fits = ((ta != tb) & (wa != wb) & (wa != first[tb]) & (wb != first[ta])
                & ~held.holds(tb * m + wa) & ~held.holds(ta * m + wb))
        pick = fits.argmax(axis=1)  # the first swap that fits (none: ok is False)
        rows = np.arange(bad.size)
        partner, ok = tries[rows, pick], fits[rows, pick]
        ta, tb, wa, wb = ta[:, 0], tb[rows, pick], wa[:, 0], wb[rows, pick]
        touched = np.bincount(np.concatenate([ta[ok], tb[ok]]), minlength=n_tasks)
        ok &= (touched[ta] == 1) & (touched[tb] == 1)
        workers[bad[ok]], workers[partner[ok]] = wb[ok], wa[ok]
        held.move(np.concatenate([bad[ok], partner[ok]]), tasks, workers)
    keep = ~held.clashes(tasks, workers, first)
    return tasks[keep], workers[keep]


def deck_others(more: np.ndarray, first: np.ndarray, counts: np.ndarray, dealt: np.ndarray,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The other workers of each task (``more[i]`` of task ``i``) under arrivals from a deck of
    ``counts`` whose ``dealt`` cards went to the initial graph (``first[i]``: task ``i``'s
    initial worker, -1 for none): totals by :func:`deck_totals`, each capped at the tasks the
    worker may label, dealt by :func:`deal_slots`."""
    totals = deck_totals(counts, dealt, int(more.sum()), rng)
    open_ = more > 0
    room = open_.sum() - np.bincount(first[open_ & (first >= 0)], minlength=counts.size)
    return deal_slots(more, capped(totals, room, rng), first, rng)
