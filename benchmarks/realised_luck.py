"""How much the realised-error measure of "labels to 1 %" credits luck (issue #30, point 5).

The label–time frontier counts, per replicate, the labels after which the *realised* error
(the estimate against the truth) stays at or below 1 %. A requester cannot see that; it sees
the expected error of its posterior. ``benchmarks/routing_floor.py`` bounds the labels needed
for an *expected* error of 1 %, so the gap between the two measures is what the floor cannot
cover. This script measures it on one arm: it runs the arm's market on each replicate (the
same world and streams as ``marketsim run``), replays the labels it bought in their order, and
at every checkpoint of its curve computes the exact posterior under the workers' TRUE
accuracies (one-coin, binary): its expected error Σ min(q, 1 − q) and the realised error of its
decision. Per replicate it prints the labels after which each of (a) the curve's realised error,
(b) the exact posterior's realised error and (c) its expected error stays at or below the
target, and the paired mean differences (c) − (a) and (c) − (b) with 95 % intervals.

    python benchmarks/realised_luck.py scenarios/frontier/known_workers.toml --arm "known 0.85"
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy import stats

from marketsim.market.inference import estimator_factory
from marketsim.market.market import Market
from marketsim.market.worker_models import draw_world
from marketsim.scenario.parser import load_scenario
from marketsim.scenario.specs import Scenario
from marketsim.study.runner import market_setup
from marketsim.study.seeds import initial_graph_rng, unit_streams, world_rng


def stays_below(edges: np.ndarray, errors: np.ndarray, target: float) -> float:
    """Labels after which ``errors`` stay at or below ``target`` (NaN if the last is above)."""
    above = np.flatnonzero(errors > target + 1e-12)
    if above.size == 0:
        return float(edges[0])
    if above[-1] == errors.size - 1:
        return float("nan")
    return float(edges[above[-1] + 1])


def replicate_measures(sc: Scenario, arm: int, replicate: int, target: float) -> tuple[
        float, float, float]:
    """(curve, exact realised, exact expected) labels to ``target`` on one replicate."""
    spec = sc.arms[arm]
    world = draw_world(sc.crowd, world_rng(sc.seed, replicate),
                       spec.initial_graph(sc.budget),
                       None if spec.initial is None
                       else initial_graph_rng(sc.seed, replicate,
                                              spec.initial))
    policy = spec.policy.build(allow_imports=False, source=sc.source)
    market = Market(market_setup(sc.for_arm(spec)), world, policy,
                    estimator_factory(sc.crowd, spec.inference),
                    unit_streams(sc.seed, replicate, arm),
                    warm_start=spec.inference.warm_start)
    curve = market.run()
    tasks, workers, labels = (np.asarray(a, dtype=np.int64) for a in market.log.arrays())
    ability = np.asarray(world.ability, dtype=np.float64)
    prior = np.asarray(sc.tasks.prior, dtype=np.float64)
    step = np.log(ability / (1.0 - ability))[workers] * np.where(labels == 1, 1.0, -1.0)
    n = world.truth.size
    edges = np.array([p.edges for p in curve], dtype=np.int64)
    if market.bought != tasks.size:  # gold answers count in the edges, not in the log
        raise SystemExit(f"arm {spec.name!r} asks gold questions: pick an arm without gold")
    expected, realised = [], []
    for size in edges:
        x = np.log(prior[1] / prior[0]) + np.bincount(tasks[:size], weights=step[:size],
                                                       minlength=n)
        q = 1.0 / (1.0 + np.exp(-x))
        expected.append(float(np.minimum(q, 1.0 - q).sum()))
        realised.append(float(((q > 0.5).astype(np.int64) != world.truth).sum()))
    limit = target * n
    curve_err = np.array([p.error_rate for p in curve]) * n
    return (stays_below(edges, curve_err, limit), stays_below(edges, np.array(realised), limit),
            stays_below(edges, np.array(expected), limit))


def interval(x: np.ndarray) -> str:
    """Mean [95 % Student-t interval]."""
    x = x[~np.isnan(x)]
    half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size) if x.size > 1 else 0
    return f"{x.mean():+,.0f} [{x.mean() - half:+,.0f}, {x.mean() + half:+,.0f}] ({x.size})"


def main() -> None:
    """Run the arm on each replicate and print the three measures and their differences."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--arm", required=True, help="the arm's name")
    parser.add_argument("--replicates", type=int, help="only the first N replicates")
    parser.add_argument("--target", type=float, default=0.01)
    args = parser.parse_args()
    sc = load_scenario(args.scenario)
    arm = [a.name for a in sc.arms].index(args.arm)
    rows = []
    for r in range(args.replicates or sc.replicates):
        rows.append(replicate_measures(sc, arm, r, args.target))
        print(f"replicate {r}: curve {rows[-1][0]:,.0f}, exact realised {rows[-1][1]:,.0f}, "
              f"exact expected {rows[-1][2]:,.0f}", flush=True)
    a = np.array(rows)
    print(f"\nlabels to {args.target:.0%}, arm {args.arm!r} of {args.scenario}, "
          f"{a.shape[0]} replicates (mean): curve {np.nanmean(a[:, 0]):,.0f}; exact posterior "
          f"realised {np.nanmean(a[:, 1]):,.0f}; expected {np.nanmean(a[:, 2]):,.0f}")
    print(f"expected − curve (paired): {interval(a[:, 2] - a[:, 0])}")
    print(f"expected − exact realised (paired): {interval(a[:, 2] - a[:, 1])}")


if __name__ == "__main__":
    main()
