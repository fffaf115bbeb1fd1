"""The world draw of a replicate: the crowd's worker model (an instance of its class in
:mod:`marketsim.workers`, with the scenario's options) draws it."""

from __future__ import annotations

import numpy as np

from marketsim.workers.base import Crowd, World


def draw_world(
    crowd: Crowd,
    rng: np.random.Generator,
    initial: str | None = None,
    initial_rng: np.random.Generator | None = None,
) -> World:
    """Draw a replicate's world with the initial graph ``initial`` (default: the budget's).

    The initial graph is drawn from ``initial_rng`` when given (one stream per kind of graph, so
    arms with different initial graphs still share the truth and the workers)."""
    model = crowd.workers.worker_model
    return model.draw(crowd, rng, initial or crowd.budget.initial, initial_rng)
