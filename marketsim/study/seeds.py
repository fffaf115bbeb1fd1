"""Random streams spawned from the scenario seed with ``numpy.random.SeedSequence``.

Every stream is keyed by (replicate, purpose[, arm]) rather than by execution order, so results
are identical whatever the number of parallel jobs or the order units finish in.
"""

from __future__ import annotations

import numpy as np

from marketsim.market.streams import Streams
from marketsim.scenario.market_specs import INITIAL_GRAPHS

WORLD, ARRIVALS, ANSWERS, POLICY, INFERENCE, INITIAL = range(6)
#: Streams of the worker-aware mechanics (issue #16), new keys so the streams above are unchanged.
GOLD_WORLD, TIERS, GOLD, WORKFORCE = range(6, 10)
#: Streams of worker dynamics, speeds and abandonment (issue #28), new keys likewise.
DYNAMICS, SPEEDS, ABANDON = range(10, 13)
#: Stream of a replicate's machine annotators (issue #41), a new key likewise.
MACHINES = 13


def generator(seed: int, *key: int) -> np.random.Generator:
    """A generator for one purpose, independent of all others."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=tuple(key)))


def world_rng(seed: int, replicate: int) -> np.random.Generator:
    """Stream for the replicate's hidden world (shared by all arms)."""
    return generator(seed, replicate, WORLD)


def unit_streams(seed: int, replicate: int, arm: int) -> Streams:
    """Streams of one (replicate, arm) unit. Arrivals and answers are shared by all arms of a
    replicate (common random numbers); policy and inference randomness are the arm's own.
    The gold questions' classes and the workers' tiers are keyed by replicate only, so every
    arm sees the same ones (like the world); gold hand-outs, gold answers and drop-outs are
    shared streams too, so they differ between arms only where the arms' choices do; so are
    the drift of abilities, the workers' speeds (drawn first, like the world) and the
    abandonments. The machine annotators are keyed by replicate too (like the world)."""
    return Streams(
        arrivals=generator(seed, replicate, ARRIVALS),
        answers=generator(seed, replicate, ANSWERS),
        policy=generator(seed, replicate, POLICY, arm),
        inference=generator(seed, replicate, INFERENCE, arm),
        gold_world=generator(seed, replicate, GOLD_WORLD),
        tiers=generator(seed, replicate, TIERS),
        gold=generator(seed, replicate, GOLD),
        workforce=generator(seed, replicate, WORKFORCE),
        dynamics=generator(seed, replicate, DYNAMICS),
        speeds=generator(seed, replicate, SPEEDS),
        abandon=generator(seed, replicate, ABANDON),
        machines=generator(seed, replicate, MACHINES),
    )


def initial_graph_rng(seed: int, replicate: int, kind: str) -> np.random.Generator:
    """Stream for an arm-specific initial graph, one per kind, shared by arms that use it.
    (The scenario's own initial graph continues the world stream.)"""
    return generator(seed, replicate, INITIAL, INITIAL_GRAPHS.index(kind))
