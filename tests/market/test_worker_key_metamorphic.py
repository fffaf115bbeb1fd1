"""Metamorphic relations of the worker keys a calibrated twin writes: scaling every arrival
weight changes nothing (the same labels, bit for bit); one-coin rows with difficulty in
``[workers.confusion]`` are GLAD's world (``[workers.glad] alpha``, the same sigma); a single
community of infinite concentration is the per-worker design with its matrix for everyone."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from marketsim.market.worker_models import draw_world
from marketsim.scenario.parser import parse_scenario
from marketsim.study.seeds import world_rng
from marketsim.study.twin import simulated_labels

ALPHA = [-0.3, 0.8, 2.0]


def base(workers: dict[str, Any], tasks: int = 20_000, initial: str = "bernoulli"
         ) -> dict[str, Any]:
    return {
        "scenario": {"seed": 21},
        "tasks": {"count": tasks, "classes": 2},
        "workers": {"count": 3, **workers},
        "budget": {"edges": tasks * 3, "initial": initial, "initial_probability": 1.0,
                   "batch": tasks},
        "arms": [{"name": "ds", "policy": "uniform", "inference": "ds"}],
    }


def right_share(doc: dict[str, Any], replicate: int) -> tuple[np.ndarray, np.ndarray]:
    """Each worker's share of right answers in the initial graph, and their label counts."""
    world = draw_world(parse_scenario(doc, "x").crowd, world_rng(21, replicate))
    right = world.initial_labels == world.truth[world.initial_tasks]
    n = np.bincount(world.initial_workers, minlength=3)
    return np.bincount(world.initial_workers, right, minlength=3) / n, n


def test_scaling_every_arrival_weight_gives_the_same_labels() -> None:
    docs = []
    for scale in (1.0, 7.5):
        doc = base({"model": "glad", "glad": {"alpha": ALPHA, "sigma": 0.7},
                    "arrivals": {"weights": [scale * w for w in (1.0, 2.0, 5.0)]}},
                   tasks=60, initial="one-per-task")
        doc["budget"] = {"edges": 150, "initial": "one-per-task", "batch": 30}
        docs.append(parse_scenario(doc, "x"))
    (a, truth_a, err_a, times_a), (b, truth_b, err_b, times_b) = (simulated_labels(s)
                                                                  for s in docs)
    assert np.array_equal(truth_a, truth_b) and err_a == err_b
    assert np.array_equal(times_a, times_b)
    for field in ("tasks", "workers", "labels"):
        assert np.array_equal(getattr(a, field), getattr(b, field))


def test_one_coin_rows_with_difficulty_are_glads_world() -> None:
    sigma = 0.9
    coins = [[[float(expit(a)), float(1 - expit(a))], [float(1 - expit(a)), float(expit(a))]]
             for a in ALPHA]
    confusion = base({"model": "confusion",
                      "confusion": {"design": "per-worker", "matrices": coins, "sigma": sigma}})
    glad = base({"model": "glad", "glad": {"alpha": ALPHA, "sigma": sigma}})
    (p, n), (q, _) = right_share(confusion, 0), right_share(glad, 1)
    se = np.sqrt(p * (1 - p) / n + q * (1 - q) / n)
    assert np.all(np.abs(p - q) < 4.5 * se), (p, q)


def test_one_community_of_infinite_concentration_is_the_per_worker_design() -> None:
    matrix = [[0.85, 0.15], [0.35, 0.65]]
    comm = base({"model": "communities",
                 "communities": {"confusion": [matrix], "concentration": 1e9, "sigma": 0.5}})
    same = base({"model": "confusion",
                 "confusion": {"design": "per-worker", "matrices": [matrix] * 3, "sigma": 0.5}})
    (p, n), (q, _) = right_share(comm, 2), right_share(same, 3)
    se = np.sqrt(p * (1 - p) / n + q * (1 - q) / n)
    assert np.all(np.abs(p - q) < 4.5 * se), (p, q)
