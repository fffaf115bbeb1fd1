"""Communities of workers sharing a confusion bias (``workers.model = "communities"``, Venanzi
et al. WWW 2014): membership follows the weights, each community's matrix is recovered from
its members' labels (the Dirichlet mean), members spread around it as Dirichlet(concentration
x row) says, and bad keys are one-line errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from marketsim.errors import InputError
from marketsim.market.worker_models import draw_world
from marketsim.scenario.parser import parse_scenario
from marketsim.study.seeds import world_rng
from marketsim.workers.communities import draw_members
from tests.helpers import edit_table

COMMUNITIES = [[[0.9, 0.1], [0.2, 0.8]], [[0.55, 0.45], [0.05, 0.95]]]


def scenario(workers: int = 60, tasks: int = 3000, **table: Any) -> dict[str, Any]:
    """Every worker labels every task once (the initial graph)."""
    comm = {"confusion": COMMUNITIES, "weights": [2, 1], "concentration": 40, **table}
    return {
        "scenario": {"seed": 9},
        "tasks": {"count": tasks, "classes": 2},
        "workers": {"count": workers, "model": "communities", "communities": comm},
        "budget": {"edges": tasks * workers, "initial": "bernoulli",
                   "initial_probability": 1.0, "batch": tasks},
        "arms": [{"name": "ds", "policy": "uniform", "inference": "ds"}],
    }


def test_each_community_matrix_is_recovered_from_its_members_labels() -> None:
    sc = parse_scenario(scenario(), "x")
    rng = world_rng(9, 0)
    rng.choice(2, size=3000, p=[0.5, 0.5])  # the world draws the classes first
    community, own = draw_members(sc.workers.communities, sc.workers.count, rng)
    world = draw_world(sc.crowd, world_rng(9, 0))
    assert np.allclose(world.confusion, own)  # the same draw, the same stream
    counts = np.zeros((2, 2, 2))
    np.add.at(counts, (community[world.initial_workers], world.truth[world.initial_tasks],
                       world.initial_labels), 1)
    shares = counts / counts.sum(axis=2, keepdims=True)
    # Between-member spread dominates the error of a community's share: its standard error
    # is the Dirichlet sd of a member's row over sqrt(members).
    for m in range(2):
        members = int((community == m).sum())
        row = np.asarray(COMMUNITIES[m])
        sd = np.sqrt(row * (1 - row) / (40 + 1) / members + row * (1 - row) / counts[m].sum())
        assert np.all(np.abs(shares[m] - row) < 4.5 * sd), (m, shares[m], row)


def test_membership_follows_the_weights_and_members_spread_as_dirichlet() -> None:
    sc = parse_scenario(scenario(workers=6000, tasks=2), "x")
    community, own = draw_members(sc.workers.communities, sc.workers.count, world_rng(9, 1))
    share = np.mean(community == 0)
    assert abs(share - 2 / 3) < 4.5 * np.sqrt(2 / 9 / 6000)
    for m in range(2):
        rows = own[community == m]  # (members, K, K)
        base = np.asarray(COMMUNITIES[m])
        n = rows.shape[0]
        assert np.all(np.abs(rows.mean(axis=0) - base) < 4.5 * np.sqrt(base * (1 - base)
                                                                     / 41 / n) + 1e-9)
        assert np.allclose(rows.var(axis=0), base * (1 - base) / 41, rtol=0.15, atol=1e-4)


def test_a_large_concentration_makes_every_member_answer_like_the_community() -> None:
    """Metamorphic: concentration -> infinity is the community's matrix for every member."""
    sc = parse_scenario(scenario(workers=30, tasks=2, concentration=1e9), "x")
    community, own = draw_members(sc.workers.communities, sc.workers.count, world_rng(9, 2))
    assert np.allclose(own, np.asarray(COMMUNITIES)[community], atol=1e-3)


def test_task_effects_apply_to_communities() -> None:
    sc = parse_scenario(scenario(workers=4, tasks=200, sigma=0.5,
                                 lookalike=[[0.8, 0.2], [0.1, 0.9]]), "x")
    world = draw_world(sc.crowd, world_rng(9, 3))
    assert world.params is not None and world.params.beta.shape == (200,)


@pytest.mark.parametrize(("table", "message"), [
    ({"confusion": None}, "workers.communities.confusion is required"),
    ({"confusion": [[[0.9, 0.2], [0.2, 0.8]]]}, "workers.communities.confusion rows must sum to 1"),
    ({"confusion": [[[0.9, 0.1, 0.0], [0.2, 0.8, 0.0]]], "weights": None},
     "workers.communities.confusion must hold 2×2 matrices"),
    ({"confusion": [[[1.5, -0.5], [0.2, 0.8]]]}, "entries must be probabilities in"),
    ({"confusion": [[["a", 0.5], [0.2, 0.8]]]}, "workers.communities.confusion"),
    ({"confusion": [[[float("nan"), 0.5], [0.2, 0.8]]]}, "workers.communities.confusion"),
    ({"confusion": 0.5}, "workers.communities.confusion"),
    ({"weights": [1, 2, 3]}, "workers.communities.weights must have one entry per community"),
    ({"weights": [1, -2]}, "workers.communities.weights entries must be finite numbers > 0"),
    ({"weights": [1, float("nan")]}, "workers.communities.weights"),
    ({"weights": "equal"}, "workers.communities.weights"),
    ({"concentration": 0}, "workers.communities.concentration must be > 0"),
    ({"concentration": -1}, "workers.communities.concentration must be > 0"),
    ({"concentration": float("nan")}, "workers.communities.concentration"),
    ({"concentration": "big"}, "workers.communities.concentration must be a number"),
    ({"sigma": -0.5}, "workers.communities.sigma must be >= 0"),
    ({"sigma": float("nan")}, "workers.communities.sigma"),
    ({"lookalike": [[0.5, 0.5]]}, "workers.communities.lookalike must be 2×2"),
    ({"lookalike": [[0.5, 0.6], [0.0, 1.0]]}, "workers.communities.lookalike rows must sum"),
    ({"members": 3}, "workers.communities.members"),
])
def test_bad_community_keys_are_one_line_errors(table: dict, message: str) -> None:
    doc = scenario(workers=5, tasks=20)
    comm = doc["workers"]["communities"]
    edit_table(comm, table)
    with pytest.raises(InputError) as info:
        parse_scenario(doc, "x")
    text = str(info.value)
    assert message in text and "\n" not in text, text


def test_the_table_only_applies_with_its_model() -> None:
    doc = scenario(workers=5, tasks=20)
    doc["workers"]["model"] = "confusion"
    with pytest.raises(InputError, match="only applies with workers.model = 'communities'"):
        parse_scenario(doc, "x")
