"""The worker models by name (``workers.model``), and the world draw of a replicate.

Each model is an object (:class:`~marketsim.market.world.WorkerModel`) in its own module of
:mod:`marketsim.market.answers`; its facts (label kind, headline error, methods) are in
:mod:`marketsim.scenario.worker_models`, under the same name.
"""

from __future__ import annotations

import numpy as np

from marketsim.market.answers.communities import CommunityWorkers
from marketsim.market.answers.confusion import ConfusionWorkers
from marketsim.market.answers.gaussian_scores import GaussianScoreWorkers
from marketsim.market.answers.glad import GladWorkers
from marketsim.market.answers.one_coin import OneCoinWorkers
from marketsim.market.answers.spammer_hammer import SpammerHammerWorkers
from marketsim.market.world import WorkerModel, World
from marketsim.scenario.specs import Scenario

#: Every worker model by its ``workers.model`` name.
WORKER_MODELS: dict[str, WorkerModel] = {
    "one-coin": OneCoinWorkers("one-coin"),
    "confusion": ConfusionWorkers("confusion"),
    "spammer-hammer": SpammerHammerWorkers("spammer-hammer"),
    "gaussian-scores": GaussianScoreWorkers(),
    "glad": GladWorkers("glad"),
    "communities": CommunityWorkers("communities"),
}


def draw_world(
    scenario: Scenario,
    rng: np.random.Generator,
    initial: str | None = None,
    initial_rng: np.random.Generator | None = None,
) -> World:
    """Draw a replicate's world with the initial graph ``initial`` (default: the scenario's).

    The initial graph is drawn from ``initial_rng`` when given (one stream per kind of graph, so
    arms with different initial graphs still share the truth and the workers)."""
    model = WORKER_MODELS[scenario.workers.model]
    return model.draw(scenario, rng, initial or scenario.budget.initial, initial_rng)
