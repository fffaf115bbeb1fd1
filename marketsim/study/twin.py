"""A twin's labels: one arm of a scenario run through the market, and the labels it bought
with the world's true classes (``marketsim calibrate`` compares them with the real labels)."""

from __future__ import annotations

import numpy as np

from marketsim.data.labels import LabelSet
from marketsim.market.inference import estimator_factory
from marketsim.market.market import Market
from marketsim.market.worker_models import draw_world
from marketsim.scenario.specs import Scenario
from marketsim.study.seeds import initial_graph_rng, unit_streams, world_rng


def simulated_labels(scenario: Scenario, replicate: int = 0, arm: int = 0
                     ) -> tuple[LabelSet, np.ndarray, float]:
    """The labels arm ``arm`` of replicate ``replicate`` bought, the world's true classes and
    the arm's final error rate (the same world and streams as ``marketsim run``'s unit)."""
    spec = scenario.arms[arm]
    world = draw_world(scenario, world_rng(scenario.seed, replicate),
                       spec.initial_graph(scenario.budget),
                       None if spec.initial is None
                       else initial_graph_rng(scenario.seed, replicate, spec.initial))
    policy = spec.policy.build(allow_imports=False, source=scenario.source)
    market = Market(scenario.for_arm(spec), world, policy,
                    estimator_factory(scenario, spec.inference),
                    unit_streams(scenario.seed, replicate, arm),
                    warm_start=spec.inference.warm_start, keep_graph=False)
    curve = market.run()
    return market.log.view(), world.truth, float(curve[-1].error_rate)
