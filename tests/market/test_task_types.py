"""Task types (``[workers.confusion]`` ``type_shares``, ``type_matrices``): a task of class c
has type z with probability type_shares[c][z], and worker j answers it from row c of
type_matrices[z][j]. Simulated frequencies match the formula per type and per class (within
binomial intervals); the keys are off by default, left out of the record, and checked."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from marketsim.errors import InputError
from marketsim.market.worker_models import draw_world
from marketsim.scenario.parser import parse_scenario
from marketsim.study.seeds import world_rng
from marketsim.workers.task_effects import EffectAnswers
from tests.helpers import edit_table, within

#: Two types: on type 0 worker 0 is good and worker 1 poor, on type 1 the other way round;
#: worker 2 guesses on both.
TYPE_MATRICES = [
    [[[0.95, 0.05], [0.1, 0.9]], [[0.6, 0.4], [0.45, 0.55]], [[0.5, 0.5], [0.5, 0.5]]],
    [[[0.55, 0.45], [0.4, 0.6]], [[0.9, 0.1], [0.02, 0.98]], [[0.5, 0.5], [0.5, 0.5]]],
]
PER_CLASS = [[0.7, 0.3], [0.2, 0.8]]


def scenario(tasks: int = 20_000, shares: Any = PER_CLASS, **extra: Any) -> dict[str, Any]:
    """Every worker labels every task once (the initial graph)."""
    return {
        "scenario": {"seed": 7},
        "tasks": {"count": tasks, "classes": 2, "prior": [0.6, 0.4]},
        "workers": {"count": 3, "model": "confusion",
                    "confusion": {"design": "per-worker", "type_shares": shares,
                                  "type_matrices": TYPE_MATRICES, **extra}},
        "budget": {"edges": tasks * 3, "initial": "bernoulli", "initial_probability": 1.0,
                   "batch": tasks},
        "arms": [{"name": "ds", "policy": "uniform", "inference": "ds"}],
    }


@pytest.mark.parametrize("shares", [PER_CLASS, [[0.35, 0.65]]])
def test_types_follow_their_shares_and_answers_their_type_s_matrix(shares: Any) -> None:
    sc = parse_scenario(scenario(shares=shares), "x")
    world = draw_world(sc.crowd, world_rng(7, 0))
    types = world.params.types
    rows = np.asarray(shares if len(shares) == 2 else shares * 2)
    for c in range(2):  # P(type | class c) = type_shares[c]
        sel = world.truth == c
        within(np.bincount(types[sel], minlength=2) / sel.sum(), rows[c], np.full(2, sel.sum()))
    t, w, y = world.initial_tasks, world.initial_workers, world.initial_labels
    counts = np.zeros((2, 3, 2, 2))  # per type, worker, class: answer shares
    np.add.at(counts, (types[t], w, world.truth[t], y), 1)
    n = counts.sum(axis=3, keepdims=True)
    within(counts / n, np.asarray(TYPE_MATRICES), n)
    # per class accuracy of worker 0 across the types is the shares' mixture of its rows
    mean = np.einsum("cz,zmcl->mcl", rows, np.asarray(TYPE_MATRICES))
    assert np.allclose(world.confusion, mean)


def test_the_market_s_answers_follow_the_same_rows() -> None:
    sc = parse_scenario(scenario(tasks=300), "x")
    world = draw_world(sc.crowd, world_rng(7, 1))
    answers = EffectAnswers(world.params, np.random.default_rng(0), world.truth)
    reps = 40
    counts = np.zeros((2, 3, 2, 2))
    for task in range(300):
        z, c = int(world.params.types[task]), int(world.truth[task])
        for worker in range(3):
            for _ in range(reps):
                counts[z, worker, c, answers.answer(task, worker)[0]] += 1
    n = counts.sum(axis=3, keepdims=True)
    within(counts / n, np.asarray(TYPE_MATRICES), n)


def test_types_are_off_by_default_and_left_out_of_the_record() -> None:
    plain = parse_scenario({**scenario(), "workers": {"count": 3, "model": "confusion"}}, "x")
    assert plain.workers.confusion.type_shares is None
    assert not {"type_shares", "type_matrices"} & set(plain.to_dict()["workers"]["confusion"])
    given = parse_scenario(scenario(), "x").to_dict()["workers"]["confusion"]
    assert {"type_shares", "type_matrices"} <= set(given) and "matrices" not in given


def test_one_type_answers_as_the_plain_matrices() -> None:
    """Metamorphic: one type holding the plain matrices gives the plain matrices' answer
    frequencies (the draws differ: the types path tempers rows through logs)."""
    one = scenario(shares=[[1.0]])
    one["workers"]["confusion"]["type_matrices"] = [TYPE_MATRICES[1]]
    world = draw_world(parse_scenario(one, "x").crowd, world_rng(7, 2))
    counts = np.zeros((3, 2, 2))
    np.add.at(counts, (world.initial_workers, world.truth[world.initial_tasks],
                       world.initial_labels), 1)
    n = counts.sum(axis=2, keepdims=True)
    within(counts / n, np.asarray(TYPE_MATRICES[1]), n)
    assert np.allclose(world.confusion, TYPE_MATRICES[1])


def test_a_type_no_task_takes_changes_nothing() -> None:
    """Metamorphic, bit for bit: adding a type whose share is 0 for every class (whatever its
    matrices) leaves every type, answer and the world's mean matrices as they were."""
    one = scenario(tasks=2000, shares=[[1.0]])
    one["workers"]["confusion"]["type_matrices"] = [TYPE_MATRICES[0]]
    two = scenario(tasks=2000, shares=[[1.0, 0.0], [1.0, 0.0]])
    a = draw_world(parse_scenario(one, "x").crowd, world_rng(7, 4))
    b = draw_world(parse_scenario(two, "x").crowd, world_rng(7, 4))
    assert not b.params.types.any()
    assert np.array_equal(a.initial_labels, b.initial_labels)
    assert np.array_equal(a.truth, b.truth) and np.allclose(a.confusion, b.confusion)


BAD = [
    ({"type_shares": [[0.5, 0.5]], "type_matrices": None},
     "workers.confusion.type_matrices is required with type_shares"),
    ({"type_shares": None}, "workers.confusion.type_shares is required with type_matrices"),
    ({"matrices": TYPE_MATRICES[0]}, "workers.confusion.type_matrices replaces matrices"),
    ({"type_shares": [[0.5, 0.6]]}, "workers.confusion.type_shares rows must sum to 1"),
    ({"type_shares": [[0.2, 0.3, 0.5]]}, "workers.confusion.type_shares rows must have one "
     "share per task type (2"),
    ({"type_shares": [[1.0, 0.0]] * 3}, "workers.confusion.type_shares must have 1 row"),
    ({"type_matrices": [TYPE_MATRICES[0], TYPE_MATRICES[1][:2]]},
     "workers.confusion.type_matrices type 1: must have workers.count = 3 matrices"),
    ({"type_matrices": [TYPE_MATRICES[0], [[[1.0]]] * 3]},
     "workers.confusion.type_matrices type 1: must hold 2×2 matrices"),
    ({"type_matrices": [TYPE_MATRICES[0], [[[0.5, 0.6], [0.5, 0.5]]] * 3]},
     "workers.confusion.type_matrices rows must sum to 1"),
    ({"type_shares": "two"}, "workers.confusion.type_shares"),
    ({"type_shares": [[float("nan"), 1.0]]}, "workers.confusion.type_shares"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_hostile_type_keys_are_one_line_errors(change: dict, message: str) -> None:
    doc = scenario(tasks=10)
    table = doc["workers"]["confusion"]
    edit_table(table, change)
    with pytest.raises(InputError) as err:
        parse_scenario(doc, "x.toml")
    text = str(err.value)
    assert message in text and "\n" not in text, text


def test_types_need_the_per_worker_design() -> None:
    doc = scenario(tasks=10)
    doc["workers"]["confusion"]["design"] = "dirichlet"
    with pytest.raises(InputError, match="type_shares applies only to design 'per-worker'"):
        parse_scenario(doc, "x.toml")


def test_the_block_engine_refuses_task_types() -> None:
    doc = scenario(tasks=10)
    doc["scenario"]["engine"] = "blocks"
    with pytest.raises(InputError, match="task types"):
        parse_scenario(doc, "x.toml")
