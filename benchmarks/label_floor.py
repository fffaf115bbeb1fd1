"""The label floor of the label–time frontier (issue #30, point 5): the fewest labels a
task-choice rule can expect to spend to bring worker_aware.toml's world to 1 % error, when
every worker's accuracy is known.

``known-workers`` (scenarios/frontier/known_workers.toml) measures the most-uncertain-first
rule with perfect worker knowledge. This script bounds the other rules whose choice of task
does not depend on the arriving worker, lookahead and knowledge-gradient choices included.
With the workers known, the tasks are independent given their labels, so the best a requester
can do for a total expected error of ``E`` is, by a Lagrange multiplier λ, each task's own
optimal stopping problem: in posterior log-odds state ``x`` either stop (cost λ × the task's
error probability) or buy one more label (cost 1) from a worker drawn from those above the
decline cut, at most as many labels as there are such workers. This script solves that
stopping problem by backward induction on a grid of log-odds, starts each task from its real
initial label (the replicate's world: its initial graph and the true accuracy of the worker
who gave it), and finds by bisection the λ at which the expected errors of the 2,000 tasks sum
to at most 1 % (20 tasks); the expected labels at that λ are the floor. The expected simulated
time is the labels bought divided by the share of arrivals above the cut (arrivals are uniform
over the 30 workers at total rate 1). ``--top`` also finds, per replicate, the crowd of its
best k workers that spends the fewest labels within the time bound.

It is a relaxation, so optimistic for the policy: the error is the expected one under the exact
posterior, not the realised error of the EM estimate that must then *stay* at or below 1 %,
with no rounding up to the next checkpoint; a policy is credited with knowing every worker
exactly; the worker of each label is drawn anew (the same one may come twice, the count per
task is capped).

``--routing`` closes the one case that leaves open, a task choice that depends on the arriving
worker (sending the best workers to the hardest tasks): it gives every task its labels from the
replicate's best workers, best first (the initial labeller excepted: a worker labels a task
once), with no decline, no waiting and no limit on how much one worker labels. A more accurate
worker's label is a more informative experiment (Blackwell) for a binary task, so the k best
workers' labels, taken in that order, are worth at least as much after every label as any k
distinct workers' in any order: no policy, realisable or given every worker's accuracy, can
expect to reach 1 % with fewer labels, whatever its time.

    python benchmarks/label_floor.py scenarios/frontier/known_workers.toml --top --json floor.json

``--json`` keeps the floor per cut (mean labels and time) for
``benchmarks/label_time_frontier.py --floor``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from marketsim.market.worker_models import draw_world
from marketsim.scenario.parser import load_scenario
from marketsim.study.seeds import world_rng

#: Log-odds grid of the value iteration.
GRID = np.linspace(-16.0, 16.0, 1601)
TARGET = 0.01
CUTS = (0.0, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
LABEL_BOUND, TIME_BOUND = 4556.0, 11595.0  # 1.1 x oracle-workers', 1.5 x entropy-greedy's


def stopping(accuracies: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Expected labels and expected error, on :data:`GRID`, of the optimal stopping rule at
    multiplier ``lam`` with each label from a worker drawn uniformly from ``accuracies`` and
    at most ``accuracies.size`` labels per task (a worker labels a task once; by backward
    induction over the labels bought)."""
    q = 1.0 / (1.0 + np.exp(-GRID))  # P(class 1 | x)
    err = np.minimum(q, 1.0 - q)
    lw = np.log(accuracies / (1.0 - accuracies))[:, None]
    p = accuracies[:, None]
    up = q[None, :] * p + (1.0 - q[None, :]) * (1.0 - p)  # P(label 1 | x) per worker
    x_up, x_down = GRID[None, :] + lw, GRID[None, :] - lw

    def expect(f: np.ndarray) -> np.ndarray:
        """E over the worker and their label of ``f`` at the next state."""
        nxt = up * np.interp(x_up, GRID, f) + (1.0 - up) * np.interp(x_down, GRID, f)
        return nxt.mean(axis=0)

    value, labels, error = lam * err, np.zeros_like(GRID), err.copy()
    for _ in range(accuracies.size):
        go = 1.0 + expect(value) < lam * err
        value = np.where(go, 1.0 + expect(value), lam * err)
        labels = np.where(go, 1.0 + expect(labels), 0.0)
        error = np.where(go, expect(error), err)
    return labels, error


def floor(start: np.ndarray, accuracies: np.ndarray) -> tuple[float, float]:
    """(labels bought, expected errors) summed over tasks starting at log-odds ``start``, at
    the multiplier where the expected errors are :data:`TARGET` of the tasks."""
    lo, hi = 0.0, 8.0  # log10 of λ
    for _ in range(20):
        mid = (lo + hi) / 2
        labels, error = stopping(accuracies, 10.0**mid)
        if np.interp(start, GRID, error).sum() > TARGET * start.size:
            lo = mid
        else:
            hi = mid
    labels, error = stopping(accuracies, 10.0**hi)
    return float(np.interp(start, GRID, labels).sum()), float(np.interp(start, GRID,
                                                                        error).sum())


def routed(start: np.ndarray, initial: np.ndarray, ability: np.ndarray) -> tuple[float, float]:
    """(labels bought, expected errors) when every task's labels come from the best workers,
    best first, the initial labeller excepted, at the multiplier where the expected errors
    are :data:`TARGET` of the tasks (optimal stopping by backward induction per sequence)."""
    q = 1.0 / (1.0 + np.exp(-GRID))
    err = np.minimum(q, 1.0 - q)
    order = np.argsort(-ability, kind="stable")
    firsts = np.unique(initial)

    def solve(lam: float) -> tuple[float, float]:
        bought = errors = 0.0
        for w0 in firsts:  # one best-first sequence per initial labeller
            seq = ability[order[order != w0]]
            value, labels, error = lam * err, np.zeros_like(GRID), err.copy()
            for p in seq[::-1]:  # backward over the stages: the last label first
                lw = np.log(p / (1.0 - p))
                up = q * p + (1.0 - q) * (1.0 - p)

                def nxt(f: np.ndarray, lw: float = lw, up: np.ndarray = up) -> np.ndarray:
                    return up * np.interp(GRID + lw, GRID, f) + (1.0 - up) * np.interp(
                        GRID - lw, GRID, f)

                go = 1.0 + nxt(value) < lam * err
                value, labels, error = (np.where(go, 1.0 + nxt(value), lam * err),
                                        np.where(go, 1.0 + nxt(labels), 0.0),
                                        np.where(go, nxt(error), err))
            mine = start[initial == w0]
            bought += float(np.interp(mine, GRID, labels).sum())
            errors += float(np.interp(mine, GRID, error).sum())
        return bought, errors

    lo, hi = 0.0, 8.0  # log10 of λ
    for _ in range(20):
        mid = (lo + hi) / 2
        if solve(10.0**mid)[1] > TARGET * start.size:
            lo = mid
        else:
            hi = mid
    return solve(10.0**hi)


def best_crowd(start: np.ndarray, ability: np.ndarray) -> tuple[float, float, int]:
    """(labels, time, k) of the replicate's best crowd: the fewest top-k workers (k = 1 … 30,
    by bisection: fewer, better workers spend fewer labels and more time) whose floor is within
    :data:`TIME_BOUND` (the whole crowd when none is)."""
    ranked = np.sort(ability)[::-1]

    def run(k: int) -> tuple[float, float, int]:
        bought, _ = floor(start, ranked[:k])
        return start.size + bought, bought * ranked.size / k, k

    lo, hi = 0, ranked.size  # run(hi) is within the bound or hi is the whole crowd
    found = run(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        got = run(mid)
        if got[1] <= TIME_BOUND:
            hi, found = mid, got
        else:
            lo = mid
    return found


def main() -> None:
    """Solve the floor for every replicate and cut; print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--json", type=Path, help="write the floor per cut here")
    parser.add_argument("--top", action="store_true",
                        help="also the best top-k crowd of each replicate within the time bound")
    parser.add_argument("--routing", action="store_true",
                        help="also the floor of routing: every task's labels from the best "
                        "workers, best first, time unbounded")
    args = parser.parse_args()
    sc = load_scenario(args.scenario)
    prior = np.asarray(sc.tasks.prior, dtype=np.float64)
    rows: dict[float, list[tuple[float, float, int]]] = {c: [] for c in CUTS}
    best: list[tuple[float, float, int]] = []
    routes: list[float] = []
    for r in range(sc.replicates):
        world = draw_world(sc.crowd, world_rng(sc.seed, r))
        ability = np.asarray(world.ability, dtype=np.float64)
        p0 = ability[world.initial_workers]
        lw0 = np.log(p0 / (1.0 - p0))
        start = np.log(prior[1] / prior[0]) + np.where(world.initial_labels == 1, lw0, -lw0)
        for cut in CUTS:
            # Nobody above the cut: the market's decline rule admits everyone.
            accepted = ability[ability >= cut] if (ability >= cut).any() else ability
            bought, _ = floor(start, accepted)
            rows[cut].append((start.size + bought, bought / (accepted.size / ability.size),
                              accepted.size))
        if args.top:
            best.append(best_crowd(start, ability))
        if args.routing:
            routes.append(start.size + routed(start, world.initial_workers, ability)[0])
    print(f"label floor at {TARGET:.0%} expected error, {sc.replicates} replicates of "
          f"{args.scenario} (mean [min, max] over replicates)\n")
    print("| decline cut | workers above | labels (floor) | simulated time | within both bounds |")
    print("|---:|---:|---:|---:|:-:|")
    for cut in CUTS:
        lab = np.array([x[0] for x in rows[cut]])
        tim = np.array([x[1] for x in rows[cut]])
        inside = lab.mean() <= LABEL_BOUND and tim.mean() <= TIME_BOUND
        above = np.mean([x[2] for x in rows[cut]])
        print(f"| {cut:.2f} | {above:.1f} | "
              f"{lab.mean():,.0f} [{lab.min():,.0f}, {lab.max():,.0f}] | "
              f"{tim.mean():,.0f} [{tim.min():,.0f}, {tim.max():,.0f}] | "
              f"{'yes' if inside else 'no'} |")
    if best:
        lab, tim = np.array([b[0] for b in best]), np.array([b[1] for b in best])
        print(f"\nthe best crowd of each replicate (its top k workers, k chosen for the fewest "
              f"labels within simulated time {TIME_BOUND:,.0f}): labels {lab.mean():,.0f} "
              f"[{lab.min():,.0f}, {lab.max():,.0f}], time {tim.mean():,.0f}, k "
              f"{sorted(b[2] for b in best)}")
    if routes:
        lab = np.array(routes)
        print(f"\nrouting (every task's labels from the best workers, best first; no time "
              f"bound): labels {lab.mean():,.0f} [{lab.min():,.0f}, {lab.max():,.0f}], "
              f"{int((lab <= LABEL_BOUND).sum())} of {lab.size} replicates at or below "
              f"{LABEL_BOUND:,.0f}")
    if args.json:
        args.json.write_text(json.dumps([
            {"cut": cut, "labels": float(np.mean([x[0] for x in rows[cut]])),
             "time": float(np.mean([x[1] for x in rows[cut]]))} for cut in CUTS], indent=1),
            encoding="utf-8")


if __name__ == "__main__":
    main()
