"""The independent random streams of one (replicate, arm) unit (spawned in
:mod:`marketsim.study.seeds`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Streams:
    """The independent random streams of one unit."""

    arrivals: np.random.Generator
    answers: np.random.Generator
    policy: np.random.Generator
    inference: np.random.Generator
    #: Streams of the worker-aware mechanics (issue #16), used only when a scenario turns them
    #: on: gold classes and tiers (per replicate, like the world), gold hand-outs and answers,
    #: drop-outs. The defaults serve markets built by hand.
    gold_world: np.random.Generator = field(default_factory=lambda: np.random.default_rng(6))
    tiers: np.random.Generator = field(default_factory=lambda: np.random.default_rng(7))
    gold: np.random.Generator = field(default_factory=lambda: np.random.default_rng(8))
    workforce: np.random.Generator = field(default_factory=lambda: np.random.default_rng(9))
    #: Streams of the changing workers and answer times (issue #28), per replicate and used
    #: only when a scenario asks: the drift of abilities, the workers' speeds, abandonments.
    dynamics: np.random.Generator = field(default_factory=lambda: np.random.default_rng(10))
    speeds: np.random.Generator = field(default_factory=lambda: np.random.default_rng(11))
    abandon: np.random.Generator = field(default_factory=lambda: np.random.default_rng(12))
    #: The machine annotators of the replicate (issue #41): what each knows of the tasks, then
    #: their calls' fresh draws; per replicate, used only when a scenario has machines.
    machines: np.random.Generator = field(default_factory=lambda: np.random.default_rng(13))
