"""A class world's task features are part of the world every arm shares: drawn from the world's
stream before the initial graph (``workers.draws.features_then_graph``, the one place every
class model draws them), so arms whose initial graphs differ still see the same tasks."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.market.worker_models import draw_world
from marketsim.scenario.parser import scenario_from_dict
from marketsim.study.seeds import initial_graph_rng, world_rng
from marketsim.workers.registry import WORKER_MODELS
from tests.workers.test_worker_models import model_doc

CLASS_MODELS = sorted(name for name, cls in WORKER_MODELS.items() if not cls.scores)


@pytest.mark.parametrize("name", CLASS_MODELS)
def test_features_are_the_worlds_whatever_the_initial_graph(name: str) -> None:
    doc = model_doc(WORKER_MODELS[name])
    doc["tasks"] = {"count": 30, "classes": 3, "features": {"count": 4}}
    doc["budget"] = {"edges": 60, "initial": "bernoulli", "initial_probability": 0.3}
    crowd = scenario_from_dict(doc).crowd
    own = draw_world(crowd, world_rng(5, 0))  # the graph drawn from the world's stream
    kinds = {kind: draw_world(crowd, world_rng(5, 0), kind, initial_graph_rng(5, 0, kind))
             for kind in ("one-per-task", "bernoulli")}
    for world in kinds.values():
        assert world.features is not None and world.feature_proba is not None
        assert world.features.shape == (30, 4)
        for field in ("truth", "confusion", "features", "feature_proba"):
            assert np.array_equal(getattr(world, field), getattr(own, field)), field
    one, random = kinds["one-per-task"], kinds["bernoulli"]
    assert np.array_equal(np.sort(one.initial_tasks), np.arange(30))  # a label per task
    assert not np.array_equal(one.initial_tasks, random.initial_tasks)
