"""Worker-aware policies in the market (issue #16): ``assign`` is called per arriving worker,
its answers are checked, declining everyone stops the market, and gold questions are paid for
but never results."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from marketsim.errors import MarketStuckError, PolicyError
from marketsim.market.inference import estimator_factory
from marketsim.market.market import Market
from marketsim.market.worker_models import draw_world
from marketsim.policies.base import GOLD, MarketState, Policy, is_worker_aware
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario
from marketsim.study.runner import market_setup
from marketsim.study.seeds import unit_streams, world_rng
from tests.market.test_policy_guard import deadline

N_TASKS, N_WORKERS, BUDGET = 30, 4, 90




def scenario(extra: dict[str, Any] | None = None, method: str = "one-coin") -> Scenario:
    doc: dict[str, Any] = {
        "scenario": {"seed": 5, "replicates": 1},
        "tasks": {"count": N_TASKS, "classes": 2},
        "workers": {"count": N_WORKERS},
        "budget": {"edges": BUDGET, "batch": 10},
        "arms": [{"name": "a", "policy": "uniform", "inference": method}],
    }
    for key, value in (extra or {}).items():
        table, _, name = key.partition(".")
        if name:
            doc.setdefault(table, {})[name] = value
        else:
            doc[table] = value
    return parse_scenario(doc, "wa.toml")


def market(policy: Any, sc: Scenario | None = None) -> Market:
    sc = sc or scenario()
    return Market(market_setup(sc), draw_world(sc.crowd, world_rng(sc.seed, 0)), policy,
                  estimator_factory(sc.crowd, sc.arms[0].inference), unit_streams(sc.seed, 0, 0))


def run(m: Market, seconds: float = 20.0) -> Market:
    with deadline(seconds):
        m.run()
    return m


class LeastLabelled(Policy):
    """A toy worker-aware policy: the free task with the fewest labels (counting hand-outs
    since the refresh), and a gold question every ``gold_every`` calls; records what it saw."""

    name = "least-labelled"

    def __init__(self, gold_every: int = 0) -> None:
        self.gold_every = gold_every
        self.calls = 0
        self.seen: list[tuple[int, MarketState]] = []

    def bind(self, info: Any) -> None:
        """Nothing to prepare."""

    def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> int | None:
        """The least-labelled task this worker does not hold."""
        self.calls += 1
        self.seen.append((worker, state))
        if self.gold_every and self.calls % self.gold_every == 0 \
                and state.workers is not None and state.workers.gold_answered[worker] < 5:
            return GOLD
        assert state.held is not None and state.handed_since_refresh is not None
        load = state.labels.task_degree + state.handed_since_refresh
        load = np.where(state.held, np.iinfo(np.int64).max, load)
        return int(np.argmin(load))


def test_a_worker_aware_policy_is_asked_per_arrival_and_spends_the_budget() -> None:
    policy = LeastLabelled()
    assert is_worker_aware(policy)
    m = run(market(policy))
    labels = m.log.view()
    assert labels.n_labels == BUDGET
    pairs = labels.tasks * N_WORKERS + labels.workers
    assert np.unique(pairs).size == pairs.size  # never a task the worker holds
    assert policy.calls == BUDGET - N_TASKS  # one call per hand-out after the initial graph
    # Least-labelled spreads the labels: every task has 3 labels.
    assert set(labels.task_degree.tolist()) == {3}
    worker, state = policy.seen[-1]
    assert state.workers is not None and state.held is not None
    assert state.confusion is not None and state.confusion.shape == (N_WORKERS, 2, 2)
    assert state.skill_counts is not None
    # Expected correct + wrong = the worker's task labels at the refresh.
    assert np.allclose(state.skill_counts.sum(axis=1), state.labels.worker_degree)
    for arr in (state.held, state.handed_since_refresh, state.workers.labels, state.proba):
        assert not arr.flags.writeable


class HeldChecker(LeastLabelled):
    """Least-labelled, checking at each call that ``state.held`` is exactly the tasks this
    worker was handed (the initial graph's and its own answers so far)."""

    name = "held-checker"

    def __init__(self, first: dict[int, set[int]]) -> None:
        super().__init__()
        self.given = first
        self.mismatches = 0

    def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> int | None:
        assert state.held is not None and not state.held.flags.writeable
        if set(np.flatnonzero(state.held).tolist()) != self.given.get(worker, set()):
            self.mismatches += 1
        task = super().assign(worker, state, rng)
        assert task is not None
        self.given.setdefault(worker, set()).add(task)
        return task


def test_held_is_exactly_the_workers_tasks_before_and_after_it_is_kept_dense() -> None:
    # 4 workers share 90 labels of 30 tasks: each holds far more than the 30 / 8 tasks from
    # which the market keeps a worker's held mask as a dense row instead of rebuilding it
    built = market(LeastLabelled())
    first: dict[int, set[int]] = {}
    for task, worker in zip(built.world.initial_tasks, built.world.initial_workers,
                            strict=True):
        first.setdefault(int(worker), set()).add(int(task))
    policy = HeldChecker(first)
    m = run(market(policy))
    assert m.log.view().n_labels == BUDGET
    assert policy.calls == BUDGET - N_TASKS and policy.mismatches == 0


@pytest.mark.parametrize(("raw", "problem"), [
    (N_TASKS, "outside"), (-3, "outside"), (1.0, "float"), ("3", "str"), (True, "bool"),
    ([1], "list"), (np.array([2]), "ndarray"),
])
def test_every_bad_assign_answer_is_a_policy_error(raw: Any, problem: str) -> None:
    class Bad(LeastLabelled):
        name = "bad"

        def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> Any:
            return raw

    with pytest.raises(PolicyError, match=f"policy 'bad'.*assign\\(\\) .*{problem}"):
        run(market(Bad()))


def test_assigning_a_held_task_is_a_policy_error() -> None:
    class Held(LeastLabelled):
        name = "held"

        def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> Any:
            assert state.held is not None
            return int(np.flatnonzero(state.held)[0])

    with pytest.raises(PolicyError, match="policy 'held'.*already holds"):
        run(market(Held()))


def test_gold_without_gold_questions_is_a_policy_error() -> None:
    with pytest.raises(PolicyError, match="returned GOLD, but the scenario has no \\[gold\\]"):
        run(market(LeastLabelled(gold_every=1)))


def test_an_exception_in_assign_is_a_policy_error() -> None:
    class Raises(LeastLabelled):
        name = "raises"

        def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> Any:
            raise KeyError("boom")

    with pytest.raises(PolicyError, match="policy 'raises'.*assign\\(\\) raised KeyError"):
        run(market(Raises()))


def test_declining_everyone_is_a_stuck_market_not_a_hang() -> None:
    class Declines(LeastLabelled):
        name = "declines"

        def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> Any:
            return None

    with pytest.raises(MarketStuckError, match="policy 'declines'.*declined them all"):
        run(market(Declines()), seconds=10)


def test_declining_some_workers_still_spends_the_budget_on_the_others() -> None:
    class OnlyEven(LeastLabelled):
        def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> Any:
            return None if worker % 2 else super().assign(worker, state, rng)

    sc = scenario({"budget": {"edges": 60, "batch": 10}})
    m = run(market(OnlyEven(), sc))
    labels = m.log.view()
    assert labels.n_labels == 60
    later = labels.workers[N_TASKS:]
    assert np.all(later % 2 == 0)


GOLD_DOC = {"gold": {"count": 12, "rate": 0.3}}


@pytest.mark.parametrize("policy", [None, LeastLabelled(gold_every=3)])
def test_gold_answers_cost_budget_but_are_never_results(policy: Any) -> None:
    sc = scenario(GOLD_DOC)
    if policy is None:
        from marketsim.policies.simple import UniformPolicy
        policy = UniformPolicy()
    m = run(market(policy, sc))
    assert m.gold is not None
    gold = m.gold.n_answered
    assert gold > 0
    assert m.log.size + gold == BUDGET  # gold answers count in the budget
    point = m.curve[-1]
    assert point.edges == BUDGET and point.gold_labels == gold and point.money == BUDGET
    # The results are the real tasks only: one posterior per task, the error over them.
    assert m.estimator is not None and m.estimator.proba_.shape == (N_TASKS, 2)
    truth = m.world.truth
    assert point.error_rate == np.mean(m.estimator.labels_ != truth)
    # A worker never answers the same gold question twice; outcomes are in the record.
    for taken in m.gold.taken:
        assert len(taken) <= 12
    stats = m.workforce.stats()
    assert stats.gold_answered.sum() == gold
    assert stats.labels.sum() == m.log.size


def test_gold_enters_em_with_known_classes() -> None:
    sc = scenario({"gold": {"count": 20, "rate": 0.5}}, method="one-coin")
    m = run(market(LeastLabelled(), sc))
    assert m.refit.gold is not None and m.gold is not None and m.gold.n_answered > 0
    off = scenario({"gold": {"count": 20, "rate": 0.5, "in_inference": False}})
    m_off = run(market(LeastLabelled(), off))
    # Same hand-outs and answers (common streams); only the fit differs.
    assert np.array_equal(m.log.view().labels, m_off.log.view().labels)
    assert m.gold.n_answered == m_off.gold.n_answered  # type: ignore[union-attr]
    assert not np.allclose(m.estimator.skill_, m_off.estimator.skill_)  # type: ignore[union-attr]


def test_no_mechanics_means_money_is_edges_and_no_gold() -> None:
    from marketsim.policies.simple import UniformPolicy
    m = run(market(UniformPolicy()))
    for p in m.curve:
        assert p.money == p.edges and p.gold_labels == 0 and p.blocked_workers == 0


def test_em_clamps_tasks_of_known_class() -> None:
    from marketsim.aggregation.registry import METHODS
    from marketsim.data.labels import LabelSet
    rng = np.random.default_rng(1)
    tasks = np.repeat(np.arange(20), 3)
    workers = np.tile(np.arange(3), 20)
    labels = rng.integers(0, 2, size=tasks.size)
    data = LabelSet(tasks, workers, labels, 20, 3, 2)
    known = np.full(20, -1)
    known[:5] = [1, 0, 1, 1, 0]
    from marketsim.aggregation.identifiability import identifiability_checks
    with identifiability_checks(False):  # random labels: not identifiable, on purpose
        est = METHODS["ds"]().fit(data, known=known)
    assert np.array_equal(est.proba_[:5], np.eye(2)[known[:5]])
    assert np.array_equal(est.labels_[:5], known[:5])
    with pytest.raises(ValueError, match="known must be 20 class indices"):
        METHODS["ds"]().fit(data, known=np.full(19, -1))
