"""The ``crowd`` design of ``[workers.confusion]``: every worker's rows drawn around one crowd
matrix (Dirichlet(crowd_concentration · crowd_matrix[c])), so the classes the crowd confuses
in pairs are the ones every worker confuses; the design's keys are checked in one line."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.errors import InputError
from marketsim.market.worker_models import draw_world
from marketsim.scenario.parser import parse_scenario
from marketsim.study.seeds import world_rng

#: Classes 1-2 and 3-4 are confused with each other, never across.
PAIRED = [[0.80, 0.20, 0.0, 0.0], [0.30, 0.70, 0.0, 0.0],
          [0.0, 0.0, 0.85, 0.15], [0.0, 0.0, 0.10, 0.90]]


def scenario(**confusion: object) -> dict:
    return {
        "scenario": {"seed": 7},
        "tasks": {"count": 500, "classes": 4},
        "workers": {"count": 300, "model": "confusion",
                    "confusion": {"design": "crowd", **confusion}},
        "budget": {"edges": 2000, "batch": 500},
        "arms": [{"name": "ds", "policy": "uniform", "inference": "ds"}],
    }


def test_workers_are_drawn_around_the_crowd_with_its_pairs() -> None:
    sc = parse_scenario(scenario(crowd_matrix=PAIRED, crowd_concentration=20.0), "x")
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    conf = world.confusion
    assert conf.shape == (300, 4, 4)
    assert np.allclose(conf.sum(axis=2), 1.0)
    assert np.all(conf[:, :2, 2:] == 0) and np.all(conf[:, 2:, :2] == 0)  # pairs kept
    assert np.abs(conf.mean(axis=0) - np.asarray(PAIRED)).max() < 0.03
    # workers differ from the crowd as a Dirichlet of that concentration says
    spread = conf[:, 0, 0].var()
    assert spread == pytest.approx(0.8 * 0.2 / 21, rel=0.3)
    # answers follow the drawn matrices: none crosses a pair
    truth = world.truth[world.initial_tasks]
    assert np.all((truth < 2) == (world.initial_labels < 2))


def test_a_larger_concentration_draws_workers_closer_to_the_crowd() -> None:
    def spread(concentration: float) -> float:
        sc = parse_scenario(scenario(crowd_matrix=PAIRED, crowd_concentration=concentration),
                            "x")
        return float(draw_world(sc.crowd, world_rng(sc.seed, 0)).confusion[:, 3, 3].std())

    assert spread(500.0) < spread(5.0) / 5


@pytest.mark.parametrize(("confusion", "words"), [
    ({}, "workers.confusion.crowd_matrix is required with design = 'crowd'"),
    ({"crowd_matrix": [[0.5, 0.5], [0.5, 0.5]]}, "workers.confusion.crowd_matrix must be 4×4"),
    ({"crowd_matrix": PAIRED, "concentration": 2.0},
     "applies only to design 'dirichlet'"),
    ({"crowd_matrix": [[0.9, 0.2, 0, 0]] * 4}, "rows must sum to 1"),
])
def test_bad_crowd_keys_are_one_line_errors(confusion: dict, words: str) -> None:
    with pytest.raises(InputError) as err:
        parse_scenario(scenario(**confusion), "x")
    assert words in str(err.value) and "\n" not in str(err.value)
