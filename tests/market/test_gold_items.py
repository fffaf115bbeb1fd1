"""Gold questions are their own items (issue #38, point 7): a gold question is answered with
its own class and its own per-task effects (difficulty, look-alike class, task type), drawn
from the distributions the tasks' are drawn from, never with real task ``q``'s — so a crowd
of perfect workers is never blocked by gold, more gold questions than tasks work with every
worker model, and a worker's gold accuracy is the model's ability on such items."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from marketsim.market.inference import estimator_factory
from marketsim.market.market import Market
from marketsim.market.worker_models import draw_world
from marketsim.policies.registry import make_policy
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario
from marketsim.study.runner import market_setup
from marketsim.study.seeds import unit_streams, world_rng
from tests.helpers import within

N_WORKERS = 6
PERFECT = [[1.0, 0.0], [0.0, 1.0]]
#: Task types a perfect worker needs to be told apart: a class-0 task is of type 0, a class-1
#: task of type 1, and each type's matrix is right on its own class only (so a gold question
#: answered with the type of a real task of the other class is answered at random).
TYPE_SHARES = [[1.0, 0.0], [0.0, 1.0]]
TYPE_MATRICES = [[[[1.0, 0.0], [0.5, 0.5]]] * N_WORKERS, [[[0.5, 0.5], [0.0, 1.0]]] * N_WORKERS]


def doc(workers: dict[str, Any], *, tasks: int = 40, gold: int = 30, rate: float = 0.5,
        blocking: bool = True, prior: list[float] | None = None) -> dict[str, Any]:
    """A small binary market whose arrivals answer a gold question half the time."""
    out: dict[str, Any] = {
        "scenario": {"seed": 11, "replicates": 1},
        "tasks": {"count": tasks, "classes": 2, "prior": prior or [0.5, 0.5]},
        "workers": {"count": N_WORKERS, **workers},
        "budget": {"edges": min(3 * tasks + 60, N_WORKERS * tasks), "batch": 10},
        "gold": {"count": gold, "rate": rate},
        "arms": [{"name": "a", "policy": "uniform", "inference": "ds"}],
    }
    if blocking:
        out["blocking"] = {"after": 3, "min_accuracy": 0.99}
    return out


def confusion(**keys: Any) -> dict[str, Any]:
    """Perfect per-worker confusion matrices with the given effect keys."""
    table: dict[str, Any] = {"design": "per-worker", **keys}
    if "type_matrices" not in keys:
        table["matrices"] = [PERFECT] * N_WORKERS
    return {"model": "confusion", "confusion": table}


#: Perfect crowds whose tasks have strong per-task effects a perfect worker is immune to.
PERFECT_CROWDS = {
    "difficulty σ = 0.01": confusion(sigma=0.01),
    "look-alikes (identity)": confusion(lookalike=PERFECT),
    "task types": confusion(type_shares=TYPE_SHARES, type_matrices=TYPE_MATRICES),
    "types + look-alikes + difficulty": confusion(type_shares=TYPE_SHARES,
                                                  type_matrices=TYPE_MATRICES,
                                                  lookalike=PERFECT, sigma=0.01),
    "communities, difficulty": {"model": "communities", "communities": {
        "confusion": [PERFECT], "concentration": 1e6, "sigma": 0.01, "lookalike": PERFECT}},
    "glad, difficulty": {"model": "glad", "glad": {"alpha": [50.0] * N_WORKERS,
                                                   "sigma": 0.2}},
}


def market(sc: Scenario, replicate: int = 0) -> Market:
    arm = sc.arms[0]
    return Market(market_setup(sc), draw_world(sc.crowd, world_rng(sc.seed, replicate)),
                  make_policy(arm.policy.name, dict(arm.policy.options)),
                  estimator_factory(sc.crowd, arm.inference), unit_streams(sc.seed, replicate, 0))


@pytest.mark.parametrize("crowd", PERFECT_CROWDS.values(), ids=PERFECT_CROWDS.keys())
def test_perfect_workers_are_never_blocked_by_gold(crowd: dict[str, Any]) -> None:
    sc = parse_scenario(doc(crowd), "gold.toml")
    for replicate in range(3):
        m = market(sc, replicate)
        m.run()
        assert m.gold is not None and m.gold.n_answered >= 10
        assert m.workforce.gold_correct.sum() == m.gold.n_answered  # every gold answer right
        assert not m.workforce.blocked.any()


#: Every class-label worker model, with per-task effects where it has them.
EVERY_MODEL = {
    "one-coin": {"model": "one-coin"},
    "spammer-hammer": {"model": "spammer-hammer"},
    "confusion": {"model": "confusion"},
    "confusion, effects": {"model": "confusion", "confusion": {
        "design": "dirichlet", "sigma": 1.5, "lookalike": [[0.7, 0.3], [0.2, 0.8]]}},
    "confusion, types": confusion(type_shares=[[0.3, 0.7], [0.8, 0.2]],
                                  type_matrices=[[[[0.9, 0.1], [0.4, 0.6]]] * N_WORKERS,
                                                 [[[0.6, 0.4], [0.1, 0.9]]] * N_WORKERS],
                                  sigma=0.7),
    "communities, effects": {"model": "communities", "communities": {
        "confusion": [[[0.9, 0.1], [0.2, 0.8]], [[0.6, 0.4], [0.3, 0.7]]],
        "concentration": 20.0, "sigma": 1.0, "lookalike": [[0.85, 0.15], [0.1, 0.9]]}},
    "glad, lognormal": {"model": "glad", "glad": {"sigma": 1.2}},
    "glad, gamma": {"model": "glad", "glad": {"difficulty": "gamma", "shape": 0.8}},
}


@pytest.mark.parametrize("crowd", EVERY_MODEL.values(), ids=EVERY_MODEL.keys())
def test_more_gold_questions_than_tasks_work_with_every_worker_model(
        crowd: dict[str, Any]) -> None:
    sc = parse_scenario(doc(crowd, tasks=10, gold=200, rate=0.9, blocking=False), "gold.toml")
    m = market(sc)
    m.run()
    assert m.gold is not None
    asked = np.asarray(m.gold._questions)
    assert asked.max() >= 10  # questions beyond the task count were answered
    assert m.ledger.bought == sc.budget.edges


@pytest.mark.parametrize("crowd", EVERY_MODEL.values(), ids=EVERY_MODEL.keys())
def test_gold_accuracy_is_the_models_ability_on_gold_items(crowd: dict[str, Any]) -> None:
    """Every worker answers each of 4,000 gold questions (in a world of 5 tasks): their share
    right is their accuracy on an item drawn like a task (``world.ability``: the worker's
    matrix averaged over the class prior and the per-task effects' distributions)."""
    count = 4000
    sc = parse_scenario(doc(crowd, tasks=5, gold=count, prior=[0.35, 0.65]), "gold.toml")
    assert sc.gold is not None
    for replicate in range(2):
        gold = market(sc, replicate).gold  # the market's own gold questions, before it runs
        assert gold is not None
        right = np.array([[gold.answer(q, j) for q in range(count)] for j in range(N_WORKERS)])
        within(right.mean(axis=1), market(sc, replicate).world.ability,
               np.full(N_WORKERS, count))


def test_gold_items_are_drawn_reproducibly_without_redrawing_the_tasks() -> None:
    """The gold questions' own effects come from the gold stream, after their classes: the
    same seed gives the same gold answers, and the real tasks' effects are those of the world
    drawn without gold."""
    sc = parse_scenario(doc(EVERY_MODEL["confusion, effects"], gold=50), "gold.toml")
    runs = []
    for _ in range(2):
        gold = market(sc).gold
        assert gold is not None
        runs.append([gold.answer(q, j) for q in range(50) for j in range(N_WORKERS)])
    assert runs[0] == runs[1]
    plain = parse_scenario({**doc(EVERY_MODEL["confusion, effects"]), "gold": None,
                            "blocking": None}, "plain.toml")
    with_gold, without = market(sc).world.params, market(plain).world.params
    assert np.array_equal(with_gold.looks, without.looks)
    assert np.array_equal(with_gold.beta, without.beta)
