"""The cost-aware choice of which models to ask per task (``cost-aware-models``, issue #41):
it learns to ask a cheap accurate model and rarely an expensive poor one, stops asking at its
threshold or its call budget, pays each call what the ledger charges, learns without the truth,
and is reproducible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from marketsim.data.labels import LabelSet
from marketsim.errors import InputError
from marketsim.market.audit import check_closed_books
from marketsim.market.market import Market
from marketsim.policies.base import MarketInfo, MarketState
from marketsim.policies.model_bandit import CostAwareModelsPolicy, calibrated, vote_log_odds
from marketsim.policies.registry import make_policy
from marketsim.scenario.parser import parse_scenario
from tests.market.test_mixed_market import N_TASKS, doc, human_tasks, run

CHEAP_GOOD = {"accuracy": 0.95, "price": 0.01, "latency": 1.0}
DEAR_POOR = {"accuracy": 0.6, "price": 0.2, "latency": 1.0}


def bandit(**options: Any) -> tuple[Market, CostAwareModelsPolicy]:
    """The small mixed market of two models (cheap and good, dear and poor) under the policy
    with ``options``; the market after its run and the policy object."""
    policy = make_policy("cost-aware-models", options)
    assert isinstance(policy, CostAwareModelsPolicy)
    market = run(doc({"name": "cost-aware-models", **options}, CHEAP_GOOD, DEAR_POOR), policy)
    return market, policy


def test_it_asks_the_cheap_accurate_model_and_rarely_the_dear_poor_one() -> None:
    market, _ = bandit()
    assert market.machines is not None
    cheap, dear = market.machines.asked.sum(axis=1).tolist()
    assert cheap == N_TASKS  # first on every task: most accuracy above chance per unit price
    assert dear < 0.25 * N_TASKS  # only where the cheap one's answer is nearly enough
    # asking every model about every task (cascade) would have made 2 calls a task
    assert (cheap + dear) / N_TASKS < 1.25


def test_a_confident_first_answer_stops_the_asking() -> None:
    low, _ = bandit(threshold=0.55)
    assert low.machines is not None
    confident = low.machines.confidence[0] >= 0.55
    assert confident.mean() > 0.9
    # no second call where the first answer alone passed the threshold, no human label there
    assert (low.machines.asked[1][confident] == 0).all()
    assert not human_tasks(low)[confident].any()


def test_spot_checks_send_an_even_share_of_the_confident_tasks_to_humans() -> None:
    policy = make_policy("cost-aware-models", {"spot_checks": 0.25})
    assert isinstance(policy, CostAwareModelsPolicy)
    policy.bind(MarketInfo(40, 10, 2, np.array([0.5, 0.5]), 6.0, 2.0, 0.4, None,
                           machines=FixedDesk(40)))
    policy.decision[:] = 0
    policy.spot_check(np.arange(6))  # confident tasks arrive in batches of any size:
    policy.spot_check(np.arange(6, 20))  # every fourth one is checked all the same
    np.testing.assert_array_equal(np.flatnonzero(policy.decision[:20] == 1), [3, 7, 11, 15, 19])
    # at threshold 0.55 nearly every first answer is confident: half of them go to humans
    market, spotted = bandit(threshold=0.55, spot_checks=0.5)
    assert 0.4 < human_tasks(market).mean() < 0.6
    np.testing.assert_array_equal(human_tasks(market), spotted.decision == 1)


def test_the_call_budget_per_task_holds_and_unsure_tasks_go_to_humans() -> None:
    market, policy = bandit(threshold=0.999, max_calls=1)
    assert market.machines is not None
    assert market.machines.asked.sum(axis=0).max() == 1
    # one answer rarely reaches 0.999: the tasks still unsure after it go to humans, the
    # others are closed on it
    np.testing.assert_array_equal(human_tasks(market), policy.decision == 1)
    assert (policy.decision == 1).mean() > 0.5


def test_money_per_call_is_what_the_ledger_charges() -> None:
    market, _ = bandit()
    assert market.machines is not None
    calls = market.machines.asked.sum(axis=1)
    assert market.ledger.calls_spent == pytest.approx(calls @ np.array([0.01, 0.2]))
    assert market.curve[-1].money == pytest.approx(market.log.size + market.ledger.calls_spent)
    check_closed_books(market.ledger, market.curve[-1].edges, market.curve[-1].money)


class FixedDesk:
    """A :class:`~marketsim.policies.base.MachineDesk` of two machines whose answers are set
    by the test: every call is answered at once, no answer before."""

    names = ("m0", "m1")

    def __init__(self, n_tasks: int) -> None:
        shape = (2, n_tasks)
        self.price, self.latency = np.array([0.01, 0.2]), np.zeros(2)
        self.rate_limit = np.full(2, np.inf)
        self.asked, self.answered = np.zeros(shape, np.int64), np.zeros(shape, np.int64)
        self.answers, self.confidence = np.full(shape, -1), np.full(shape, np.nan)

    def ask(self, machine: int, tasks: np.ndarray) -> int:
        self.asked[machine, tasks] += 1
        return int(tasks.size)


def test_it_learns_a_models_calibration_from_the_humans_majority_not_the_truth() -> None:
    n = 40
    desk = FixedDesk(n)
    policy = make_policy("cost-aware-models", {"prior_strength": 4.0})
    assert isinstance(policy, CostAwareModelsPolicy) and not policy.needs_truth
    policy.bind(MarketInfo(n, 10, 2, np.array([0.5, 0.5]), 6.0, 2.0, 0.4, None, machines=desk))
    # every task: m0 says class 0 at confidence 0.8, m1 says class 1 at confidence 0.9; the
    # humans' majority says 0 on 30 tasks and 1 on 10 (two votes to one)
    desk.answers[0], desk.answers[1] = 0, 1
    desk.confidence[:] = [[0.8], [0.9]]
    policy.context[:] = [[0], [1]]  # m0 asked first, m1 after it
    policy.decision[:] = 1
    policy.closed[:] = True
    humans = np.where(np.arange(n) < 30, 0, 1)
    votes = np.zeros((n, 2), dtype=np.int64)
    votes[np.arange(n), humans] = 2
    votes[np.arange(n), 1 - humans] = 1
    policy.learn(MarketState(policy_state_labels(n), np.full((n, 2), 0.5), np.full(10, 0.7),
                             0, 100, task_votes=votes))
    np.testing.assert_allclose(policy.checked, [[n, 0, 0], [0, n, 0]])
    # m0: right 30 times where it stated 0.8 each (32 expected); m1: right 10 times of 36
    np.testing.assert_allclose(policy.surplus, [[30 - 32, 0, 0], [0, 10 - 36, 0]])
    accuracy, _ = calibrated(np.array([0.8, 0.9]), np.array([n, n]), np.array([-2.0, -26.0]),
                             4.0, 0.0)
    np.testing.assert_allclose(accuracy, [0.8 - 2 / 44, 0.9 - 26 / 44])
    # learnt once: a second look at the same closed tasks adds nothing
    policy.learn(MarketState(policy_state_labels(n), np.full((n, 2), 0.5), np.full(10, 0.7),
                             0, 100, task_votes=votes))
    np.testing.assert_allclose(policy.checked, [[n, 0, 0], [0, n, 0]])


@pytest.mark.parametrize("learn_from", ["humans", "all"])
def test_without_humans_only_learn_from_all_judges_a_model_by_the_others(learn_from: str
                                                                         ) -> None:
    n = 10
    desk = FixedDesk(n)
    policy = make_policy("cost-aware-models", {"learn_from": learn_from})
    assert isinstance(policy, CostAwareModelsPolicy)
    policy.bind(MarketInfo(n, 10, 2, np.array([0.5, 0.5]), 6.0, 2.0, 0.4, None, machines=desk))
    desk.answers[0], desk.answers[1] = 0, 1  # they always disagree; no human labelled
    desk.confidence[:] = 0.7
    policy.context[:] = [[0], [1]]
    policy.decision[:] = 0
    policy.closed[:] = True
    policy.learn(MarketState(policy_state_labels(n), np.full((n, 2), 0.5), np.full(10, 0.7),
                             0, 100, task_votes=np.zeros((n, 2), dtype=np.int64)))
    if learn_from == "humans":
        assert policy.checked.sum() == 0  # nothing checked them
    else:  # each judged against the other's answer: wrong every time
        np.testing.assert_allclose(policy.checked, [[n, 0, 0], [0, n, 0]])
        np.testing.assert_allclose(policy.surplus, [[-0.7 * n, 0, 0], [0, -0.7 * n, 0]])


def policy_state_labels(n: int) -> LabelSet:
    """An empty label set of ``n`` tasks and 10 workers (the market state's labels)."""
    empty = np.zeros(0, np.int64)
    return LabelSet.from_arrays(empty, empty, empty, n_tasks=n, n_workers=10, n_classes=2)


def test_the_vote_weighs_answers_by_their_estimated_accuracy() -> None:
    accuracy, upper = calibrated(np.array([0.9, 0.6]), np.array([0.0, 10.0]),
                                 np.array([0.0, -2.0]), 4.0, 1.0)
    np.testing.assert_allclose(accuracy, [0.9, 0.6 - 2.0 / 14.0])
    assert (upper > accuracy).all() and (upper <= 1.0).all()
    # two classes: an answer right 90 % of the time is worth log(0.9 / 0.1)
    np.testing.assert_allclose(vote_log_odds(np.array([0.9, 0.5]), 2), [np.log(9.0), 0.0])
    # three classes: a wrong answer is one of two others
    np.testing.assert_allclose(vote_log_odds(np.array([0.8]), 3), [np.log(0.8 / 0.1)])


def test_a_unit_is_reproducible() -> None:
    first, _ = bandit()
    second, _ = bandit()
    assert first.curve == second.curve
    assert first.machines is not None and second.machines is not None
    np.testing.assert_array_equal(first.machines.asked, second.machines.asked)


def test_it_needs_machines_it_can_name() -> None:
    with pytest.raises(InputError, match=r"arms\[0\]\.policy\.machines"):
        parse_scenario(doc({"name": "cost-aware-models", "machines": ["nope"]}, CHEAP_GOOD),
                       "mixed.toml")
    with pytest.raises(InputError, match=r"arms\[0\]\.policy"):
        parse_scenario(doc("cost-aware-models"), "mixed.toml")
    with pytest.raises(InputError, match="max_overlap = 1 must be >= agree = 2"):
        parse_scenario(doc({"name": "cost-aware-models", "max_overlap": 1}, CHEAP_GOOD),
                       "mixed.toml")


@pytest.mark.slow
def test_a_bandit_study_writes_the_same_bytes_with_one_or_two_jobs(tmp_path: Path) -> None:
    from marketsim.cli import main  # the command line, as a user runs it

    path = tmp_path / "bandit.toml"
    path.write_text(BANDIT_TOML)
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}"
        assert main(["run", str(path), "--replicates", "2", "--jobs", jobs, "--quiet",
                     "--out", str(out)]) == 0
        outs.append((out / "curves.csv").read_bytes())
    assert outs[0] == outs[1]


BANDIT_TOML = """
[scenario]
name = "bandit"
seed = 11
[tasks]
count = 80
classes = 2
[workers]
count = 15
[budget]
edges = 600
initial = "none"
batch = 40
[[machines]]
name = "cheap"
price = 0.01
latency = 0.5
accuracy = 0.9
[[machines]]
name = "dear"
price = 0.1
latency = 2.0
accuracy = 0.7
temperature = 0.5
[[arms]]
name = "bandit"
policy = { name = "cost-aware-models", window = 10 }
[[arms]]
name = "cascade"
policy = { name = "cascade" }
"""
