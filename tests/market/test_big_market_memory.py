"""What keeps a big market small (issue #30) changes no number: the incidence matrix's shared
values, the world's compact initial triples, big arrays in their own mappings, the merge
without ``np.insert``'s temporaries and the initial pairs marked at once give the same curves
and answers as before."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.aggregation._ones import NATIVE
from marketsim.market import log_incidence
from marketsim.market.heap import map_big_arrays
from marketsim.market.inference import estimator_factory
from marketsim.market.label_log import LabelLog
from marketsim.market.market import Market
from marketsim.market.pairs import HandedPairs
from marketsim.market.worker_models import draw_world
from marketsim.policies.registry import make_policy
from marketsim.record.curves import CurvePoint
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario
from marketsim.study.runner import market_setup
from marketsim.study.seeds import unit_streams, world_rng


def _scenario(policy: str, method: str, classes: int = 2) -> Scenario:
    return parse_scenario({
        "scenario": {"name": "big", "seed": 3},
        "tasks": {"count": 300, "classes": classes},
        "workers": {"count": 40, "model": "one-coin" if classes == 2 else "confusion"},
        "budget": {"edges": 2400, "batch": 300},
        "arms": [{"name": "a", "policy": policy, "inference": {
            "method": method, "warm_start": True, "max_iter": 10, "tol": 1e-6}}]}, "big.toml")


def _run(sc: Scenario) -> tuple[list[CurvePoint], Market]:
    arm = sc.arms[0]
    market = Market(market_setup(sc), draw_world(sc.crowd, world_rng(sc.seed, 0)),
                    make_policy(arm.policy.name, dict(arm.policy.options)),
                    estimator_factory(sc.crowd, arm.inference), unit_streams(sc.seed, 0, 0),
                    warm_start=True, keep_graph=False)
    return market.run(), market


@pytest.mark.skipif(not NATIVE, reason="the C extension ones_products is not built")
@pytest.mark.parametrize(("policy", "method", "classes"), [
    ("uniform", "one-coin-shifted-beta", 2), ("entropy-greedy", "one-coin-shifted-beta", 2),
    ("entropy-greedy", "ds", 3), ("uniform", "glad", 2)])
def test_shared_values_give_the_same_curve(policy: str, method: str, classes: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    sc = _scenario(policy, method, classes)
    monkeypatch.setattr(log_incidence, "SHARED_ONES_FROM", 1 << 62)
    plain, small = _run(sc)
    monkeypatch.setattr(log_incidence, "SHARED_ONES_FROM", 0)
    shared, big = _run(sc)
    assert small.log.incidence().data.strides == (8,)
    assert big.log.incidence().data.strides == (0,)  # no values array
    assert shared == plain
    assert [p.error_rate for p in shared] == [p.error_rate for p in plain]


def test_the_world_holds_its_initial_graph_in_compact_types() -> None:
    sc = _scenario("uniform", "one-coin-shifted-beta")
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    assert world.initial_tasks.dtype == np.int32 and world.initial_workers.dtype == np.int32
    assert world.initial_labels.dtype == np.int8
    assert world.initial_tasks.size == 300  # one-per-task: the values as drawn
    assert np.array_equal(np.sort(world.initial_tasks), np.arange(300))


def test_big_arrays_get_their_own_mappings_here() -> None:
    assert map_big_arrays()  # Linux with glibc: the CI's and this machine's
    before = _run(_scenario("uniform", "one-coin-shifted-beta"))[0]
    assert before == _run(_scenario("uniform", "one-coin-shifted-beta"))[0]


@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
def test_the_merge_inserts_as_np_insert_does(chunk: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_incidence, "INSERT_CHUNK", chunk)
    rng = np.random.default_rng(8)
    for _ in range(200):
        n, k = int(rng.integers(0, 40)), int(rng.integers(0, 25))
        arr = rng.integers(0, 99, n).astype(np.int32)
        pos = np.sort(rng.integers(0, n + 1, k))  # ties: new values keep their order
        values = rng.integers(0, 99, k).astype(np.int32)
        merged = log_incidence.insert_sorted(arr, pos, values)
        assert merged.dtype == np.int32
        assert np.array_equal(merged, np.insert(arr, pos, values))


@pytest.mark.parametrize("exact", [True, False])
def test_pairs_added_at_once_answer_as_pairs_added_one_by_one(exact: bool) -> None:
    rng = np.random.default_rng(9)
    n, m = 60, 30
    budget = n * m if exact else 10  # a small budget: the hashed filter and the sorted keys
    tasks, workers = rng.integers(0, n, 200), rng.integers(0, m, 200)
    one, many = HandedPairs(n, m, budget), HandedPairs(n, m, budget)
    assert one.exact is exact
    for i, j in zip(tasks.tolist(), workers.tolist(), strict=True):
        one.add(i, j)
    many.add_many(tasks.astype(np.int32), workers.astype(np.int32))
    assert bytes(one._filter) == bytes(many._filter)
    for i in range(n):
        for j in range(m):
            assert one.has(i, j) == many.has(i, j)


def test_the_initial_pairs_settle_into_the_log() -> None:
    log = LabelLog(50, 40, 2, 20)
    pairs = HandedPairs(50, 40, 20, log)
    assert not pairs.exact
    tasks, workers = np.arange(10), np.arange(10) * 3
    pairs.add_many(tasks, workers)
    log.extend(tasks, workers, np.zeros(10, dtype=np.int64))
    log.incidence()  # the refresh's merge
    pairs.settle()
    assert pairs.pending.size == 0 and not pairs.recent and pairs.settled == 10
    assert all(pairs.has(i, 3 * i) for i in range(10)) and not pairs.has(1, 4)
