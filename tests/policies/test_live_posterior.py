"""The live posterior of worker-aware policies (issue #30, point 5): the refresh's posterior
times the likelihood of each label received since, and explore-exploit's ``live`` option."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from marketsim.data.labels import LabelSet
from marketsim.policies.base import MarketState
from marketsim.policies.live_posterior import LivePosterior
from marketsim.policies.simple import posterior_entropy
from marketsim.policies.worker_aware import (
    GainMemo,
    expected_accuracy_gain,
    one_coin_matrices,
)
from tests.policies.test_worker_aware import bound, info_of, small_market, stats


def refresh_state(proba: np.ndarray, skill: np.ndarray, received: tuple[list, list, list],
                  n_seen: int) -> MarketState:
    """A refresh that saw the first ``n_seen`` of ``received`` labels."""
    tasks, workers, labels = (np.asarray(a, dtype=np.int64) for a in received)
    n, m, k = proba.shape[0], skill.shape[0], proba.shape[1]
    seen = LabelSet.from_arrays(tasks[:n_seen], workers[:n_seen], labels[:n_seen],
                                n_tasks=n, n_workers=m, n_classes=k)
    votes = np.zeros((n, k), dtype=np.int64)
    np.add.at(votes, (tasks, labels), 1)
    return MarketState(seen, proba, skill, n_seen, 100, workers=stats(m),
                       held=np.zeros(n, bool), handed_since_refresh=np.zeros(n, int),
                       task_votes=votes, task_handed=votes.sum(axis=1),
                       received=(tasks, workers, labels))


def test_live_posterior_is_the_bayes_update_with_the_refresh_workers() -> None:
    proba = np.array([[0.75, 0.25], [0.5, 0.5], [0.9, 0.1]])
    skill = np.array([0.9, 0.6])
    # Two labels before the refresh (already in proba), then task 1 gets "1" from worker 0 and
    # "0" from worker 1, task 2 gets "1" from worker 0.
    received = ([0, 2, 1, 1, 2], [1, 0, 0, 1, 0], [0, 0, 1, 0, 1])
    live = LivePosterior()
    state = refresh_state(proba, skill, received, n_seen=2)
    got, changed = live.update(state)
    assert changed is None  # a refresh: every row may be new
    odds1 = (0.5 * 0.1 * 0.6) / (0.5 * 0.9 * 0.4)  # class 0 against class 1 for task 1
    odds2 = (0.9 * 0.1) / (0.1 * 0.9)
    np.testing.assert_allclose(got[0], proba[0])
    np.testing.assert_allclose(got[1, 0], odds1 / (1 + odds1))
    np.testing.assert_allclose(got[2, 0], odds2 / (1 + odds2))
    # Nothing new: nothing changes; one more label for task 0: only task 0 changes.
    assert live.update(state)[1].size == 0
    more = tuple(list(a) + [b] for a, b in zip(received, (0, 0, 1), strict=True))
    state = replace(state, received=tuple(np.asarray(a) for a in more))
    got, changed = live.update(state)
    assert changed.tolist() == [0]
    odds0 = (0.75 * 0.1) / (0.25 * 0.9)
    np.testing.assert_allclose(got[0, 0], odds0 / (1 + odds0))


def test_gain_memo_rows_changed_equals_computing_afresh() -> None:
    rng = np.random.default_rng(5)
    proba = rng.dirichlet([1.0, 1.0, 1.0], size=30)
    conf = one_coin_matrices(np.array([0.9, 0.6]), 3)
    memo = GainMemo()
    for c in conf:
        memo.get(proba, c)
    touched = np.array([3, 7, 29])
    proba[touched] = rng.dirichlet([1.0, 1.0, 1.0], size=3)
    memo.rows_changed(proba, touched)
    for c in conf:
        gain, entropy = memo.get(proba, c)
        np.testing.assert_allclose(gain, expected_accuracy_gain(proba, c), atol=1e-15)
        np.testing.assert_allclose(entropy, posterior_entropy(proba), atol=1e-15)


def test_live_explore_exploit_asks_again_where_a_new_answer_disagreed() -> None:
    """Task 0 looked settled at the refresh; a good worker's "1" since makes it the most
    doubtful task. The stale policy does not know; the live one sends the next worker there."""
    proba = np.array([[0.97, 0.03], [0.8, 0.2], [0.85, 0.15]])
    skill = np.array([0.95, 0.95])
    received = ([0, 1, 2, 0], [1, 1, 1, 1], [0, 0, 0, 1])
    state = refresh_state(proba, skill, received, n_seen=3)
    info = info_of(3, 2)
    stale = bound("explore-exploit", info, explore=0, threshold=0.0)
    live = bound("explore-exploit", info, explore=0, threshold=0.0, live=True)
    assert stale.assign(0, state, np.random.default_rng(0)) == 1
    assert live.assign(0, state, np.random.default_rng(0)) == 0


def test_live_explore_exploit_never_hands_a_task_whose_label_is_in_flight() -> None:
    proba = np.array([[0.5, 0.5], [0.9, 0.1]])
    state = refresh_state(proba, np.array([0.9, 0.9]), ([0, 1], [0, 0], [0, 0]), n_seen=2)
    state = replace(state, task_handed=np.array([2, 1]))  # task 0: one label still out
    live = bound("explore-exploit", info_of(2, 2), explore=0, threshold=0.0, live=True)
    assert live.assign(1, state, np.random.default_rng(0)) == 1


def test_live_explore_exploit_spends_a_market_budget_while_answers_take_time() -> None:
    """With service times, labels are in flight when workers arrive: the live policy waits for
    them instead of asking twice, and the market still spends its budget."""
    market, _, curve = small_market("explore-exploit", {"explore": 0, "live": True},
                                    {"workers": {"count": 6, "service": {"mean": 3.0}, "ability": {
                                        "distribution": "shifted-beta", "alpha": 6, "beta": 2,
                                        "low": 0.1}}})
    assert curve[-1].edges == 160
    assert curve[-1].error_rate <= curve[0].error_rate
