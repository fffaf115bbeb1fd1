"""Arrivals from a deck (``[workers.arrivals] order = "deck"``): at the deck's size in labels
every worker gives exactly their count (initial graph included, both engines), at half of it
each count is a hypergeometric thinning (not the wider Poisson-like spread of independent
arrivals), and the default order draws what it always drew."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from marketsim.scenario.parser import parse_scenario
from marketsim.study.twin import simulated_labels

#: A sparse crowd as the CF file's: 60 workers of one label, 40 of 2 to 39 labels.
COUNTS = np.concatenate([np.ones(60, dtype=np.int64),
                         np.random.default_rng(1).integers(2, 40, 40)])
TASKS = 200


def document(edges: int, order: str | None, engine: str = "events", policy: str = "uniform",
             seed: int = 3) -> dict[str, Any]:
    arrivals: dict[str, Any] = {"weights": [int(c) for c in COUNTS]}
    if order is not None:
        arrivals["order"] = order
    return {"scenario": {"seed": seed, "engine": engine},
            "tasks": {"count": TASKS, "prior": [0.6, 0.4]},
            "workers": {"count": int(COUNTS.size), "arrivals": arrivals},
            "budget": {"edges": edges}, "output": {"graph": False},
            "arms": [{"name": "a", "policy": policy, "initial": "one-per-task"}]}


def worker_counts(doc: dict[str, Any], replicate: int = 0) -> np.ndarray:
    labels = simulated_labels(parse_scenario(doc, "x"), replicate, 0, times=False)[0]
    return np.bincount(labels.workers, minlength=COUNTS.size)


@pytest.mark.parametrize("engine", ["events", "blocks"])
@pytest.mark.parametrize("policy", ["uniform", "entropy-greedy"])
def test_at_the_decks_size_every_worker_gives_their_count(engine: str, policy: str) -> None:
    got = worker_counts(document(int(COUNTS.sum()), "deck", engine, policy))
    assert np.array_equal(got, COUNTS)


def test_independent_arrivals_miss_many_one_label_workers() -> None:
    """What the deck fixes: by weight, about e^-1 of the one-label workers never come."""
    got = worker_counts(document(int(COUNTS.sum()), None))
    assert (got[COUNTS == 1] == 0).sum() > 10


def spread(order: str | None) -> float:
    """Mean squared gap of each worker's count at half the deck from its share, over the
    hypergeometric variance (about 1 for a deck; about 2 for independent arrivals, whose
    counts are binomial: no finite-population factor)."""
    total, edges = int(COUNTS.sum()), int(COUNTS.sum()) // 2
    f = edges / total
    var = COUNTS * f * (1 - COUNTS / total) * (total - edges) / (total - 1)
    stats = [((worker_counts(document(edges, order, seed=s)) - COUNTS * f) ** 2 / var).mean()
             for s in range(4)]
    return float(np.mean(stats))


def test_at_half_the_deck_counts_are_a_hypergeometric_thinning() -> None:
    assert 0.7 < spread("deck") < 1.35
    assert spread(None) > 1.6


def test_default_order_is_independent_bytes() -> None:
    """``order = "independent"`` is the default: the same labels as a file without the key."""
    a = simulated_labels(parse_scenario(document(600, None), "x"), 0, 0, times=False)[0]
    b = simulated_labels(parse_scenario(document(600, "independent"), "x"), 0, 0,
                         times=False)[0]
    assert np.array_equal(a.workers, b.workers) and np.array_equal(a.labels, b.labels)
