"""Every policy's contract: a ranking of distinct task indices, reproducible for a seed."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.aggregation.one_coin import OneCoinEM, OneCoinShiftedBetaEM
from marketsim.data.labels import LabelSet
from marketsim.errors import InputError
from marketsim.policies.base import (
    DONE,
    GOLD,
    MachineDesk,
    MarketInfo,
    MarketState,
    is_worker_aware,
)
from marketsim.policies.registry import POLICIES, make_policy
from marketsim.workers.one_coin import draw_answers

#: Ranking policies (``rank`` at each refresh) and worker-aware ones (``assign`` per arrival).
RANKING = [name for name in POLICIES if not is_worker_aware(POLICIES[name])]
WORKER_AWARE = [name for name in POLICIES if is_worker_aware(POLICIES[name])]


def market_state(seed: int = 0, n: int = 300, m: int = 15, per_task: int = 3):
    rng = np.random.default_rng(seed)
    truth = (rng.random(n) < 0.25).astype(np.int64)
    ability = 0.1 + 0.9 * rng.beta(6, 2, size=m)
    tasks = np.repeat(np.arange(n), per_task)
    workers = np.concatenate([rng.choice(m, per_task, replace=False) for _ in range(n)])
    labels = draw_answers(truth[tasks], ability[workers], 2, rng)
    data = LabelSet.from_arrays(tasks, workers, labels, n_tasks=n, n_workers=m, n_classes=2)

    def factory() -> OneCoinEM:
        return OneCoinShiftedBetaEM(class_prior=[0.75, 0.25], max_iter=30, tol=0)

    est = factory().fit(data)
    info = MarketInfo(n, m, 2, np.array([0.75, 0.25]), 6.0, 2.0, 0.1, factory, truth=truth)
    state = MarketState(data, est.proba_, est.skill_, data.n_labels, 10 * data.n_labels)
    return info, state, truth


class InstantDesk:
    """A :class:`~marketsim.policies.base.MachineDesk` of two machines that answer at once:
    the truth, flipped on every seventh task for the second, at confidence 0.9."""

    names = ("m0", "m1")

    def __init__(self, truth: np.ndarray) -> None:
        self.truth = truth
        shape = (2, truth.size)
        self.price, self.latency = np.full(2, 0.05), np.zeros(2)
        self.rate_limit = np.full(2, np.inf)
        self.asked, self.answered = np.zeros(shape, np.int64), np.zeros(shape, np.int64)
        self.answers, self.confidence = np.full(shape, -1), np.full(shape, np.nan)

    def ask(self, machine: int, tasks: np.ndarray) -> int:
        flip = (machine == 1) & (tasks % 7 == 0)
        np.add.at(self.asked[machine], tasks, 1)
        np.add.at(self.answered[machine], tasks, 1)
        self.answers[machine, tasks] = np.where(flip, 1 - self.truth[tasks], self.truth[tasks])
        self.confidence[machine, tasks] = 0.9
        return int(tasks.size)


def continuous_state(seed: int = 0, n: int = 300, m: int = 15, per_task: int = 3):
    """A seed 001 market state: scores, fitted task means and P(good)."""
    from marketsim.aggregation.bad_annotators import GaussianBadAnnotatorEM, simulate_bad_annotators

    data, _, _ = simulate_bad_annotators(n, m, per_task, random_state=seed)
    est = GaussianBadAnnotatorEM().fit(data)
    info = MarketInfo(n, m, 1, np.ones(1), 6.0, 2.0, 0.1, GaussianBadAnnotatorEM)
    state = MarketState(data, np.ones((n, 1)), est.good_proba_, data.n_labels,
                        10 * data.n_labels, means=est.means_, good_proba=est.good_proba_,
                        sigma=est.sigma_)
    return info, state


@pytest.mark.parametrize("name", RANKING)
def test_rank_is_reproducible_list_of_distinct_tasks(name: str) -> None:
    from marketsim.policies.registry import SCORE_ONLY_POLICIES

    info, state = continuous_state() if name in SCORE_ONLY_POLICIES else market_state()[:2]
    ranks = []
    for _ in range(2):
        policy = make_policy(name, {})
        policy.bind(info)
        ranks.append(policy.rank(state, np.random.default_rng(5)))
    r = ranks[0]
    assert r.ndim == 1 and 0 < r.size <= info.n_tasks
    assert np.unique(r).size == r.size
    assert r.min() >= 0 and r.max() < info.n_tasks
    assert np.array_equal(ranks[0], ranks[1])


@pytest.mark.parametrize("name", WORKER_AWARE)
def test_assign_is_reproducible_and_never_gives_a_held_task(name: str) -> None:
    import dataclasses

    info, state, truth = market_state()
    m = info.n_workers
    info = dataclasses.replace(info, true_confusion=np.tile(np.eye(2), (m, 1, 1)))
    assert isinstance(InstantDesk(truth), MachineDesk)
    held = np.zeros(info.n_tasks, dtype=bool)
    held[::2] = True
    lab = state.labels
    votes = np.zeros((info.n_tasks, info.n_classes), dtype=np.int64)
    np.add.at(votes, (lab.tasks, lab.labels), 1)
    state = dataclasses.replace(state, held=held,  # the live fields, as the market gives them
                                handed_since_refresh=np.zeros(info.n_tasks, dtype=np.int64),
                                task_votes=votes, task_handed=votes.sum(axis=1),
                                received=(lab.tasks, lab.workers, lab.labels))
    for worker in range(m):
        picks = []
        for _ in range(2):
            policy = make_policy(name, {})
            # the machines are ignored by every policy but those that ask them
            policy.bind(dataclasses.replace(info, machines=InstantDesk(truth)))
            picks.append(policy.assign(worker, state, np.random.default_rng(worker)))
        assert picks[0] == picks[1]
        assert picks[0] in (None, GOLD, DONE) or (0 <= picks[0] < info.n_tasks
                                                  and not held[picks[0]])
        assert picks[0] != GOLD  # info.gold_count is 0: no policy may ask for gold


def test_uniform_is_a_permutation_that_changes_with_the_seed() -> None:
    info, state, _ = market_state()
    policy = make_policy("uniform", {})
    policy.bind(info)
    a = policy.rank(state, np.random.default_rng(1))
    b = policy.rank(state, np.random.default_rng(2))
    assert np.array_equal(np.sort(a), np.arange(info.n_tasks))
    assert not np.array_equal(a, b)


def test_entropy_greedy_puts_uncertain_tasks_first() -> None:
    info, state, _ = market_state()
    policy = make_policy("entropy-greedy", {})
    policy.bind(info)
    order = policy.rank(state, np.random.default_rng(0))
    margin = np.abs(state.proba[:, 0] - 0.5)
    assert margin[order[:30]].mean() < margin[order[-30:]].mean()


def test_oracle_puts_wrong_tasks_first() -> None:
    info, state, truth = market_state()
    policy = make_policy("oracle", {})
    policy.bind(info)
    order = policy.rank(state, np.random.default_rng(0))
    wrong = np.argmax(state.proba, axis=1) != truth
    assert wrong.sum() > 0
    assert wrong[order[: wrong.sum()]].all()


def test_unknown_policy_and_import_paths_need_permission() -> None:
    with pytest.raises(InputError, match="unknown policy 'nope'"):
        make_policy("nope", {})
    with pytest.raises(InputError, match="--allow-imports"):
        make_policy("marketsim.policies.simple:UniformPolicy", {})
    policy = make_policy("marketsim.policies.simple:UniformPolicy", {}, allow_imports=True)
    assert policy.name == "uniform"
    with pytest.raises(InputError, match="bad options"):
        make_policy("uniform", {"colour": "red"})
