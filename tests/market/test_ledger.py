"""The market's books (issue #25, points 1, 2, 4 and 5): the initial graph is bought like any
label, the run ends on its true final spend whatever ends it, what is allowed but unused costs
nothing, and a stuck market names its true cause. The property tests over random scenarios are
in ``test_market_invariants.py``."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.market.audit import check_closed_books
from marketsim.market.gold import GoldQuestions
from marketsim.market.ledger import Ledger, LedgerError
from marketsim.market.market import Market
from marketsim.market.stuck import stuck_cause
from marketsim.policies.worker_aware import declines
from marketsim.scenario.market_specs import GoldSpec
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario
from marketsim.study.runner import run_unit
from tests.market.test_market_worker_aware import LeastLabelled, market, run
from tests.policies.test_worker_aware import state_of, stats


def doc(**tables: Any) -> dict[str, Any]:
    """A small scenario document with ``tables`` merged in (one level deep)."""
    base: dict[str, Any] = {
        "scenario": {"seed": 3, "replicates": 1},
        "tasks": {"count": 40, "classes": 2},
        "workers": {"count": 8},
        "budget": {"edges": 200, "batch": 20},
        "arms": [{"name": "a", "policy": "uniform", "inference": "mv"}],
    }
    for name, value in tables.items():
        if isinstance(value, dict) and isinstance(base.get(name), dict):
            base[name] = base[name] | value
        else:
            base[name] = value
    return base


def parse(**tables: Any) -> Scenario:
    return parse_scenario(doc(**tables), "books.toml")


# --- point 1: the initial graph is part of the market --------------------------------------

def test_money_below_the_one_per_task_initial_graph_is_refused_at_parse() -> None:
    with pytest.raises(InputError, match=r"budget\.money = 30 cannot pay the initial graph: "
                       r"40 labels .*cost 40"):
        parse(budget={"money": 30})
    parse(budget={"money": 40})  # exactly the initial graph: allowed


def test_money_check_uses_the_cheapest_tier_and_the_arms_own_initial_graph() -> None:
    tiers = {"cuts": [0.7], "prices": [2.0, 3.0]}
    with pytest.raises(InputError, match=r"budget\.money = 79 .*cost at least 80"):
        parse(workers={"tiers": tiers}, budget={"money": 79})
    # An arm of its own with an empty initial graph is fine; one with one-per-task is named.
    arms = [{"name": "a", "policy": "uniform", "initial": "none"}]
    parse(budget={"money": 10, "initial": "bernoulli"}, arms=arms)
    arms = [{"name": "a", "policy": "uniform", "initial": "one-per-task"}]
    with pytest.raises(InputError, match=r"arms\[0\]\.initial = 'one-per-task'"):
        parse(budget={"money": 10, "initial": "none"}, arms=arms)


def test_capacity_below_the_initial_graphs_labels_per_worker_is_refused_at_parse() -> None:
    # 40 tasks round-robin over 8 workers: 5 labels each.
    with pytest.raises(InputError, match=r"workers\.capacity = 4 is below the 5 labels"):
        parse(workers={"capacity": 4})
    parse(workers={"capacity": 5})


def test_validate_refuses_it_in_one_line(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[tasks]\ncount = 1080\n[workers]\ncount = 30\n[budget]\nedges = 5000\n'
                    'money = 700\n[[arms]]\nname = "u"\npolicy = "uniform"\n')
    assert main(["validate", str(path)]) == 2
    stderr = capsys.readouterr().err
    assert len(stderr.strip().splitlines()) == 1
    assert "budget.money = 700 cannot pay the initial graph" in stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("seed", range(4))
def test_a_random_initial_graph_is_cut_to_capacity_and_money(seed: int) -> None:
    # ~160 pairs drawn, cut to budget.edges = 48 by the world, to <= 6 per worker by the
    # capacity, to 40 by the money: the run ends on its initial graph.
    sc = parse(scenario={"seed": seed}, workers={"capacity": 6},
               budget={"initial": "bernoulli", "initial_probability": 0.5, "money": 40,
                       "edges": 48})
    m = run(_market(sc))
    assert m.ledger.handed.max() <= 6
    assert m.curve[-1].money == m.ledger.spent == m.bought <= 40


def _market(sc: Scenario) -> Market:
    from marketsim.policies.simple import UniformPolicy
    return market(UniformPolicy(), sc)


def test_ledger_cuts_the_initial_graph_per_worker_in_order() -> None:
    ledger = Ledger(np.array([1.0, 2.0, 1.0]), edges=100, money=None, capacity=2)
    keep = ledger.buy_initial(np.array([0, 0, 1, 0, 2, 1, 1]))
    assert keep.tolist() == [True, True, True, False, True, True, False]
    assert ledger.handed.tolist() == [2, 2, 1] and ledger.spent == 2 + 4 + 1
    money = Ledger(np.array([1.0, 2.0]), edges=100, money=4.0, capacity=None)
    assert money.buy_initial(np.array([0, 1, 0, 1])).tolist() == [True, True, True, False]
    assert money.spent == 4.0


# --- point 2: whatever ends the run, it ends on its true final spend ----------------------

@pytest.mark.parametrize("money", [100, 120, 125, 140, 200])
def test_money_ending_at_a_refresh_records_the_last_point_once(money: float) -> None:
    # Money a multiple of batch x price (100, 120, 140) ends the run right at a refresh.
    m = run(_market(parse(budget={"money": money, "edges": 200, "batch": 20})))
    edges = [p.edges for p in m.curve]
    assert edges == sorted(set(edges)), edges
    assert edges[-1] == m.bought == money
    assert m.curve[-1].money == m.ledger.spent == money


def test_money_end_leaves_no_damaged_unit_in_the_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "money.toml"
    path.write_text('[scenario]\nreplicates = 2\n[tasks]\ncount = 100\n[workers]\ncount = 10\n'
                    '[budget]\nedges = 1000\nbatch = 100\nmoney = 500\n[[arms]]\nname = "u"\n'
                    'policy = "uniform"\ninference = "mv"\n')
    run_dir = tmp_path / "run"
    assert main(["run", str(path), "--quiet", "--no-figures", "--out", str(run_dir)]) == 0
    rows = (run_dir / "curves.csv").read_text().splitlines()[1:]
    keys = [tuple(r.split(",")[:3]) for r in rows]
    assert len(keys) == len(set(keys)) == 10  # 100..500 twice
    capsys.readouterr()
    assert main(["report", str(run_dir), "--no-figures"]) == 0
    assert "damaged" not in capsys.readouterr().err


# --- the ledger refuses what no rule may allow ------------------------------------------------

def test_ledger_refuses_each_broken_limit_as_an_internal_error() -> None:
    ledger = Ledger(np.array([1.0, 1.0]), edges=3, money=2.5, capacity=1)
    ledger.hand_out(0, 1.0)
    with pytest.raises(LedgerError, match="capacity"):
        ledger.hand_out(0, 1.0)
    with pytest.raises(LedgerError, match="time went back"):
        ledger.hand_out(1, 0.5)
    ledger.close(1)
    with pytest.raises(LedgerError, match="blocked or leaving"):
        ledger.hand_out(1, 2.0)
    with pytest.raises(LedgerError, match="never handed"):
        ledger.receive(1, 2.0)
    ledger.receive(0, 2.0)
    # 1 of 3 labels bought: closing the books needs the recorded reason to stop early
    with pytest.raises(LedgerError, match="no recorded reason to stop early"):
        check_closed_books(ledger)
    ledger.stop_buying("every worker is stopped: 1 at workers.capacity = 1")
    check_closed_books(ledger)
    in_flight = Ledger(np.ones(2), edges=3, money=None, capacity=None)
    in_flight.hand_out(0, 0.0)
    with pytest.raises(LedgerError, match="1 labels still in flight"):
        check_closed_books(in_flight)
    edges = Ledger(np.ones(2), edges=1, money=None, capacity=None)
    edges.hand_out(0, 0.0)
    with pytest.raises(LedgerError, match=r"beyond budget\.edges = 1"):
        edges.hand_out(1, 0.0)


def test_a_rule_that_lets_a_label_through_stops_the_run_with_an_internal_error() -> None:
    class Careless(Market):
        """A market whose rules let everyone work (the bug the ledger must catch)."""

    sc = parse(budget={"money": 60, "edges": 200, "batch": 20})
    m = _market(sc)
    m.__class__ = Careless
    m.workforce.may_work = lambda worker: True  # type: ignore[method-assign]
    with pytest.raises(LedgerError, match=r"internal error.*budget\.money"):
        run(m)


# --- point 4: cost follows use ----------------------------------------------------------------

def test_a_gold_hand_out_costs_what_the_worker_answered_not_gold_count() -> None:
    gold = GoldQuestions(GoldSpec(count=10_000_000, rate=0.5), np.zeros(10_000_000, dtype=np.int64),
                         None, 3, np.random.default_rng(0))  # type: ignore[arg-type]
    tracemalloc.start()
    picks = [gold.pick(1) for _ in range(50)]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1_000_000  # an arange(gold.count) is 80 MB
    assert len(set(picks)) == 50 and all(0 <= q < 10_000_000 for q in picks)


def test_pick_draws_the_same_questions_as_a_uniform_draw_among_the_free_ones() -> None:
    count = 30
    gold = GoldQuestions(GoldSpec(count=count, rate=0.5), np.zeros(count, dtype=np.int64), None, 1,
                         np.random.default_rng(7))  # type: ignore[arg-type]
    rng = np.random.default_rng(7)
    taken: set[int] = set()
    for _ in range(count):
        free = np.setdiff1d(np.arange(count), np.fromiter(taken, np.int64, len(taken)))
        expected = int(free[rng.integers(free.size)])
        taken.add(expected)
        assert gold.pick(0) == expected


def test_a_gold_aware_refit_adds_only_the_answered_questions() -> None:
    sc = parse(gold={"count": 1_000_000, "rate": 0.2}, budget={"edges": 120, "batch": 20},
               arms=[{"name": "a", "policy": "uniform", "inference": "one-coin"}])
    m = run(_market(sc))
    assert m.gold is not None and m.gold.n_answered > 0
    combined, known = m.gold.with_tasks(m.log.view())
    answered = len(set(m.gold._questions))
    assert combined.n_tasks == sc.tasks.count + answered
    assert (known[sc.tasks.count:] == m.gold.truth[np.unique(m.gold._questions)]).all()


@pytest.mark.parametrize(("tasks", "workers", "most_bytes"), [
    # budget.edges = 10**7: a log of that many labels would be 240 MB
    (1_000, 10_000, 100_000_000),
    # 10**10 (240 GB); 101,500 labels under tracemalloc take about 11 s alone, and the market
    # above allocates for budget.edges just the same if it does at all
    pytest.param(100_000, 100_000, 1_000_000_000, marks=pytest.mark.slow),
])
def test_budget_edges_at_its_maximum_with_a_money_budget_allocates_what_money_buys(
        tasks: int, workers: int, most_bytes: int) -> None:
    money = tasks + 1_500  # the one-per-task initial graph, then 1,500 labels more
    sc = parse(tasks={"count": tasks}, workers={"count": workers},
               budget={"edges": tasks * workers, "batch": 500, "money": money})
    assert sc.max_labels == money
    tracemalloc.start()
    m = run(_market(sc), seconds=180)  # the deadline only catches a hang
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert m.bought == money
    assert peak < most_bytes


# --- point 5: a stuck market names its true cause --------------------------------------------

def test_workers_left_who_labelled_every_task_end_the_run_as_a_recorded_stop() -> None:
    # 10 tasks, 3 workers, 30 labels: possible only if nobody is stopped. Seed 2 blocks one
    # worker on the gold question; the two others label every task, and then nothing is left:
    # the market ran out of workers (issue #31: a recorded result, no longer an error).
    sc = parse(scenario={"seed": 2}, tasks={"count": 10}, workers={"count": 3},
               budget={"edges": 30, "batch": 5, "initial": "none"},
               gold={"count": 1, "rate": 1.0}, blocking={"after": 1, "min_accuracy": 1.0})
    m = run(_market(sc))
    assert m.stop is not None and m.stop.causes == ("blocking",) and m.stop.out_of_workers
    assert "each labelled all 10 tasks" in m.stop.detail
    assert "1 blocked by [blocking]" in m.stop.detail
    assert m.curve[-1].edges == m.stop.labels == m.bought < 30
    check_closed_books(m.ledger, m.curve[-1].edges, m.curve[-1].money)


def test_stuck_cause_is_not_the_policy_when_no_task_is_left_for_anyone() -> None:
    sc = parse(tasks={"count": 10}, workers={"count": 3},
               budget={"edges": 30, "batch": 5, "initial": "none"})
    m = market(LeastLabelled(), sc)
    m.ledger.labels[:] = 10
    cause = stuck_cause(10, m.ledger, m.workforce, None, [0, 1, 2], "policy 'p'", True)
    assert "already labelled all 10 tasks" in cause and "declined" not in cause
    m.ledger.labels[1] = 3
    assert "policy 'p' declined them all" in stuck_cause(10, m.ledger, m.workforce, None,
                                                         [0, 1, 2], "policy 'p'", True)


def test_decline_rules_count_only_workers_the_market_may_still_use() -> None:
    # The only worker above the cut has left (or cannot be paid): the others must not be
    # declined for them; before, a departed or unaffordable worker kept the cut closed.
    ability = np.array([0.9, 0.6, 0.6])
    gone = stats(3, available=np.array([False, True, True]))
    assert not declines(1, ability, 0.8, state_of(np.full((4, 2), 0.5), ability, workers=gone))
    here = stats(3, available=np.array([True, True, True]))
    assert declines(1, ability, 0.8, state_of(np.full((4, 2), 0.5), ability, workers=here))


def test_a_departed_good_worker_does_not_stall_a_declining_policy() -> None:
    # Reproducer found by the invariant property test: oracle-workers declined everyone left
    # because a better worker had left the market ("declined them all", 10 labels unbought).
    sc = parse_scenario({
        "scenario": {"seed": 24743, "replicates": 1}, "tasks": {"count": 18, "classes": 2},
        "workers": {"count": 6, "service": {"mean": 1.5}, "capacity": 5, "session_mean": 1.5},
        "budget": {"edges": 18, "batch": 11, "initial": "none"},
        "arms": [{"name": "a", "policy": "oracle-workers", "inference": "one-coin"}],
        "gold": {"count": 1, "rate": 0.1, "in_inference": False}}, "stall.toml")
    unit = run_unit(sc, 0, 0)  # the rules stopped everyone: recorded, not an error
    assert unit.stop is not None and "declined" not in unit.stop.detail
    assert "every worker is stopped" in unit.stop.detail
    assert unit.rows[-1].edges == unit.stop.labels < 18
