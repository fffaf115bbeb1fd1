"""The worker rules of a market (issue #16): blocking by gold accuracy, capacity, drop-out,
prices and tiers, the money budget, and the one-line errors of their scenario keys."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marketsim.errors import InputError, MarketStuckError
from marketsim.market.market import Market
from marketsim.market.workforce import draw_tiers
from marketsim.policies.simple import UniformPolicy
from marketsim.scenario.crowd_specs import TiersSpec
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.toml_out import dumps
from marketsim.study.runner import market_setup, run_unit
from tests.helpers import validate_in_process
from tests.market.test_market_worker_aware import LeastLabelled, market, run, scenario


class Recording(Market):
    """A market remembering, per hand-out, the worker and whether they were blocked."""

    handouts: list[tuple[int, bool]]

    def _choose(self, worker: int) -> tuple[int | None, int | None]:
        choice = super()._choose(worker)
        if choice[0] is not None:
            self.handouts.append((worker, bool(self.workforce.blocked[worker])))
        return choice


def recording(sc: Any, policy: Any = None) -> Recording:
    from marketsim.market.inference import estimator_factory
    from marketsim.market.worker_models import draw_world
    from marketsim.study.seeds import unit_streams, world_rng
    m = Recording(market_setup(sc), draw_world(sc.crowd, world_rng(sc.seed, 0)),
                  policy or UniformPolicy(),
                  estimator_factory(sc.crowd, sc.arms[0].inference), unit_streams(sc.seed, 0, 0))
    m.handouts = []
    return m


def test_blocking_rule_blocks_and_a_blocked_worker_never_gets_another_label() -> None:
    # Workers of accuracy ~0.55 on average: a 0.8 bar after 2 gold answers blocks most.
    sc = scenario({"workers": {"count": 6, "ability": {"alpha": 1, "beta": 1, "low": 0.1}},
                   "gold": {"count": 10, "rate": 0.5},
                   "blocking": {"after": 2, "min_accuracy": 0.8},
                   "budget": {"edges": 80, "batch": 10}})
    m = recording(sc)
    try:
        run(m)
    except MarketStuckError as exc:  # every worker blocked: a legitimate end, named
        assert "blocked by [blocking]" in str(exc)
    wf = m.workforce
    assert wf.blocked.any()
    rule = wf.gold_answered >= 2
    acc = wf.gold_correct / np.maximum(wf.gold_answered, 1)
    assert np.array_equal(wf.blocked, rule & (acc < 0.8))
    assert not any(blocked for _, blocked in m.handouts)
    if m.curve:
        assert m.curve[-1].blocked_workers == wf.blocked.sum()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(capacity=st.integers(8, 20), workers=st.integers(4, 8), gold=st.booleans(),
       session=st.one_of(st.none(), st.floats(2.0, 30.0)), seed=st.integers(0, 10_000),
       aware=st.booleans())
def test_no_worker_exceeds_capacity(capacity: int, workers: int, gold: bool,
                                    session: float | None, seed: int, aware: bool) -> None:
    extra: dict[str, Any] = {"workers": {"count": workers, "capacity": capacity},
                             "budget": {"edges": 60, "batch": 10},
                             "scenario": {"seed": seed}}
    if session is not None:
        extra["workers"]["session_mean"] = session
    if gold:
        extra["gold"] = {"count": 5, "rate": 0.3}
    m = market(LeastLabelled() if aware else UniformPolicy(), scenario(extra))
    try:
        run(m)
    except MarketStuckError as exc:  # the crowd ran out: said in one line, naming the rule
        assert "workers.capacity" in str(exc) or "session" in str(exc)
    given_per_worker = np.bincount(m.log.view().workers, minlength=workers)
    gold_per_worker = m.workforce.gold_answered
    assert np.all(given_per_worker + gold_per_worker <= capacity)
    assert np.all(m.ledger.handed <= capacity)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workers=st.integers(4, 8), gold_count=st.integers(3, 12), rate=st.floats(0.05, 0.6),
       after=st.integers(1, 3), bar=st.floats(0.3, 0.95), low=st.floats(0.0, 0.6),
       seed=st.integers(0, 10_000), aware=st.booleans())
def test_gold_is_never_a_result_and_blocked_workers_never_get_work(
    workers: int, gold_count: int, rate: float, after: int, bar: float, low: float, seed: int,
    aware: bool,
) -> None:
    """Over random crowds, gold mixes and blocking rules: every label bought is a task label or
    a gold answer, only task labels are results, and no hand-out goes to a blocked worker."""
    sc = scenario({"workers": {"count": workers, "ability": {"alpha": 1, "beta": 1, "low": low}},
                   "gold": {"count": gold_count, "rate": rate},
                   "blocking": {"after": min(after, gold_count), "min_accuracy": bar},
                   "budget": {"edges": 60, "batch": 10}, "scenario": {"seed": seed}})
    m = recording(sc, LeastLabelled() if aware else None)
    try:
        run(m)
        finished = True
    except MarketStuckError as exc:  # the blocked crowd cannot spend the budget: named
        assert "the market is stuck" in str(exc)
        finished = False
    assert not any(blocked for _, blocked in m.handouts)
    labels = m.log.view()
    assert labels.n_tasks == sc.tasks.count  # gold questions are not among the tasks
    if finished:
        last = m.curve[-1]
        assert last.gold_labels == m.workforce.gold_answered.sum()
        assert last.edges == labels.n_labels + last.gold_labels
        assert last.blocked_workers == m.workforce.blocked.sum()


def test_a_crowd_exhausted_by_capacity_ends_the_run_with_a_recorded_stop() -> None:
    sc = scenario({"workers": {"count": 4, "capacity": 12}, "budget": {"edges": 80}})
    m = run(market(UniformPolicy(), sc))
    assert m.stop is not None and m.stop.causes == ("capacity",)
    assert "4 at workers.capacity = 12 (raise it)" in m.stop.detail
    assert m.curve[-1].edges == m.stop.labels == 48  # 4 workers x 12 labels, then none left


def test_drop_out_ends_sessions() -> None:
    sc = scenario({"workers": {"count": 4, "session_mean": 2.0}, "budget": {"edges": 90}})
    m = run(market(UniformPolicy(), sc))
    assert m.stop is not None and m.stop.causes == ("sessions",)
    assert "left after their session" in m.stop.detail
    assert m.curve[-1].edges == m.stop.labels < 90


@pytest.mark.parametrize("extra", [
    {"workers": {"count": 4, "price": 2.5}, "gold": {"count": 8, "rate": 0.3}},
    {"workers": {"count": 4, "tiers": {"cuts": [0.7], "noise": 0.05, "prices": [1.0, 3.0]}},
     "gold": {"count": 8, "rate": 0.2}},
])
def test_money_spent_is_the_sum_of_the_prices_of_the_labels_bought(extra: dict) -> None:
    m = run(market(LeastLabelled(), scenario(extra)))
    labels = m.log.view()
    price = m.workforce.price
    expected = price[labels.workers].sum() + (price * m.workforce.gold_answered).sum()
    assert m.curve[-1].money == pytest.approx(expected, rel=1e-12)
    assert m.curve[-1].gold_labels == m.workforce.gold_answered.sum() > 0
    gold_paid = (price * m.workforce.gold_answered).sum()
    assert m.curve[-1].gold_money == pytest.approx(gold_paid, rel=1e-12)


def test_tiers_follow_the_noisy_ability() -> None:
    ability = np.array([0.2, 0.6, 0.75, 0.95])
    spec = TiersSpec(cuts=(0.5, 0.8), noise=0.0, prices=(1.0, 2.0, 4.0))
    assert draw_tiers(spec, ability, np.random.default_rng(0)).tolist() == [0, 1, 1, 2]


def test_a_money_budget_ends_the_curve_early_without_overspending() -> None:
    sc = scenario({"workers": {"count": 4, "price": 2.0}, "budget": {"edges": 90, "money": 120.0,
                                                                     "batch": 10}})
    m = run(market(UniformPolicy(), sc))
    assert m.curve[-1].money <= 120.0
    assert m.curve[-1].edges == 60  # 120 / 2: the initial 30 labels and 30 more
    assert m.curve[-1].edges < 90


BASE = """
[tasks]
count = 20
[workers]
count = 4
[budget]
edges = 60
[[arms]]
name = "a"
policy = "uniform"
"""


@pytest.mark.parametrize(("toml", "message"), [
    ("[gold]\ncount = 0\n", "gold.count"),
    ("[gold]\ncount = 5\nrate = 1.5\n", "gold.rate"),
    ("[gold]\ncount = 5\nrat = 0.5\n", "did you mean"),
    ("[blocking]\nafter = 2\nmin_accuracy = 0.7\n", "blocking needs [gold]"),
    ("[gold]\ncount = 3\n[blocking]\nafter = 4\nmin_accuracy = 0.7\n", "blocking.after"),
])
def test_invalid_mechanics_keys_are_exit_2_one_liners(tmp_path: Path, toml: str, message: str,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(BASE + toml)
    proc = validate_in_process(path, capsys)
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err


@pytest.mark.parametrize(("extra", "message"), [
    ({"workers": {"count": 4, "capacity": 0}}, "workers.capacity"),
    ({"workers": {"count": 4, "session_mean": 0.5}}, "workers.session_mean"),
    ({"workers": {"count": 4, "price": 1, "tiers": {"cuts": [0.5], "prices": [1, 2]}}},
     "not both"),
    ({"workers": {"count": 4, "tiers": {"cuts": [0.5, 0.4], "prices": [1, 2, 3]}}},
     "strictly increasing"),
    ({"workers": {"count": 4, "tiers": {"cuts": [0.5], "prices": [1, 2, 3]}}},
     "len(cuts) + 1"),
    ({"workers": {"count": 4, "capacity": 5, "model": "gaussian-scores"}}, "class labels"),
    ({"budget": {"edges": 60, "money": -1.0}}, "budget.money"),
])
def test_invalid_worker_keys_name_the_key(extra: dict, message: str) -> None:
    with pytest.raises(InputError) as info:
        doc = {"tasks": {"count": 20}, "workers": {"count": 4}, "budget": {"edges": 60},
               "arms": [{"name": "a", "policy": "uniform"}]}
        doc.update(extra)
        if extra.get("workers", {}).get("model") == "gaussian-scores":
            doc["arms"] = [{"name": "a", "policy": "uniform", "inference": "gaussian-em"}]
        parse_scenario(doc, "x.toml")
    assert message in str(info.value) and "\n" not in str(info.value)


ARM_RULES = {"gold": {"count": 8, "rate": 0.3}, "blocking": {"after": 2, "min_accuracy": 0.9}}


def test_an_arm_has_its_own_gold_and_blocking_and_shares_the_world() -> None:
    """A rule-based requester as one arm: only its market buys gold and blocks; both arms run
    on the same world and arrivals (the first labels bought are the same)."""
    sc = scenario({"workers": {"count": 8, "ability": {"alpha": 1, "beta": 1, "low": 0.1}},
                   "budget": {"edges": 120, "batch": 10},
                   "arms": [{"name": "pay everyone", "policy": "uniform"},
                            {"name": "rules", "policy": "uniform", **ARM_RULES}]})
    assert sc.gold is None and sc.arms[0].gold is None and sc.arms[1].gold is not None
    assert sc.for_arm(sc.arms[1]).blocking == sc.arms[1].blocking
    plain, rules = (run_unit(sc, 0, arm) for arm in (0, 1))
    assert plain.rows[-1].gold_labels == 0 and plain.rows[-1].blocked_workers == 0
    assert rules.rows[-1].gold_labels > 0 and rules.rows[-1].blocked_workers > 0
    assert plain.rows[0].error_rate == rules.rows[0].error_rate  # same initial labels


def test_arm_rules_are_checked_and_written_back() -> None:
    with pytest.raises(InputError, match=r"arms\[0\]\.blocking needs \[gold\]"):
        scenario({"arms": [{"name": "a", "policy": "uniform",
                            "blocking": {"after": 1, "min_accuracy": 0.5}}]})
    with pytest.raises(InputError, match=r"arms\[0\]\.blocking\.after must be <= gold\.count"):
        scenario({"arms": [{"name": "a", "policy": "uniform", "gold": {"count": 2},
                            "blocking": {"after": 3, "min_accuracy": 0.5}}]})
    sc = scenario({"arms": [{"name": "a", "policy": "uniform", **ARM_RULES}]})
    again = parse_scenario(tomllib.loads(dumps(sc.resolved_document())), "again.toml")
    assert again.arms[0].gold == sc.arms[0].gold
    assert again.arms[0].blocking == sc.arms[0].blocking
