"""The platform presets against their definitions, on hand-built market states: exactly when a
task closes, which answer wins with skill weights, and what a closed task receives (nothing);
then in a whole market: exact overlaps, a run that ends under budget with its books closed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest

from marketsim.errors import InputError
from marketsim.market.market import Market as SimMarket
from marketsim.options import OptionError
from marketsim.policies.base import DONE, MarketInfo, MarketState, WorkerStats
from marketsim.policies.dynamic_overlap import (
    DynamicOverlapPolicy,
    answer_confidence,
    gold_accuracy,
)
from marketsim.policies.fixed_overlap import FixedOverlapPolicy, deal
from marketsim.policies.until_agreement import UntilAgreementPolicy
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario
from marketsim.study import runner
from tests.helpers import validate_in_process

RNG = np.random.default_rng(0)


def info(n_tasks: int, n_workers: int, k: int = 2) -> MarketInfo:
    return MarketInfo(n_tasks=n_tasks, n_workers=n_workers, n_classes=k,
                      class_prior=np.full(k, 1 / k), ability_alpha=6.0, ability_beta=2.0,
                      ability_low=0.1, inference=None)


class Market:
    """A hand-driven market: labels received so far (task, worker, label), hand-outs, gold."""

    def __init__(self, n_tasks: int, n_workers: int, k: int = 2) -> None:
        self.n, self.m, self.k = n_tasks, n_workers, k
        self.log: list[tuple[int, int, int]] = []
        self.handed = np.zeros(n_tasks, dtype=np.int64)
        self.gold_answered = np.zeros(n_workers, dtype=np.int64)
        self.gold_correct = np.zeros(n_workers, dtype=np.int64)

    def label(self, task: int, worker: int, label: int) -> None:
        self.log.append((task, worker, label))
        self.handed[task] += 1

    def state(self, worker: int) -> MarketState:
        arr = np.asarray(self.log, dtype=np.int64).reshape(-1, 3)
        votes = np.zeros((self.n, self.k), dtype=np.int64)
        np.add.at(votes, (arr[:, 0], arr[:, 2]), 1)
        held = np.zeros(self.n, dtype=bool)
        held[arr[arr[:, 1] == worker, 0]] = True
        zeros = np.zeros(self.m, dtype=np.int64)
        workers = WorkerStats(zeros, self.gold_answered.copy(), self.gold_correct.copy(),
                              np.zeros(self.m, dtype=bool), np.ones(self.m), zeros, zeros - 1)
        return MarketState(labels=None, proba=np.full((self.n, self.k), 1 / self.k),  # type: ignore[arg-type]
                           skill=np.full(self.m, 0.5), spent=0, budget=0, workers=workers,
                           held=held, task_votes=votes, task_handed=self.handed.copy(),
                           received=(arr[:, 0].copy(), arr[:, 1].copy(), arr[:, 2].copy()))

    def run(self, policy: Any, worker: int, label: int) -> int | None:
        """The worker arrives; if given a task, they answer ``label`` at once."""
        choice = policy.assign(worker, self.state(worker), RNG)
        if choice is not None and choice >= 0:
            self.label(choice, worker, label)
        return choice


def bound(policy: Any, market: Market) -> Any:
    policy.bind(info(market.n, market.m, market.k))
    return policy


# --- fixed overlap -------------------------------------------------------------------------------


def test_fixed_overlap_gives_each_task_exactly_k_labels_in_task_order() -> None:
    mk = Market(3, 4)
    for task in range(3):  # the initial graph: one label per task
        mk.label(task, task, 0)
    policy = bound(FixedOverlapPolicy(overlap=2), mk)
    # Worker 0 labelled task 0: the first task wanting a label that they may give is task 1.
    assert mk.run(policy, 0, 0) == 1
    assert mk.run(policy, 3, 0) == 0      # task 0 is first in order for worker 3
    assert mk.run(policy, 1, 0) == 2      # task 1 is full (2 labels); worker 1 may take task 2
    assert mk.handed.tolist() == [2, 2, 2]
    # A task is judged at the first arrival after its answers are in: task 2's second label
    # came with the last hand-out, so it is still open.
    assert policy.closed.tolist() == [True, True, False]
    assert mk.run(policy, 3, 0) == DONE   # every task has its 2 labels: stop spending
    assert policy.closed.tolist() == [True, True, True]


def test_fixed_overlap_declines_a_worker_who_labelled_every_open_task() -> None:
    mk = Market(2, 3)
    mk.label(0, 0, 0)
    mk.label(1, 0, 1)
    policy = bound(FixedOverlapPolicy(overlap=2), mk)
    assert mk.run(policy, 0, 0) is None   # worker 0 holds both open tasks: wait for others
    assert mk.run(policy, 1, 0) == 0


def test_fixed_overlap_finds_a_free_task_far_past_the_first_open_one() -> None:
    # 5,000 tasks: the first 2,000 closed with their two labels, worker 2 holds the next
    # 1,500 (a reading of the tasks in blocks must go on past them); a label handed back
    # (abandoned) makes its task wanted again.
    mk = Market(5000, 4)
    for task in range(5000):
        mk.label(task, 0, 0)
    for task in range(2000):
        mk.label(task, 1, 0)
    for task in range(2000, 3500):
        mk.label(task, 2, 0)
    policy = bound(FixedOverlapPolicy(overlap=2), mk)
    assert mk.run(policy, 1, 0) == 3500   # worker 1 labelled 0-1999; 2000-3499 are full
    assert policy.first_open == 3500
    assert policy.assign(3, mk.state(3), RNG) == 3501
    mk.handed[3501] += 1                  # handed to worker 3, not answered yet
    assert mk.run(policy, 2, 0) == 3502
    mk.handed[3501] -= 1                  # worker 3 abandoned it: task 3501 wants it again
    assert mk.run(policy, 2, 0) == 3501
    wanted = policy.wanted_tasks()       # at the counts that arrival read
    assert np.flatnonzero(~wanted).tolist()[-2:] == [3500, 3502] and wanted[3501:].sum() == 1498


# --- until agreement -----------------------------------------------------------------------------


def test_until_agreement_two_labels_a_third_on_disagreement() -> None:
    mk = Market(2, 5)
    mk.label(0, 0, 0)
    mk.label(1, 1, 1)
    policy = bound(UntilAgreementPolicy(agree=2, max_overlap=3), mk)
    assert mk.run(policy, 2, 0) == 0      # task 0: 0, 0 -> two agree: closed once judged
    assert mk.run(policy, 2, 0) == 1      # task 1: 1, 0 -> disagreement: a third label
    assert policy.closed.tolist() == [True, False]
    assert mk.run(policy, 3, 1) == 1      # the third label: 1, 0, 1
    assert policy.wanted[1] == 3
    assert mk.run(policy, 4, 0) == DONE   # task 1 closes (2 agree); nothing left to buy
    assert mk.handed.tolist() == [2, 3]


def test_until_agreement_closes_at_max_overlap_without_a_quorum() -> None:
    mk = Market(1, 6, k=3)
    for worker, label in enumerate((0, 1, 2)):
        mk.label(0, worker, label)
    policy = bound(UntilAgreementPolicy(agree=2, max_overlap=3), mk)
    assert mk.run(policy, 4, 0) == DONE   # three different answers, max_overlap 3: closed
    assert policy.closed.tolist() == [True]


def test_a_closed_task_receives_nothing() -> None:
    mk = Market(3, 6)
    mk.label(0, 0, 1)
    mk.label(0, 1, 1)   # task 0 already agrees
    mk.label(1, 2, 0)
    mk.label(2, 3, 1)
    policy = bound(UntilAgreementPolicy(agree=2, max_overlap=5), mk)
    given = [mk.run(policy, w, 0) for w in (4, 5, 4, 5, 0, 1)]
    assert 0 not in given                 # fresh workers never get the closed task
    assert policy.closed[0]
    assert mk.handed[0] == 2


# --- dynamic overlap -----------------------------------------------------------------------------


def test_gold_accuracy_is_tolokas_smoothed_fraction() -> None:
    # q = (0.5 + correct) / (1 + answered): no gold -> 0.5; 9 of 10 -> 9.5 / 11.
    np.testing.assert_allclose(gold_accuracy(np.array([0, 9, 3]), np.array([0, 10, 3])),
                               [0.5, 9.5 / 11, 3.5 / 4])


def test_answer_confidence_hand_worked() -> None:
    # Two voters of q = 0.8 for class 0, one for class 1: P(0) ∝ .8 .8 .2 = .128,
    # P(1) ∝ .2 .2 .8 = .032: confidence .128 / .16 = 0.8.
    q = np.full(3, 0.8)
    assert answer_confidence(np.array([0, 1, 2]), np.array([0, 0, 1]), q, 2) == \
        pytest.approx((0, 0.8))
    # Three classes, q = 0.7: a wrong answer has probability .3 / 2 = .15 for each other class.
    # Votes 0, 0: P(0) ∝ .49, P(1) = P(2) ∝ .0225: .49 / .535.
    winner, conf = answer_confidence(np.array([0, 1]), np.array([0, 0]), np.full(2, 0.7), 3)
    assert (winner, conf) == (0, pytest.approx(0.49 / 0.535))


def test_skill_weights_pick_the_skilled_workers_answer() -> None:
    # Worker 0: 19 of 19 gold right, q = 19.5 / 20 = .975; worker 1: 2 of 4, q = 2.5 / 5 = .5.
    # Worker 0 says 1, worker 1 says 0: sums of q: class 1 .975 > class 0 .5 -> 1 wins, with
    # P(1) ∝ .975 × .5 = .4875, P(0) ∝ .025 × .5 = .0125: confidence .975 >= .8: closed.
    def market() -> Market:
        mk = Market(2, 4)
        mk.gold_answered[:2] = (19, 4)
        mk.gold_correct[:2] = (19, 2)
        mk.label(0, 0, 1)
        mk.label(0, 1, 0)
        mk.label(1, 2, 0)
        return mk
    mk = market()
    q = gold_accuracy(mk.gold_correct, mk.gold_answered)
    assert answer_confidence(np.array([0, 1]), np.array([1, 0]), q, 2) == \
        pytest.approx((1, 0.975))
    skill = bound(DynamicOverlapPolicy(min_overlap=2, max_overlap=5, confidence=0.8), mk)
    assert mk.run(skill, 3, 0) == 1       # task 0 is closed by its skilled answer
    assert skill.closed.tolist() == [True, False]
    # Equal weights: everyone has the crowd's gold accuracy (0.5 + 21) / (1 + 23) = .896;
    # one vote each way is a tie at confidence .5: task 0 wants a third label.
    mk = market()
    equal = bound(DynamicOverlapPolicy(min_overlap=2, max_overlap=5, confidence=0.8,
                                       weights="equal"), mk)
    assert mk.run(equal, 3, 0) == 0
    assert not equal.closed[0] and equal.wanted[0] == 3


def test_dynamic_overlap_closes_when_confidence_reaches_the_threshold() -> None:
    # Crowd gold accuracy (0.5 + 8) / (1 + 9) = 0.85 for everyone (equal weights). Votes 0, 0, 1:
    # P(0) ∝ .85² × .15, P(1) ∝ .15² × .85: confidence .85 / (.85 + .15) = 0.85.
    for threshold, closes in ((0.849, True), (0.851, False)):
        mk = Market(1, 5)
        mk.gold_answered[0], mk.gold_correct[0] = 9, 8
        for worker, label in enumerate((0, 0, 1)):
            mk.label(0, worker, label)
        policy = bound(DynamicOverlapPolicy(min_overlap=3, max_overlap=4, confidence=threshold,
                                            weights="equal"), mk)
        choice = mk.run(policy, 4, 0)
        assert policy.closed[0] is np.bool_(closes)
        assert choice == (DONE if closes else 0)   # open: the fourth label goes to task 0


def test_dynamic_overlap_waits_for_min_overlap_and_stops_at_max_overlap() -> None:
    mk = Market(1, 8)
    mk.gold_answered[:] = 10
    mk.gold_correct[:] = 10             # q = 10.5 / 11: one vote is confidence .95
    mk.label(0, 0, 1)
    policy = bound(DynamicOverlapPolicy(min_overlap=2, max_overlap=3, confidence=0.99), mk)
    assert mk.run(policy, 1, 0) == 0     # one label: not judged before min_overlap = 2
    assert mk.run(policy, 2, 1) == 0     # 1, 0: a tie, wants a third
    assert mk.run(policy, 3, 0) == DONE  # 1, 0, 1 at max_overlap 3: closed whatever its confidence
    assert mk.handed.tolist() == [3]


@pytest.mark.parametrize(("cls", "options", "problem"), [
    (DynamicOverlapPolicy, {"min_overlap": 4, "max_overlap": 3}, "max_overlap = 3 must be >= "
     "min_overlap = 4"),
    (DynamicOverlapPolicy, {"confidence": 1.5}, "confidence"),
    (DynamicOverlapPolicy, {"weights": "votes"}, "weights"),
    (UntilAgreementPolicy, {"agree": 3, "max_overlap": 2}, "max_overlap = 2 must be >= agree"),
    (FixedOverlapPolicy, {"overlap": 0}, "overlap"),
    (FixedOverlapPolicy, {"overlap": 3, "overlaps": [[3, 4]]}, "overlap or overlaps"),
    (FixedOverlapPolicy, {"overlaps": [[3, 4], [3, 2]]}, "twice"),
    (FixedOverlapPolicy, {"overlaps": [[0, 4]]}, "overlaps"),
    (FixedOverlapPolicy, {"overlaps": [[3, 4, 1]]}, "overlaps"),
])
def test_bad_options_are_refused(cls: type, options: dict[str, Any], problem: str) -> None:
    with pytest.raises(OptionError, match=problem):
        cls(**options)


# --- in a whole market ---------------------------------------------------------------------------


def scenario(policy: Any, *, fee: float = 0.0, service: float = 0.0) -> Any:
    doc = {
        "scenario": {"seed": 3, "replicates": 1},
        "tasks": {"count": 40, "classes": 2},
        "workers": {"count": 8, "service": {"mean": service}},
        "budget": {"edges": 320, "batch": 10, "fee": fee},
        "gold": {"count": 10, "rate": 0.1},
        "arms": [{"name": "p", "policy": policy, "inference": "mv"}],
    }
    return parse_scenario(doc, "presets.toml")


def ran_market(sc: Scenario) -> SimMarket:
    """The market of ``sc``'s first unit after the study runner ran it (replicate 0, arm 0)."""
    made: list[SimMarket] = []

    class Spy(SimMarket):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    with patch.object(runner, "Market", Spy):
        runner.run_unit(sc, 0, 0)
    return made[0]


@pytest.mark.parametrize("service", [0.0, 2.0])
def test_fixed_overlap_market_ends_under_budget_with_exact_overlaps(service: float) -> None:
    sc = scenario({"name": "fixed-overlap", "overlap": 4}, fee=0.25, service=service)
    market = ran_market(sc)
    assert market.stop is not None and market.stop.causes == ("closed",)
    counts = np.bincount(market.log.view().tasks, minlength=40)
    assert counts.tolist() == [4] * 40            # exactly 4 labels per task
    assert market.bought < sc.budget.edges        # under budget: the preset's point
    gold = market.bought - market.log.size
    assert market.curve[-1].money == pytest.approx(1.25 * (160 + gold))
    assert market.curve[-1].edges == market.bought


def test_overlaps_deal_the_distribution_evenly_over_the_task_order() -> None:
    per_task = deal([[7, 10], [1, 5], [3, 25]], 40)
    assert np.bincount(per_task).tolist() == [0, 5, 0, 25, 0, 0, 0, 10]
    for stretch in per_task.reshape(4, 10):  # every quarter of the task order has the mix
        assert abs(np.mean(stretch) - per_task.mean()) <= 1.0
    assert per_task.tolist() == deal([[3, 25], [7, 10], [1, 5]], 40).tolist()  # pair order


def test_fixed_overlap_market_gives_each_task_its_count_of_overlaps() -> None:
    sc = scenario({"name": "fixed-overlap", "overlaps": [[2, 10], [5, 20], [8, 10]]})
    market = ran_market(sc)
    counts = np.bincount(market.log.view().tasks, minlength=40)
    assert market.stop is not None and market.stop.causes == ("closed",)
    assert counts.tolist() == deal([[2, 10], [5, 20], [8, 10]], 40).tolist()
    assert market.log.size == 200


@pytest.mark.parametrize(("overlaps", "expected"), [
    ([[3, 20], [5, 21]], "arms[0].policy.overlaps counts 41 tasks, must count tasks.count = 40"),
    ([[3, 20], [9, 20]], "arms[0].policy.overlaps gives a task 9 labels, at most workers.count "
     "= 8"),
])
def test_overlaps_must_fit_the_tasks_and_the_crowd(overlaps: list[list[int]], expected: str
                                                   ) -> None:
    with pytest.raises(InputError, match=re.escape(expected)):
        scenario({"name": "fixed-overlap", "overlaps": overlaps})


def test_overlaps_of_a_policy_object_are_checked_against_its_market() -> None:
    policy = FixedOverlapPolicy(overlaps=[[3, 5]])
    with pytest.raises(OptionError, match="overlaps counts 5 tasks, must count tasks.count = 6"):
        policy.bind(info(6, 4))


def test_fee_and_min_price_are_checked_at_parse() -> None:
    doc: dict[str, Any] = {
        "scenario": {"seed": 3}, "tasks": {"count": 4}, "workers": {"count": 2, "price": 0.5},
        "budget": {"edges": 6, "min_price": 1.0}, "arms": [{"name": "a", "policy": "uniform"}]}
    with pytest.raises(InputError, match=r"workers.price = 0.5 is below budget.min_price = 1"):
        parse_scenario(doc, "x.toml")
    doc["workers"]["price"] = 1.0
    doc["budget"]["fee"] = -0.1
    with pytest.raises(InputError, match=r"budget.fee"):
        parse_scenario(doc, "x.toml")


@pytest.mark.parametrize(("workers", "budget", "policy", "expected"), [
    ("", "", '{ name = "dynamic-overlap", min_overlap = 4, max_overlap = 3 }',
     "arms[0].policy: bad options for policy 'dynamic-overlap': max_overlap = 3 must be >= "
     "min_overlap = 4"),
    ("", "", '{ name = "until-agreement", agree = 0 }', "arms[0].policy.agree"),
    ("", "", '{ name = "dynamic-overlap", confidence = 0.3 }', "arms[0].policy.confidence"),
    ("price = 0.5\n", "min_price = 1.0\n", '"fixed-overlap"',
     "workers.price = 0.5 is below budget.min_price = 1"),
    ("", "fee = -0.2\n", '"fixed-overlap"', "budget.fee"),
])
def test_bad_values_are_one_line_exit_2(tmp_path: Path, workers: str, budget: str, policy: str,
                                        expected: str, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(f'[scenario]\nseed = 1\n[tasks]\ncount = 4\n[workers]\ncount = 3\n{workers}'
                    f'[budget]\nedges = 8\n{budget}[[arms]]\nname = "a"\npolicy = {policy}\n')
    done = validate_in_process(path, capsys)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "bad.toml" in lines[0]
    assert expected in lines[0]
