"""The block engine's requester (:mod:`marketsim.market.block_requester`): its walk, in C and
in Python, hands out exactly what the event engine's :class:`~marketsim.market.requester.
Requester` hands out to the same arrivals from the same rankings (distinct tasks per round,
never a task twice to a worker, refusals), in both kinds of pair filter."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.market import block_requester
from marketsim.market.block_requester import BlockRequester
from marketsim.market.label_log import LabelLog
from marketsim.market.requester import Requester

NATIVE = [False] + ([True] if block_requester.walk_native is not None else [])


def _both(n: int, m: int, budget: int, native: bool, seed: int, rounds: int,
          arrivals: int, even: bool = False) -> tuple[list[int], list[int], LabelLog]:
    """Tasks the Requester and the BlockRequester hand to the same arrivals (-1: refused;
    ``even``: even rounds, the Requester's round ended as the market ends it, when every
    worker was refused since the last hand-out)."""
    rng = np.random.default_rng(seed)
    log_a, log_b = LabelLog(n, m, 2, budget), LabelLog(n, m, 2, budget)
    req = Requester(n, m, budget, log_a, even_rounds=even)
    blocks = BlockRequester(n, m, 2, budget, arrivals, log_b.incidence, native=native,
                            even_rounds=even)
    initial_t, initial_w = np.arange(n), np.arange(n) % m
    for i, j in zip(initial_t.tolist(), initial_w.tolist(), strict=True):
        req.mark(i, j)
    blocks.mark(initial_t, initial_w)
    zeros = np.zeros(n, dtype=np.int64)
    for log in (log_a, log_b):
        log.extend(initial_t, initial_w, zeros)
    got_a: list[int] = []
    got_b: list[int] = []
    for _ in range(rounds):
        for log in (log_a, log_b):
            log.labels()  # the refresh merges the log
        ranking = rng.permutation(n)
        req.new_round(ranking)
        blocks.new_round(ranking)
        who = rng.integers(m, size=arrivals)
        a, refused = [], set()
        for w in who.tolist():
            task = req.assign(w)
            a.append(-1 if task is None else task)
            refused = set() if task is not None else refused | {w}
            if len(refused) == m and req.end_round():
                refused = set()
        b, used, stuck = blocks.assign(who, arrivals)
        got_a += a[:used]
        got_b += b.tolist()
        if stuck:  # every worker refused since the last hand-out: the Requester refuses too
            assert b[-1] == -1 and all(t == -1 for t in a[used:])
            break
        assert used == arrivals
        for log, tasks in ((log_a, np.asarray(a)), (log_b, b)):
            ok = tasks >= 0
            log.extend(tasks[ok], who[ok], np.zeros(int(ok.sum()), dtype=np.int64))
    return got_a, got_b, log_b


@pytest.mark.parametrize("even", [False, True])
@pytest.mark.parametrize("native", NATIVE)
@pytest.mark.parametrize(("budget", "exact"), [(100_000, True), (64, False)])
def test_block_walk_hands_out_what_the_requester_hands_out(native: bool, budget: int,
                                                           exact: bool, even: bool) -> None:
    """30 tasks, 20 workers, rounds of 25 arrivals (the ranking wraps within a round) until
    workers have labelled every task and are refused: the same task for every arrival, with
    and without even rounds."""
    n, m = 30, 20
    assert BlockRequester(n, m, 2, budget, 25, lambda: None).exact is exact
    a, b, log = _both(n, m, budget, native, seed=5, rounds=30, arrivals=25, even=even)
    assert a == b
    assert a.count(-1) > 0  # some workers had labelled every task
    tasks, workers, _ = log.arrays()
    keys = tasks.astype(np.int64) * m + workers
    assert np.unique(keys).size == keys.size  # never a task twice to a worker


@pytest.mark.parametrize("native", NATIVE)
def test_each_pass_over_the_ranking_hands_out_distinct_tasks(native: bool) -> None:
    n, m = 50, 1000
    blocks = BlockRequester(n, m, 2, 64, 200, LabelLog(n, m, 2, 64).incidence, native=native)
    ranking = np.random.default_rng(1).permutation(n)
    blocks.new_round(ranking)
    tasks, _, _ = blocks.assign(np.arange(120), 120)  # 120 distinct workers: 2.4 passes
    assert tasks[:50].tolist() == ranking.tolist()
    assert tasks[50:100].tolist() == ranking.tolist()
    assert tasks[100:].tolist() == ranking[:20].tolist()


@pytest.mark.parametrize("native", NATIVE)
def test_a_market_where_every_worker_labelled_every_task_is_stuck(native: bool) -> None:
    n, m = 3, 2
    blocks = BlockRequester(n, m, 2, 100, 10, LabelLog(n, m, 2, 100).incidence, native=native)
    blocks.new_round(np.arange(n))
    tasks, used, stuck = blocks.assign(np.array([0, 1, 0, 1, 0, 1, 0, 0, 1, 0]), 10)
    assert sorted(tasks[:6].tolist()) == [0, 0, 1, 1, 2, 2]
    assert stuck and used == 9  # worker 0 refused twice counts once; then worker 1
    assert tasks[6:].tolist() == [-1, -1, -1]


def test_need_stops_the_walk() -> None:
    blocks = BlockRequester(10, 10, 2, 100, 10, lambda: None)
    blocks.new_round(np.arange(10))
    tasks, used, _ = blocks.assign(np.arange(10), 4)
    assert used == 4 and tasks.tolist() == [0, 1, 2, 3]
