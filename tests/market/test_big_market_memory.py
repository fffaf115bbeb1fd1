"""What keeps a big market small (issue #30) changes no number: the incidence matrix's shared
values, the world's compact initial triples and big arrays in their own mappings give the same
curves as before."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.aggregation._ones import NATIVE
from marketsim.market import log_incidence
from marketsim.market.heap import map_big_arrays
from marketsim.market.inference import estimator_factory
from marketsim.market.market import Market
from marketsim.market.worker_models import draw_world
from marketsim.policies.registry import make_policy
from marketsim.record.curves import CurvePoint
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario
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
    market = Market(sc, draw_world(sc, world_rng(sc.seed, 0)),
                    make_policy(arm.policy.name, dict(arm.policy.options)),
                    estimator_factory(sc, arm.inference), unit_streams(sc.seed, 0, 0),
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
    world = draw_world(sc, world_rng(sc.seed, 0))
    assert world.initial_tasks.dtype == np.int32 and world.initial_workers.dtype == np.int32
    assert world.initial_labels.dtype == np.int8
    assert world.initial_tasks.size == 300  # one-per-task: the values as drawn
    assert np.array_equal(np.sort(world.initial_tasks), np.arange(300))


def test_big_arrays_get_their_own_mappings_here() -> None:
    assert map_big_arrays()  # Linux with glibc: the CI's and this machine's
    before = _run(_scenario("uniform", "one-coin-shifted-beta"))[0]
    assert before == _run(_scenario("uniform", "one-coin-shifted-beta"))[0]
