"""The worker-aware policies: qasca's expected-gain kernel against hand-worked cases, and what
``assign`` answers for hand-built market states (explore-exploit, oracle-workers)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import betaincinv

from marketsim.data.labels import LabelSet
from marketsim.errors import InputError
from marketsim.policies.base import GOLD, MarketInfo, MarketState, WorkerStats
from marketsim.policies.explore_exploit import (
    ACCURACY_GRID,
    grid_posterior,
    grid_quantiles,
    label_information,
    leave_one_out_evidence,
    shifted_beta_log_prior,
)
from marketsim.policies.registry import POLICIES, make_policy
from marketsim.policies.worker_aware import (
    GainMemo,
    best_gain_task,
    expected_accuracy_gain,
    one_coin_matrices,
)
from marketsim.scenario.options import check_options
from marketsim.study.runner import market_setup

#: A binary worker who is right 80 % of the time on class 0 and 70 % on class 1.
C2 = np.array([[0.8, 0.2], [0.3, 0.7]])
#: A three-class worker (rows = true class).
C3 = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])


def test_expected_gain_binary_hand_worked() -> None:
    proba = np.array([[0.6, 0.4], [0.9, 0.1], [0.5, 0.5]])
    # Task 0: P(a=0) = .6*.8 + .4*.3 = .60, posterior after a=0 is (.48, .12)/.60 -> max .8;
    #         P(a=1) = .6*.2 + .4*.7 = .40, posterior (.12, .28)/.40 -> max .7.
    #         gain = .60*.8 + .40*.7 - .6 = .48 + .28 - .6 = 0.16.
    # Task 1: joint a=0: (.72, .03), a=1: (.18, .07): .72 + .18 - .9 = 0 (no answer flips it).
    # Task 2: joint a=0: (.40, .15), a=1: (.10, .35): .40 + .35 - .5 = 0.25.
    gain = expected_accuracy_gain(proba, C2)
    np.testing.assert_allclose(gain, [0.16, 0.0, 0.25], atol=1e-12)
    assert gain[1] == 0.0  # rounding noise of an exact zero is zero, so ties are exact


def test_expected_gain_three_classes_hand_worked() -> None:
    proba = np.array([[0.5, 0.3, 0.2], [0.8, 0.1, 0.1], [1 / 3, 1 / 3, 1 / 3]])
    # Task 0: joint p_k C[k, a] rows k: (.35 .10 .05), (.03 .24 .03), (.04 .04 .12);
    #         column maxima .35 + .24 + .12 = .71; gain = .71 - .5 = 0.21.
    # Task 1: rows (.56 .16 .08), (.01 .08 .01), (.02 .02 .06): .56 + .16 + .08 - .8 = 0.
    # Task 2: rows C/3: column maxima (.7 + .8 + .6)/3 = .7; gain = .7 - 1/3 = 0.36667.
    gain = expected_accuracy_gain(proba, C3)
    np.testing.assert_allclose(gain, [0.21, 0.0, 0.7 - 1 / 3], atol=1e-12)


def test_one_coin_matrices() -> None:
    conf = one_coin_matrices(np.array([0.9, 0.4]), 3)
    np.testing.assert_allclose(conf[0], [[0.9, 0.05, 0.05], [0.05, 0.9, 0.05],
                                         [0.05, 0.05, 0.9]])
    np.testing.assert_allclose(conf.sum(axis=2), 1.0)
    assert conf[1, 2, 2] == pytest.approx(0.4) and conf[1, 2, 0] == pytest.approx(0.3)


def test_label_information() -> None:
    # Binary: 1 - H(q) in bits; H(.9) = -(.9 log2 .9 + .1 log2 .1) = .4690.
    np.testing.assert_allclose(label_information(np.array([0.5, 0.9, 1.0, 0.1]), 2),
                               [0.0, 1 - 0.4690, 1.0, 1 - 0.4690], atol=1e-4)
    # Three classes: a guesser (1/3) carries nothing.
    assert label_information(np.array([1 / 3]), 3)[0] == pytest.approx(0.0, abs=1e-12)


def stats(m: int, **fields: np.ndarray) -> WorkerStats:
    base = dict(labels=np.zeros(m, int), gold_answered=np.zeros(m, int),
                gold_correct=np.zeros(m, int), blocked=np.zeros(m, bool), price=np.ones(m),
                tier=np.zeros(m, int), capacity_left=np.full(m, -1))
    return WorkerStats(**(base | fields))


def state_of(proba: np.ndarray, skill: np.ndarray, *, confusion: np.ndarray | None = None,
             counts: np.ndarray | None = None, workers: WorkerStats | None = None,
             held: np.ndarray | None = None, handed: np.ndarray | None = None) -> MarketState:
    n, m = proba.shape[0], skill.shape[0]
    labels = LabelSet.from_arrays(np.arange(n), np.arange(n) % m, np.zeros(n, int),
                                  n_tasks=n, n_workers=m, n_classes=proba.shape[1])
    return MarketState(labels, proba, skill, n, 10 * n, confusion=confusion,
                       skill_counts=counts, workers=workers or stats(m),
                       held=np.zeros(n, bool) if held is None else held,
                       handed_since_refresh=np.zeros(n, int) if handed is None else handed)


def info_of(n: int, m: int, k: int = 2, **extra: object) -> MarketInfo:
    prior = np.full(k, 1 / k) if k != 2 else np.array([0.75, 0.25])
    return MarketInfo(n, m, k, prior, 6.0, 2.0, 0.1, None, **extra)  # type: ignore[arg-type]


def bound(name: str, info: MarketInfo, **options: object):
    policy = make_policy(name, dict(options))
    policy.bind(info)
    return policy


PROBA2 = np.array([[0.6, 0.4], [0.9, 0.1], [0.5, 0.5], [0.95, 0.05]])


def test_qasca_picks_the_largest_gain_for_the_arriving_worker() -> None:
    state = state_of(PROBA2, np.array([0.8, 0.75]), confusion=np.stack([C2, C2]))
    policy = bound("qasca", info_of(4, 2))
    assert policy.assign(0, state, np.random.default_rng(0)) == 2  # gains .16, 0, .25, 0


def test_qasca_skips_held_tasks_and_tasks_handed_out_since_the_refresh() -> None:
    policy = bound("qasca", info_of(4, 2))
    conf = np.stack([C2, C2])
    held = np.array([False, False, True, False])
    state = state_of(PROBA2, np.array([0.8, 0.75]), confusion=conf, held=held)
    assert policy.assign(0, state, np.random.default_rng(0)) == 0  # 2 held: next best .16
    # Task 0 was handed out since the refresh: the stale posterior must not send it another
    # label while an untouched task is left; task 1 (gain 0, entropy .47) beats task 3.
    state = state_of(PROBA2, np.array([0.8, 0.75]), confusion=conf, held=held,
                     handed=np.array([1, 0, 0, 0]))
    assert policy.assign(0, state, np.random.default_rng(0)) == 1
    # Every task the worker may take was handed out: the least-handed one is chosen again.
    state = state_of(PROBA2, np.array([0.8, 0.75]), confusion=conf, held=held,
                     handed=np.array([1, 2, 0, 2]))
    assert policy.assign(0, state, np.random.default_rng(0)) == 0
    state = state_of(PROBA2, np.array([0.8, 0.75]), confusion=conf, held=np.ones(4, bool))
    assert policy.assign(0, state, np.random.default_rng(0)) is None


def test_qasca_without_confusion_uses_the_one_coin_matrix_of_the_skill() -> None:
    proba = np.array([[0.9, 0.1], [0.6, 0.4]])
    policy = bound("qasca", info_of(2, 2))
    # Worker 0 (skill .95): task 0 flips on a "1" (.9*.05 < .1*.95), gain
    # .9*.95 + .1*.95 - .9 = .05; task 1: .6*.95 + .4*.95 - .6 = .35 -> task 1.
    # Worker 1 (skill .55): task 0 cannot flip (gain 0); task 1: .6*.55 + max(.6*.45, .4*.55)
    # - .6 = .33 + .27 - .6 = 0 as well: tie on gain, task 1 has the larger entropy.
    state = state_of(proba, np.array([0.95, 0.55]))
    assert policy.assign(0, state, np.random.default_rng(0)) == 1
    assert policy.assign(1, state, np.random.default_rng(0)) == 1


def test_qasca_breaks_exact_ties_at_random_reproducibly() -> None:
    proba = np.full((50, 2), 0.5)
    state = state_of(proba, np.array([0.8]))
    policy = bound("qasca", info_of(50, 1))
    picks = [policy.assign(0, state, np.random.default_rng(s)) for s in range(20)]
    assert len(set(picks)) > 5
    assert picks == [policy.assign(0, state, np.random.default_rng(s)) for s in range(20)]


def test_gain_memo_picks_as_computing_afresh_and_follows_a_refresh() -> None:
    rng_data = np.random.default_rng(3)
    first = rng_data.dirichlet([1.0, 1.0], size=40)
    second = rng_data.dirichlet([1.0, 1.0], size=40)
    conf = one_coin_matrices(np.array([0.9, 0.7, 0.9]), 2)
    memo = GainMemo()
    for proba in (first, first, second, first.copy()):
        for worker in range(3):
            handed = rng_data.integers(0, 2, size=40)
            state = state_of(proba, np.array([0.9, 0.7, 0.9]), confusion=conf, handed=handed)
            fresh = best_gain_task(state, conf[worker], np.random.default_rng(worker))
            kept = best_gain_task(state, conf[worker], np.random.default_rng(worker), memo)
            assert kept == fresh
            gain, _ = memo.get(proba, conf[worker])
            np.testing.assert_array_equal(gain, expected_accuracy_gain(proba, conf[worker]))


def test_explore_exploit_value_follows_a_gold_answer_between_refreshes() -> None:
    counts = np.array([[10.0, 10.0], [90.0, 10.0]])
    state = state_of(PROBA2, np.array([0.5, 0.9]), counts=counts)
    policy = bound("explore-exploit", info_of(4, 2, gold_count=20), explore=0, threshold=0.2,
                   prior="beta")
    before = policy.value(state)[0]
    # Same refresh (same estimate objects), one more gold answer right: (1+10+1)/(2+20+1).
    after = policy.value(replace(state, workers=stats(2, gold_answered=np.array([1, 0]),
                                                        gold_correct=np.array([1, 0]))))[0]
    assert before == pytest.approx(label_information(np.array([11 / 22]), 2)[0])
    assert after == pytest.approx(label_information(np.array([12 / 23]), 2)[0])


def test_grid_posterior_of_three_gold_answers_right_under_a_beta_prior() -> None:
    # low = 0: the prior is Beta(6, 2); 3 right of 3 gives Beta(9, 2), mean 9/11.
    post = grid_posterior(np.array([3.0]), np.array([0.0]),
                          shifted_beta_log_prior(ACCURACY_GRID, 6.0, 2.0, 0.0), ACCURACY_GRID)
    assert (post @ ACCURACY_GRID)[0] == pytest.approx(9 / 11, abs=1e-5)
    lo, hi = grid_quantiles(post, ACCURACY_GRID, np.array([0.05, 0.95]))[:, 0]
    assert lo == pytest.approx(betaincinv(9, 2, 0.05), abs=2e-3)
    assert hi == pytest.approx(betaincinv(9, 2, 0.95), abs=2e-3)
    # Nothing below low = 0.1 is possible: the prior there is zero.
    shifted = shifted_beta_log_prior(ACCURACY_GRID, 6.0, 2.0, 0.1)
    below = ACCURACY_GRID <= 0.1
    assert np.isneginf(shifted[below]).all() and np.isfinite(shifted[~below]).all()


def test_explore_exploit_scenario_prior_is_the_shifted_beta_posterior() -> None:
    # Worker 0: 3 gold right of 3 and no task labels; q = .1 + .9 x, x ~ Beta(6, 2), so the
    # posterior density of x is proportional to x^5 (1 - x) (.1 + .9 x)^3.
    def dens(x: float) -> float:
        return float(x**5 * (1 - x) * (0.1 + 0.9 * x) ** 3)

    mean_x = quad(lambda x: x * dens(x), 0, 1)[0] / quad(dens, 0, 1)[0]
    workers = stats(2, gold_answered=np.array([3, 0]), gold_correct=np.array([3, 0]))
    state = state_of(PROBA2, np.array([0.9, 0.9]), counts=np.zeros((2, 2)), workers=workers)
    policy = bound("explore-exploit", info_of(4, 2, gold_count=20), prior="scenario")
    acc = policy.accuracy(state)
    assert acc[0] == pytest.approx(0.1 + 0.9 * mean_x, abs=1e-5)
    # No evidence at all: the prior mean .1 + .9 * 6/8 = .775, not the flat prior's .5.
    assert acc[1] == pytest.approx(0.775, abs=1e-5)
    flat = bound("explore-exploit", info_of(4, 2), prior="beta")
    assert flat.accuracy(state)[1] == pytest.approx(0.5)


def test_explore_exploit_exhausted_sends_a_declined_worker_where_no_good_one_may_go() -> None:
    # Workers 0 and 1: (1+90)/102 = .89 (information .51 >= .45); worker 2: 66/102 = .65
    # (information .07). Task 2 (50/50) was labelled by both good workers, task 0 (60/40) by
    # worker 0 only. Worker 2 (one-coin skill .75) gains .25 on task 2, .15 on task 0.
    lab = LabelSet.from_arrays(np.array([2, 2, 0, 1, 3]), np.array([0, 1, 0, 1, 2]),
                               np.zeros(5, int), n_tasks=4, n_workers=3, n_classes=2)
    counts = np.array([[90.0, 10.0], [90.0, 10.0], [65.0, 35.0]])

    def state(blocked: list[bool], held: list[bool]) -> MarketState:
        return MarketState(lab, PROBA2, np.array([0.9, 0.9, 0.75]), 5, 50,
                           skill_counts=counts, workers=stats(3, blocked=np.array(blocked)),
                           held=np.array(held), handed_since_refresh=np.zeros(4, int))

    options = dict(explore=0, threshold=0.45, prior="beta")
    plain = bound("explore-exploit", info_of(4, 3), exhausted=False, **options)
    rescue = bound("explore-exploit", info_of(4, 3), exhausted=True, **options)
    rng = np.random.default_rng(0)
    free = state([False] * 3, [False] * 4)
    assert plain.assign(2, free, rng) is None
    assert rescue.assign(2, free, rng) == 2
    # A good worker is not restricted to those tasks (0 and 2 are theirs; gains 0: entropy).
    assert rescue.assign(0, state([False] * 3, [True, False, True, False]), rng) == 1
    # Worker 2 holds task 2; with worker 1 blocked, worker 0 alone is the good crowd and task 0
    # (labelled by worker 0) is exhausted too.
    assert rescue.assign(2, state([False] * 3, [False, False, True, False]), rng) is None
    assert rescue.assign(2, state([False, True, False], [False, False, True, False]), rng) == 0


def test_qasca_min_gain_declines_a_worker_with_nothing_to_add() -> None:
    state = state_of(np.array([[0.95, 0.05]]), np.array([0.6]))
    assert bound("qasca", info_of(1, 1), min_gain=0.01).assign(0, state,
                                                               np.random.default_rng(0)) is None


def test_qasca_min_tier_declines_unqualified_workers_while_a_qualified_one_may_work() -> None:
    rng = np.random.default_rng(0)
    policy = bound("qasca", info_of(4, 2), min_tier=1)
    tiered = state_of(PROBA2, np.array([0.8, 0.8]), workers=stats(2, tier=np.array([0, 1])))
    assert policy.assign(0, tiered, rng) is None  # tier 0 while worker 1 qualifies
    assert policy.assign(1, tiered, rng) in range(4)
    # The qualified worker is blocked: nobody qualifies, so the market is not stalled.
    gone = state_of(PROBA2, np.array([0.8, 0.8]),
                    workers=stats(2, tier=np.array([0, 1]), blocked=np.array([False, True])))
    assert policy.assign(0, gone, rng) in range(4)


def test_explore_exploit_gives_new_workers_gold_only_when_the_scenario_has_gold() -> None:
    state = state_of(PROBA2, np.array([0.8, 0.8]))
    rng = np.random.default_rng(0)
    assert bound("explore-exploit", info_of(4, 2, gold_count=10), explore=2).assign(
        0, state, rng) == GOLD
    # Fewer gold questions than `explore`: a worker who answered them all is explored.
    done = state_of(PROBA2, np.array([0.8, 0.8]), counts=np.array([[40.0, 5.0], [40.0, 5.0]]),
                    workers=stats(2, gold_answered=np.array([1, 0]),
                                  gold_correct=np.array([1, 0])))
    assert bound("explore-exploit", info_of(4, 2, gold_count=1), explore=2).assign(
        0, done, rng) != GOLD
    # No gold in the scenario: a new worker is tried on a task, never sent to gold.
    assert bound("explore-exploit", info_of(4, 2), explore=2).assign(0, state, rng) in range(4)


def test_explore_exploit_declines_poor_value_per_cost_but_never_the_whole_crowd() -> None:
    # Worker 0: 6/8 gold right + 60 of 100 labels right: accuracy (1+6+60)/(2+8+100) = .609,
    # information 1 - H(.609) = .035 < .2. Worker 1: 8/8 gold + 90/100: (1+98)/(110) = .9,
    # information .531 >= .2.
    counts = np.array([[60.0, 40.0], [90.0, 10.0]])
    workers = stats(2, gold_answered=np.array([8, 8]), gold_correct=np.array([6, 8]))
    state = state_of(PROBA2, np.array([0.6, 0.9]), counts=counts, workers=workers)
    policy = bound("explore-exploit", info_of(4, 2, gold_count=20), explore=8, threshold=0.2,
                    prior="beta", exhausted=False)
    np.testing.assert_allclose(policy.accuracy(state), [67 / 110, 99 / 110])
    rng = np.random.default_rng(0)
    assert policy.assign(0, state, rng) is None
    assert policy.assign(1, state, rng) == 2
    # The good worker is blocked: declining worker 0 would leave nobody, so they work.
    blocked = stats(2, gold_answered=np.array([8, 8]), gold_correct=np.array([6, 8]),
                    blocked=np.array([False, True]))
    state = state_of(PROBA2, np.array([0.6, 0.9]), counts=counts, workers=blocked)
    assert policy.assign(0, state, rng) in range(4)
    # A price of 3 puts the good worker's value at .531 / 3 = .177 < .2 as well.
    dear = stats(2, gold_answered=np.array([8, 8]), gold_correct=np.array([6, 8]),
                 price=np.array([1.0, 3.0]))
    np.testing.assert_allclose(
        policy.value(state_of(PROBA2, np.array([0.6, 0.9]), counts=counts, workers=dear))[1],
        label_information(np.array([0.9]), 2)[0] / 3)


def test_explore_exploit_bound_uses_the_credible_interval_of_the_accuracy() -> None:
    # Worker 0: 4 right, 1 wrong -> Beta(5, 2): mean .714 (information .137), 90 % interval
    # [.418, .937] holds chance, so its lower information is 0 and its upper 1 - H(.937) = .661.
    # Worker 1: 49 right, 9 wrong -> Beta(50, 10): mean .833 (.350), interval [.749, .905]:
    # lower 1 - H(.749) = .187, upper 1 - H(.905) = .547.
    counts = np.array([[4.0, 1.0], [49.0, 9.0]])
    state = state_of(PROBA2, np.array([0.7, 0.83]), counts=counts)
    rng = np.random.default_rng(0)

    def policy(**options: object):
        return bound("explore-exploit", info_of(4, 2), explore=0, prior="beta", exhausted=False,
                     **options)

    np.testing.assert_allclose(policy(bound="upper").information(state), [0.661, 0.547],
                               atol=2e-3)
    np.testing.assert_allclose(policy(bound="lower").information(state), [0.0, 0.187],
                               atol=2e-3)
    # The mean declines the little-known worker 0; the upper bound explores them; the lower
    # bound, at a cut only worker 1 proves, declines worker 0 and keeps worker 1.
    assert policy(threshold=0.3).assign(0, state, rng) is None
    assert policy(threshold=0.3, bound="upper").assign(0, state, rng) in range(4)
    assert policy(threshold=0.15, bound="lower").assign(0, state, rng) is None
    assert policy(threshold=0.15, bound="lower").assign(1, state, rng) in range(4)
    # A wider interval (confidence .99) lowers the lower bound of worker 1 below the cut:
    # nobody proves it, so nobody is declined.
    assert policy(threshold=0.15, bound="lower", confidence=0.99).assign(0, state, rng) \
        in range(4)


def matched_beta_counts(likelihood) -> tuple[float, float]:
    """Pseudo-counts (a - 1, b - 1) of the Beta matching the mean and variance of a flat-prior
    posterior proportional to ``likelihood(q)``, by numerical integration."""
    z = quad(likelihood, 0, 1)[0]
    mean = quad(lambda q: q * likelihood(q), 0, 1)[0] / z
    var = quad(lambda q: q * q * likelihood(q), 0, 1)[0] / z - mean**2
    size = mean * (1 - mean) / var - 1
    return mean * size - 1, (1 - mean) * size - 1


def test_leave_one_out_evidence_judges_each_label_without_itself() -> None:
    # Prior (.75, .25), workers of accuracy .9 and .8. Task 0: both say class 0, posterior
    # ∝ (.75 · .9 · .8, .25 · .1 · .2). Without worker 0's label it is the prior and worker 1's:
    # P(class 0) = .75 · .8 / (.75 · .8 + .25 · .2) = .923; without worker 1's: .675 / .7 =
    # .964. Task 1 has worker 0's "1" only: judged against the prior, P(class 1) = .25.
    # A label judged against m has likelihood m q + (1 - m)(1 - q).
    joint = np.array([[0.75 * 0.9 * 0.8, 0.25 * 0.1 * 0.2], [0.75 * 0.1, 0.25 * 0.9]])
    proba = joint / joint.sum(axis=1, keepdims=True)
    labels = LabelSet.from_arrays(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([0, 0, 1]),
                                  n_tasks=2, n_workers=2, n_classes=2)
    confusion = one_coin_matrices(np.array([0.9, 0.8]), 2)
    state = MarketState(labels, proba, np.array([0.9, 0.8]), 3, 30, confusion=confusion,
                        skill_counts=np.array([[1.9, 0.1], [1.0, 0.0]]), workers=stats(2))
    m0, m1 = 0.6 / 0.65, 0.675 / 0.7

    def w0(q: float) -> float:
        return (m0 * q + (1 - m0) * (1 - q)) * (0.25 * q + 0.75 * (1 - q))

    def w1(q: float) -> float:
        return m1 * q + (1 - m1) * (1 - q)

    expected = [matched_beta_counts(w0), matched_beta_counts(w1)]
    np.testing.assert_allclose(leave_one_out_evidence(state), expected, atol=2e-3)
    # Worker 0's "1" against a .25 prior weighs against them: less than worker 1's evidence.
    policy = bound("explore-exploit", info_of(2, 2), explore=0, evidence="leave-one-out",
                    prior="beta")
    acc = policy.accuracy(state)
    assert acc[0] < acc[1]
    # Without confusion matrices the posterior's counts are used.
    plain = replace(state, confusion=None)
    np.testing.assert_allclose(policy.accuracy(plain), [2.9 / 4, 2 / 3])


def test_oracle_workers_declines_below_the_cut_and_fixes_the_least_believed_task() -> None:
    truth = np.array([0, 1, 0, 0])
    true_conf = one_coin_matrices(np.array([0.6, 0.95]), 2)
    policy = bound("oracle-workers", info_of(4, 2, truth=truth, true_confusion=true_conf))
    state = state_of(PROBA2, np.array([0.5, 0.5]))
    rng = np.random.default_rng(0)
    assert policy.assign(0, state, rng) is None
    # True-class posteriors .6, .1, .5, .95: task 1 is believed least.
    assert policy.assign(1, state, rng) == 1
    with pytest.raises(ValueError, match="true labels"):
        bound("oracle-workers", info_of(4, 2))


def check(name: str, options: dict[str, object]) -> None:
    """Check a built-in policy's options as the parser does."""
    check_options(POLICIES[name], name, options, "arms[0].policy", "s.toml")


def test_worker_aware_options_are_checked() -> None:
    with pytest.raises(InputError, match="threshold"):
        check("explore-exploit", {"threshold": -1})
    with pytest.raises(InputError, match="bound"):
        check("explore-exploit", {"bound": "median"})
    with pytest.raises(InputError, match="evidence"):
        check("explore-exploit", {"evidence": "gold"})
    with pytest.raises(InputError, match="confidence"):
        check("explore-exploit", {"confidence": 1.0})
    with pytest.raises(InputError, match="not an option"):
        check("qasca", {"explore": 2})
    check("oracle-workers", {"ability_cut": 0.85})


def small_market(policy_name: str, options: dict[str, object], extra: dict[str, object]):
    from marketsim.market.inference import estimator_factory
    from marketsim.market.market import Market
    from marketsim.market.worker_models import draw_world
    from marketsim.scenario.parser import parse_scenario
    from marketsim.study.seeds import unit_streams, world_rng

    doc: dict[str, object] = {
        "scenario": {"seed": 3, "replicates": 1},
        "tasks": {"count": 40, "classes": 2, "prior": [0.75, 0.25]},
        "workers": {"count": 6, "ability": {"distribution": "shifted-beta", "alpha": 6,
                                            "beta": 2, "low": 0.1}},
        "budget": {"edges": 160, "batch": 20, "initial": "one-per-task"},
        "arms": [{"name": "a", "policy": {"name": policy_name, **options},
                  "inference": "one-coin-shifted-beta"}],
        **extra,
    }
    sc = parse_scenario(doc, "wa.toml")
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    market = Market(market_setup(sc), world, make_policy(policy_name, dict(options)),
                    estimator_factory(sc.crowd, sc.arms[0].inference), unit_streams(sc.seed, 0, 0))
    return market, world, market.run()


def test_explore_exploit_in_a_market_tests_each_worker_on_gold_then_spends_the_budget() -> None:
    market, _, curve = small_market("explore-exploit", {"explore": 2},
                                    {"gold": {"count": 5, "rate": 0.0}})
    stats = market.workforce.stats()
    assert curve[-1].edges == 160 and 0 < curve[-1].gold_labels <= 6 * 2
    assert curve[-1].gold_labels == int(stats.gold_answered.sum())
    # A worker who labelled tasks beyond the initial graph answered their 2 gold questions
    # first (the initial graph gives each worker 40 / 6 ≈ 7 labels).
    new_labels = stats.labels - np.bincount(market.world.initial_workers, minlength=6)
    assert np.all(stats.gold_answered[new_labels > 0] == 2)


@pytest.mark.parametrize("name", ["qasca", "oracle-workers"])
def test_worker_aware_policies_spend_a_market_budget(name: str) -> None:
    market, world, curve = small_market(name, {}, {})
    assert curve[-1].edges == 160 and curve[-1].error_rate <= curve[0].error_rate
    if name == "oracle-workers":
        # Workers below the cut get tasks only once every worker above it has labelled all
        # 40 tasks (declining everyone left would stall the market).
        labels = market.workforce.stats().labels
        poor = world.ability < 0.8
        assert poor.any() and (~poor).any()
        assert np.all(labels[~poor] == 40)
        assert labels.sum() == 160
