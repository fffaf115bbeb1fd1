"""The known-workers teaching bound (issue #30, point 5): given the workers' true confusion
matrices but never the tasks' true classes; declines below its cut and picks the most uncertain
task under the exact posterior of every label received."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from marketsim.errors import InputError
from marketsim.market.inference import estimator_factory
from marketsim.market.policy_guard import market_info
from marketsim.market.worker_models import draw_world
from marketsim.policies.registry import make_policy
from marketsim.policies.worker_aware import one_coin_matrices
from marketsim.scenario.parser import parse_scenario
from marketsim.study.runner import market_setup
from marketsim.study.seeds import world_rng
from tests.policies.test_live_posterior import refresh_state
from tests.policies.test_worker_aware import bound, check, info_of, small_market

#: Worker 0 is poor (0.6), workers 1 and 2 good (0.95, 0.9).
TRUE_CONF = one_coin_matrices(np.array([0.6, 0.95, 0.9]), 2)


def test_known_workers_gets_the_worker_matrices_but_not_the_truth() -> None:
    sc = parse_scenario({
        "scenario": {"seed": 3, "replicates": 1},
        "tasks": {"count": 20, "classes": 2, "prior": [0.75, 0.25]},
        "workers": {"count": 4},
        "budget": {"edges": 60, "batch": 10, "initial": "one-per-task"},
        "arms": [{"name": "a", "policy": "known-workers", "inference": "one-coin"}],
    }, "kw.toml")
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    policy = make_policy("known-workers", {})
    info = market_info(market_setup(sc), world, policy,
                       estimator_factory(sc.crowd, sc.arms[0].inference))
    assert info.truth is None
    assert info.true_confusion is not None
    np.testing.assert_array_equal(info.true_confusion, world.confusion)
    # A realisable policy gets neither.
    plain = market_info(market_setup(sc), world, make_policy("qasca", {}),
                        estimator_factory(sc.crowd, sc.arms[0].inference))
    assert plain.truth is None and plain.true_confusion is None


def test_known_workers_declines_below_the_cut_and_picks_the_exact_posterior_s_doubt() -> None:
    policy = bound("known-workers", info_of(4, 3, true_confusion=TRUE_CONF), ability_cut=0.85)
    # Labels received: task 0 "0" from the good worker 1; task 1 "0" from the poor worker 0;
    # task 2 "1" from worker 1 and "0" from worker 2; task 3 "1" from worker 2. The state's own
    # (stale, flat) posterior says nothing; the policy must use the true matrices.
    received = ([0, 1, 2, 2, 3], [1, 0, 1, 2, 2], [0, 0, 1, 0, 1])
    state = refresh_state(np.full((4, 2), 0.5), np.full(3, 0.5), received, n_seen=0)
    rng = np.random.default_rng(0)
    assert policy.assign(0, state, rng) is None  # true accuracy 0.6 < 0.85
    # P(class 1) with prior .25: task 0 .017, task 1 .18, task 2 .65, task 3 .75: task 2's
    # posterior is the nearest to even.
    assert policy.assign(1, state, rng) == 2
    # Task 2 held by the worker: next is task 3; with a label in flight on task 3 too: task 1.
    held = np.array([False, False, True, False])
    assert policy.assign(2, replace(state, held=held), rng) == 3
    handed = state.task_handed.copy()
    handed[3] += 1
    assert policy.assign(2, replace(state, held=held, task_handed=handed), rng) == 1


def test_known_workers_posterior_follows_new_labels() -> None:
    policy = bound("known-workers", info_of(2, 3, true_confusion=TRUE_CONF))
    received = ([0, 1], [1, 1], [0, 1])
    state = refresh_state(np.full((2, 2), 0.5), np.full(3, 0.5), received, n_seen=0)
    rng = np.random.default_rng(0)
    assert policy.assign(2, state, rng) == 1  # task 1: .86 for class 1, task 0: .017
    # Worker 2 says "0" and worker 1 (already there) too: class 1 falls to .036, still above
    # task 0's .017; one more "0" from worker 2 takes it to .004, and task 0 is the doubtful one.
    more = (received[0] + [1, 1], received[1] + [2, 1], received[2] + [0, 0])
    state = refresh_state(np.full((2, 2), 0.5), np.full(3, 0.5), more, n_seen=0)
    odds = 0.25 * 0.95 * 0.1 * 0.05 / (0.75 * 0.05 * 0.9 * 0.95)  # class 1 against class 0
    assert policy.posterior(state)[1, 1] == pytest.approx(odds / (1 + odds))
    assert policy.assign(2, state, rng) == 1
    most = tuple(a + [b] for a, b in zip(more, (1, 2, 0), strict=True))
    state = refresh_state(np.full((2, 2), 0.5), np.full(3, 0.5), most, n_seen=0)
    assert policy.posterior(state)[1, 1] == pytest.approx(odds * 0.1 / 0.9 / (1 + odds * 0.1 / 0.9))
    assert policy.assign(2, state, rng) == 0


def test_known_workers_needs_the_worker_matrices_and_checks_its_cut() -> None:
    with pytest.raises(ValueError, match="true confusion"):
        bound("known-workers", info_of(4, 3))
    with pytest.raises(InputError, match="ability_cut"):
        check("known-workers", {"ability_cut": 1.5})


def test_known_workers_in_a_market_spends_the_budget_on_good_workers_first() -> None:
    market, world, curve = small_market("known-workers", {"ability_cut": 0.8}, {})
    assert curve[-1].edges == 160 and curve[-1].error_rate < curve[0].error_rate
    labels = market.workforce.stats().labels - np.bincount(world.initial_workers, minlength=6)
    poor = world.ability < 0.8
    assert poor.any() and (~poor).any()
    # Poor workers label only once every worker above the cut has labelled every task.
    assert labels[poor].sum() == 0 or np.all(market.workforce.stats().labels[~poor] == 40)
