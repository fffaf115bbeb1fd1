"""Uniform's even rounds (the fact ``even_rounds``): every task gets its share of the labels
within one, whatever the sizes, the batch and how unevenly the workers arrive, in both engines;
a worker who labelled every task left in the round gets nothing rather than starting the next
round early; and a round that no one left can finish ends rather than sticking the market."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from marketsim.market.block_market import BlockMarket
from marketsim.market.inference import estimator_factory
from marketsim.market.label_log import LabelLog
from marketsim.market.market import Market
from marketsim.market.requester import Requester
from marketsim.market.worker_models import draw_world
from marketsim.policies.registry import POLICIES, make_policy
from marketsim.scenario.parser import parse_scenario
from marketsim.study.seeds import initial_graph_rng, unit_streams, world_rng


def _labels_per_task(n_tasks: int, n_workers: int, budget: int, batch: int, seed: int,
                     engine: str = "events", policy: str = "uniform",
                     weights: list[float] | None = None) -> np.ndarray:
    """Each task's labels at the end of one run (one label per task first)."""
    workers: dict[str, Any] = {"count": n_workers}
    if weights is not None:
        workers["arrivals"] = {"weights": weights}
    doc = {"scenario": {"seed": seed, "engine": engine},
           "tasks": {"count": n_tasks, "prior": [0.6, 0.4]}, "workers": workers,
           "budget": {"edges": budget, "batch": batch, "initial": "one-per-task"},
           "output": {"graph": False},
           "arms": [{"name": "a", "policy": policy, "inference": "mv",
                     "initial": "one-per-task"}]}
    sc = parse_scenario(doc, "uniform.toml")
    arm = sc.arms[0]
    world = draw_world(sc, world_rng(sc.seed, 0), arm.initial_graph(sc.budget),
                       initial_graph_rng(sc.seed, 0, "one-per-task"))
    cls = BlockMarket if engine == "blocks" else Market
    market = cls(sc, world, make_policy(policy, {}), estimator_factory(sc, arm.inference),
                 unit_streams(sc.seed, 0, 0), keep_graph=False)
    market.run()
    tasks, workers_, _ = market.log.arrays()
    keys = tasks.astype(np.int64) * n_workers + workers_
    assert np.unique(keys).size == keys.size  # never a task twice to a worker
    return np.bincount(tasks, minlength=n_tasks)


def _skewed(n_workers: int, rng: np.random.Generator) -> list[float]:
    """Arrival weights where a few workers bring most labels (as in real crowds)."""
    w = rng.pareto(0.8, n_workers) + 0.01
    return (w / w.sum()).tolist()


def test_uniform_declares_even_rounds_and_other_ranking_policies_do_not() -> None:
    assert POLICIES["uniform"].even_rounds
    assert not POLICIES["entropy-greedy"].even_rounds


@pytest.mark.parametrize("engine", ["events", "blocks"])
def test_every_task_gets_its_share_within_one(engine: str) -> None:
    """A seeded sweep over sizes, budgets, batches (smaller and larger than the tasks) and
    skewed arrivals: the labels per task never differ by more than one."""
    rng = np.random.default_rng(17)
    for case in range(8):
        n = int(rng.integers(5, 40))
        m = int(rng.integers(4, 16))
        budget = n + int(rng.integers(1, n * (m - 2)))
        batch = int(rng.integers(1, 2 * n))
        counts = _labels_per_task(n, m, budget, batch, seed=case, engine=engine,
                                  weights=_skewed(m, rng))
        assert counts.sum() == budget
        assert counts.max() - counts.min() <= 1, (case, n, m, budget, batch, counts)


def test_the_old_restart_gave_some_tasks_far_more_than_their_share() -> None:
    """What the even rounds fix: entropy-greedy's rounds (no even_rounds) restart for a worker
    who labelled every task left, so a few heavy workers pile labels on some tasks."""
    rng = np.random.default_rng(3)
    counts = _labels_per_task(40, 12, 300, 40, seed=1, policy="entropy-greedy",
                              weights=_skewed(12, rng))
    assert counts.max() - counts.min() > 1
    even = _labels_per_task(40, 12, 300, 40, seed=1, weights=_skewed(12, rng))
    assert even.max() - even.min() <= 1


def test_a_worker_who_labelled_every_task_left_gets_nothing_until_the_round_ends() -> None:
    n, m = 4, 3
    req = Requester(n, m, 100, LabelLog(n, m, 2, 100), even_rounds=True)
    req.new_round(np.arange(n))
    assert [req.assign(0) for _ in range(3)] == [0, 1, 2]
    assert req.assign(0) == 3
    assert req.assign(0) is None  # every task labelled by worker 0: nothing, not a new pass
    assert req.assign(1) == 0  # the round was over: a new pass for worker 1
    assert req.assign(0) is None
    req.new_round(np.array([3, 2, 1, 0]))  # a refresh continues the round: 0 is done
    assert [req.assign(1) for _ in range(3)] == [3, 2, 1]
    assert req.assign(1) is None


def test_a_round_no_one_can_finish_ends_and_the_next_pass_starts() -> None:
    n, m = 3, 2
    req = Requester(n, m, 100, LabelLog(n, m, 2, 100), even_rounds=True)
    req.mark_many(np.array([2, 2]), np.array([0, 1]))  # both workers labelled task 2 already
    req.new_round(np.arange(n))
    assert not req.end_round()  # a fresh pass is not ended: the market would be stuck
    assert [req.assign(0), req.assign(1)] == [0, 1]
    # task 2 is left in this round and both workers have labelled it: no one can go on
    assert req.assign(0) is None and req.assign(1) is None
    assert req.end_round()
    assert [req.assign(0), req.assign(1)] == [1, 0]  # the next pass
