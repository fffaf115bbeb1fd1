"""Workers who learn, tire and drift (``[workers.dynamics]``): the simulated frequencies of
right answers in a market match the formula

    P(right) = σ(logit p_j + learning·(1 − e^(−n/learning_labels)) − fatigue·s + D_j(n)),

per bin of labels done (n, learning), of position in the session (s, fatigue) and of n for the
drift (D_j(n) ~ N(0, n·drift²) averaged over), and the static formula is rejected in the same
bins (so each check can fail)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.special import expit, logit

from marketsim.market.inference import estimator_factory
from marketsim.market.market import Market
from marketsim.market.worker_models import draw_world
from marketsim.policies.registry import make_policy
from marketsim.scenario.parser import parse_scenario
from marketsim.study.runner import market_setup
from marketsim.study.seeds import unit_streams, world_rng
from marketsim.workers.draws import one_coin_confusion
from marketsim.workers.dynamics import DynamicAnswers, DynamicsSpec, shifted
from marketsim.workers.one_coin import OneCoinAnswers


def doc(dynamics: dict[str, Any], *, tasks: int = 1500, workers: int = 30,
        edges: int = 30_000, model: str = "one-coin", service: float = 20.0) -> dict:
    return {
        "scenario": {"seed": 5},
        "tasks": {"count": tasks},
        "workers": {"count": workers, "model": model, "dynamics": dynamics,
                    "ability": {"alpha": 3, "beta": 2, "low": 0.3},
                    "service": {"mean": service}},
        "budget": {"edges": edges, "initial": "none", "batch": edges},
        "arms": [{"name": "mv", "policy": "uniform", "inference": "mv"}],
    }


def run(document: dict, replicate: int = 0) -> Market:
    sc = parse_scenario(document, "dyn.toml")
    market = Market(market_setup(sc), draw_world(sc.crowd, world_rng(sc.seed, replicate)),
                    make_policy("uniform", {}), estimator_factory(sc.crowd, sc.arms[0].inference),
                    unit_streams(sc.seed, replicate, 0), keep_graph=True)
    market.run()
    return market


def answered(market: Market) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                       np.ndarray]:
    """Per label in the order given: worker, right or wrong, the worker's base probability p,
    n (their earlier answers) and the time it came in."""
    view = market.log.view()
    tasks, workers = view.tasks, view.workers
    right = view.labels == market.world.truth[tasks]
    p = market.world.confusion[workers, market.world.truth[tasks], market.world.truth[tasks]]
    graph = market.graph
    assert graph is not None
    times = np.array([graph.edges[f"t{i}", f"w{j}"]["time"] for i, j in
                      zip(tasks.tolist(), workers.tolist(), strict=True)])
    n = np.zeros(workers.size, dtype=np.int64)
    seen: dict[int, int] = {}
    for idx, j in enumerate(workers.tolist()):
        n[idx] = seen.get(j, 0)
        seen[j] = n[idx] + 1
    return workers, right, p, n, times


def sessions(workers: np.ndarray, times: np.ndarray, rest: float) -> np.ndarray:
    """Each label's position in its worker's session (a gap longer than ``rest`` restarts)."""
    s = np.zeros(workers.size, dtype=np.int64)
    last: dict[int, tuple[float, int]] = {}
    for idx, (j, t) in enumerate(zip(workers.tolist(), times.tolist(), strict=True)):
        prev = last.get(j)
        s[idx] = 0 if prev is None or t - prev[0] > rest else prev[1] + 1
        last[j] = (t, int(s[idx]))
    return s


def by_bins(right: np.ndarray, expected: np.ndarray, groups: np.ndarray,
            static: np.ndarray) -> None:
    """Per group: the share of right answers lies within 4.5 binomial standard errors of the
    formula's mean probability; and somewhere the static model (no dynamics) is off by more
    than 8 of them (the effect is large enough for the test to see it)."""
    worst_static = 0.0
    for g in np.unique(groups):
        sel = groups == g
        exp = expected[sel].mean()
        se = np.sqrt(max(exp * (1 - exp), 1e-4) / sel.sum())
        assert abs(right[sel].mean() - exp) < 4.5 * se, (g, right[sel].mean(), exp, sel.sum())
        worst_static = max(worst_static, abs(right[sel].mean() - static[sel].mean()) / se)
    assert worst_static > 8, worst_static


def test_learning_accuracy_against_labels_done_matches_the_formula() -> None:
    spec = {"learning": 2.0, "learning_labels": 200.0}
    workers, right, p, n, _ = answered(run(doc(spec)))
    expected = expit(logit(p) + 2.0 * (1 - np.exp(-n / 200.0)))
    groups = np.minimum(n // 100, 9)  # labels done: 0-99, 100-199, ..., 900 and more
    by_bins(right, expected, groups, p)
    early, late = right[n < 100].mean(), right[n >= 600].mean()
    assert late > early + 0.1, (early, late)


def test_fatigue_accuracy_against_position_in_session_matches_the_formula() -> None:
    rest = 60.0  # workers arrive every 30 time units on average: sessions of about 7 answers
    spec = {"fatigue": 0.15, "rest": rest}
    market = run(doc(spec))
    workers, right, p, n, times = answered(market)
    s = sessions(workers, times, rest)
    assert s.max() >= 15 and (s == 0).sum() > 1000  # many sessions, some long
    expected = expit(logit(p) - 0.15 * s)
    by_bins(right, expected, np.minimum(s, 12), p)


def test_fatigue_without_rest_runs_over_the_whole_stay() -> None:
    spec = {"fatigue": 0.002}
    workers, right, p, n, times = answered(run(doc(spec, edges=20_000)))
    assert np.array_equal(sessions(workers, times, np.inf), n)
    by_bins(right, expected=expit(logit(p) - 0.002 * n), groups=np.minimum(n // 100, 6),
            static=p)


def test_drift_is_a_random_walk_of_the_logit_and_accuracy_follows_it() -> None:
    drift = 0.12
    market = run(doc({"drift": drift}, workers=200, tasks=800, edges=60_000))
    walk = np.asarray(market.answers.walk)  # type: ignore[attr-defined]
    done = np.asarray(market.answers.done)  # type: ignore[attr-defined]
    # D_j(n) ~ N(0, n drift²): the standardised walks have variance 1
    z = walk / (drift * np.sqrt(done))
    assert abs(z.var() - 1.0) < 4 * np.sqrt(2 / z.size) and abs(z.mean()) < 4 / np.sqrt(z.size)
    workers, right, p, n, _ = answered(market)
    # E over the walk of σ(logit p + D), D ~ N(0, n drift²), by Gauss-Hermite quadrature
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    expected = (expit(logit(p)[:, None] + drift * np.sqrt(n)[:, None] * nodes[None, :])
                @ weights) / weights.sum()
    by_bins(right, expected, np.minimum(n // 60, 4), p)


def test_all_coefficients_zero_give_the_models_own_answers_draw_for_draw() -> None:
    for model in ("one-coin", "glad", "confusion", "spammer-hammer"):
        plain = doc({}, model=model, edges=3000, tasks=300)
        del plain["workers"]["dynamics"]
        if model != "one-coin":
            del plain["workers"]["ability"]
        zero = {**plain, "workers": {**plain["workers"],
                                     "dynamics": {"learning": 0.0, "fatigue": 0.0,
                                                  "drift": 0.0, "rest": 5.0}}}
        a, b = run(plain), run(zero)
        assert isinstance(b.answers, DynamicAnswers)
        assert np.array_equal(a.log.view().labels, b.log.view().labels), model
        assert a.curve == b.curve, model


def test_a_shift_keeps_the_wrong_classes_proportions_and_the_sure_workers() -> None:
    assert shifted(0.7, 0.0) == 0.7 and shifted(1.0, 5.0) == 1.0 and shifted(0.0, -3.0) == 0.0
    assert shifted(0.5, 1.0) == pytest.approx(expit(1.0))
    confusion = one_coin_confusion(np.array([0.6]), 3)
    answers = OneCoinAnswers(np.zeros(60_000, dtype=np.int64), confusion, 3,
                             np.random.default_rng(1))
    labels = np.array([answers.answer_shifted(i, 0, 1.5)[0] for i in range(60_000)])
    p = expit(logit(0.6) + 1.5)
    assert abs((labels == 0).mean() - p) < 4.5 * np.sqrt(p * (1 - p) / labels.size)
    wrong = labels[labels != 0]
    assert abs((wrong == 1).mean() - 0.5) < 4.5 * np.sqrt(0.25 / wrong.size)


def test_confusion_rows_keep_their_wrong_class_proportions_under_a_shift() -> None:
    sc = parse_scenario({**doc({"learning": 1.0}, model="confusion", tasks=50, edges=100),
                         "tasks": {"count": 50, "classes": 3}}, "c.toml")
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    world.truth[:] = 0
    from_model = world.model.answers(world, 3, np.random.default_rng(2))
    row = world.confusion[0, 0]
    labels = np.array([from_model.answer_shifted(0, 0, -1.0)[0]  # type: ignore[attr-defined]
                       for _ in range(40_000)])
    p = expit(logit(row[0]) - 1.0)
    assert abs((labels == 0).mean() - p) < 4.5 * np.sqrt(p * (1 - p) / labels.size)
    share = (labels == 1).sum() / (labels != 0).sum()
    target = row[1] / (row[1] + row[2])
    assert abs(share - target) < 4.5 * np.sqrt(target * (1 - target) / (labels != 0).sum())


def test_a_new_session_starts_after_rest_and_learning_counts_every_answer() -> None:
    clock = [0.0]
    spec = DynamicsSpec(learning=1.0, learning_labels=10.0, fatigue=0.5, rest=3.0)
    base = OneCoinAnswers(np.zeros(10, dtype=np.int64), one_coin_confusion(np.array([0.7]), 2),
                          2, np.random.default_rng(0))
    dyn = DynamicAnswers(base, spec, 1, np.random.default_rng(0), lambda: clock[0])
    shifts = []
    for t in (0.0, 1.0, 2.0, 10.0, 11.0):  # a gap of 8 > rest after the third answer
        clock[0] = t
        shifts.append(dyn.shift(0, t))
        dyn.answer(0, 0)
    n, s = np.arange(5), np.array([0, 1, 2, 0, 1])
    assert np.allclose(shifts, 1.0 * (1 - np.exp(-n / 10.0)) - 0.5 * s)


def test_dynamics_apply_to_confusion_workers_with_look_alike_tasks_and_difficulty() -> None:
    """Task effects answer through their own path: all coefficients 0 give its answers draw
    for draw, and learning raises the share of right answers."""
    plain = doc({}, model="confusion", edges=3000, tasks=300)
    del plain["workers"]["dynamics"], plain["workers"]["ability"]
    plain["workers"]["confusion"] = {"lookalike": [[0.8, 0.2], [0.1, 0.9]], "sigma": 0.8}
    zero = {**plain, "workers": {**plain["workers"], "dynamics": {"learning": 0.0}}}
    learn = {**plain, "workers": {**plain["workers"], "dynamics": {"learning": 3.0,
                                                                   "learning_labels": 10}}}
    a, b, c = run(plain), run(zero), run(learn)
    assert isinstance(b.answers, DynamicAnswers)
    assert np.array_equal(a.log.view().labels, b.log.view().labels)

    def right(m: Market) -> float:
        view = m.log.view()
        return float(np.mean(view.labels == m.world.truth[view.tasks]))

    assert right(c) > right(a) + 0.05
