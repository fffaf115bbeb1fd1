"""The machine annotators' call service in the market (issue #41): money per call on the
ledger, calls beyond the rate limit waiting, answers after the latency, the books' checks,
and a replicate's machines drawn from its world."""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from marketsim.machines.classifier import Classifier, ClassifierOptions
from marketsim.machines.panel import draw_panel, world_panel
from marketsim.market.audit import check_closed_books
from marketsim.market.ledger import Ledger, LedgerError
from marketsim.market.machine_calls import MachineCalls
from marketsim.scenario.parser import scenario_from_dict
from marketsim.study.seeds import unit_streams, world_rng

N_TASKS, N_WORKERS = 40, 5


def service(*machines: dict, money: float | None = None,
            temperature: float = 0.0) -> tuple[simpy.Environment, MachineCalls, Ledger]:
    env = simpy.Environment()
    ledger = Ledger(np.ones(N_WORKERS), edges=10_000, money=money, capacity=None)
    annotators = [Classifier(ClassifierOptions(name=f"m{i}", temperature=temperature, **m))
                  for i, m in enumerate(machines)]
    truth = np.random.default_rng(0).integers(0, 2, N_TASKS)
    panel = draw_panel(annotators, truth, 2, None, np.random.default_rng(1))
    return env, MachineCalls(env, panel, ledger, first_id=N_WORKERS), ledger


@settings(max_examples=20, deadline=None)
@given(price=st.floats(0, 5), latency=st.floats(0, 3), rate=st.one_of(st.none(),
       st.floats(0.1, 20)), sizes=st.lists(st.integers(0, 12), min_size=1, max_size=4),
       gaps=st.lists(st.floats(0, 2), min_size=4, max_size=4))
def test_money_rate_limit_and_latency_of_every_call(price: float, latency: float,
                                                   rate: float | None, sizes: list[int],
                                                   gaps: list[float]) -> None:
    env, calls, ledger = service({"price": price, "latency": latency, "rate_limit": rate})
    done: list[tuple[float, float, int]] = []

    def requester() -> object:
        for size, gap in zip(sizes, gaps, strict=False):
            yield env.timeout(gap)
            asked = env.now
            request = calls.ask(0, np.arange(size) % N_TASKS)
            labels, _ = yield request
            done.append((asked, env.now, len(labels)))

    env.process(requester())
    env.run()
    total = sum(sizes)
    assert ledger.calls_spent == pytest.approx(total * price) and \
        ledger.spent == pytest.approx(total * price)
    log = calls.labels()
    assert log["tasks"].size == total and (log["workers"] == N_WORKERS).all()
    np.testing.assert_allclose(log["answered"], log["started"] + latency)
    starts = np.sort(log["started"])
    if rate is not None and total > 1:
        assert np.diff(starts).min() >= 1 / rate * (1 - 1e-9)  # calls beyond the limit wait
        # no unit window holds more than ceil(rate) starts (to rounding: starts k / rate apart
        # can land an ulp inside the window's end, e.g. 2 + 4 * (1 / 3) < 2 + 1 / 3 + 1)
        assert max(np.searchsorted(starts, s + 1.0 - 1e-9, side="left") - i
                   for i, s in enumerate(starts)) <= np.ceil(rate)
    if rate is None:
        np.testing.assert_allclose(log["started"], log["asked"])  # never waits
    for asked, answered, size in done:  # a request returns with its last answer
        if size:
            assert answered >= asked + latency - 1e-9
    calls.check_books("the end")
    ledger.stop_buying("the requester asked nothing more")
    check_closed_books(ledger)


def test_money_budget_refuses_calls_it_cannot_pay() -> None:
    env, calls, ledger = service({"price": 2.0}, money=9.0)
    assert calls.affordable(0, 4) and not calls.affordable(0, 5)
    calls.ask(0, np.arange(4))
    env.run()
    assert ledger.money_left() == pytest.approx(1.0)
    with pytest.raises(LedgerError, match="budget.money"):
        ledger.send_calls(1, calls.cost(0, 1), env.now)


def test_books_catch_money_or_answers_that_do_not_add_up() -> None:
    env, calls, ledger = service({"price": 1.0, "latency": 1.0})
    calls.ask(0, np.arange(3))
    env.run()
    calls.check_books("now")
    ledger.calls_spent += 1.0
    with pytest.raises(LedgerError, match="calls' prices"):
        calls.check_books("now")
    ledger.calls_spent -= 1.0
    calls.answered[0] += 1
    with pytest.raises(LedgerError, match="machine answers logged"):
        calls.check_books("now")


def test_two_machines_keep_their_own_rate_limits_and_ids() -> None:
    env, calls, _ = service({"rate_limit": 1.0}, {"rate_limit": 4.0, "latency": 0.5})
    slow, fast = calls.ask(0, np.arange(4)), calls.ask(1, np.arange(4))
    env.run()
    assert slow.value[0].size == 4 and fast.value[0].size == 4
    log = calls.labels()
    np.testing.assert_allclose(log["started"][log["workers"] == N_WORKERS], [0, 1, 2, 3])
    np.testing.assert_allclose(log["answered"][log["workers"] == N_WORKERS + 1],
                               [0.5, 0.75, 1.0, 1.25])
    assert calls.sources() == ("human",) * N_WORKERS + ("m0", "m1")


def test_asking_again_at_temperature_zero_repeats_labels_and_confidences() -> None:
    env, calls, _ = service({})
    first, second = calls.ask(0, np.arange(N_TASKS)), calls.ask(0, np.arange(N_TASKS)[::-1])
    env.run()
    assert np.array_equal(first.value[0], second.value[0][::-1])
    assert np.array_equal(first.value[1], second.value[1][::-1])


def test_a_replicates_machines_follow_its_worlds_task_difficulty() -> None:
    scenario = scenario_from_dict({
        "tasks": {"count": 3000}, "workers": {"count": 20, "model": "glad",
                                              "glad": {"sigma": 1.0}},
        "budget": {"edges": 3000}, "arms": [{"name": "a", "policy": "uniform"}],
        "machines": [{"name": "llm", "accuracy": 0.7, "rho": 0.9}]})
    world = scenario.workers.worker_model.draw(scenario.crowd, world_rng(0, 0), "none", None)
    machines = [Classifier(m) for m in scenario.machines]
    panel = world_panel(machines, world, 2, unit_streams(0, 0, 0).machines)
    labels, _ = panel.ask(0, np.arange(3000))
    hard = world.params.beta < np.median(world.params.beta)  # hard for the humans
    wrong = labels != world.truth
    assert wrong[hard].mean() > 2 * wrong[~hard].mean()
