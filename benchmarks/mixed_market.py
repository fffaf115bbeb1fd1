"""Time per label of a mixed market (humans and machine annotators) against a human-only market
of the same size (issue #41): CPU seconds per 1,000 labels received (a human's label or a model
call's answer, what ``curves.csv``'s ``edges`` counts), one unit in-process per run, the two
markets interleaved, median of ``--repeats``.

    PYTHONPATH=. python benchmarks/mixed_market.py              # 3 repeats (about a minute)
    PYTHONPATH=. python benchmarks/mixed_market.py --tasks 4000 --repeats 5

Pairs, each with the same tasks, crowd, budget, batch and inference method (majority vote, so
the figures are the market's machinery, not an estimator's): ``until-agreement`` on the humans
alone against ``cascade`` asking three models first; and ``uniform`` without ``[[machines]]``
against ``uniform`` in a scenario with three machines it never asks (what a human policy pays
for the machines being there). Acceptance: the mixed market costs no more CPU time per label.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marketsim.market.inference import estimator_factory  # noqa: E402
from marketsim.market.market import Market  # noqa: E402
from marketsim.market.worker_models import draw_world  # noqa: E402
from marketsim.policies.registry import make_policy  # noqa: E402
from marketsim.scenario.parser import scenario_from_dict  # noqa: E402
from marketsim.study.runner import market_setup  # noqa: E402
from marketsim.study.seeds import unit_streams, world_rng  # noqa: E402

MACHINES = [
    {"name": "large", "price": 0.05, "latency": 2.0, "rate_limit": 100.0, "accuracy": 0.92},
    {"name": "small", "price": 0.01, "latency": 0.5, "rate_limit": 200.0, "accuracy": 0.85},
    {"name": "other", "price": 0.03, "latency": 1.0, "rate_limit": 100.0, "accuracy": 0.88},
]


def scenario(n_tasks: int, policy: Any, machines: bool) -> dict[str, Any]:
    """One arm on ``n_tasks`` binary tasks and 30 one-coin workers, 12 labels a task."""
    return {
        "scenario": {"name": "mixed benchmark", "seed": 41},
        "tasks": {"count": n_tasks, "classes": 2},
        "workers": {"count": 30, "model": "one-coin"},
        "budget": {"edges": 12 * n_tasks, "initial": "none", "batch": max(50, n_tasks // 10)},
        "machines": MACHINES if machines else [],
        "arms": [{"name": "a", "policy": policy, "inference": "mv"}],
    }


def cpu_per_thousand(document: dict[str, Any], replicate: int) -> tuple[float, int]:
    """CPU seconds (user + system of this process) per 1,000 labels of one unit, and its
    labels."""
    sc = scenario_from_dict(document)
    arm = sc.arms[0]
    world = draw_world(sc.crowd, world_rng(sc.seed, replicate))
    market = Market(market_setup(sc.for_arm(arm)), world,
                    make_policy(arm.policy.name, dict(arm.policy.options)),
                    estimator_factory(sc.crowd, arm.inference),
                    unit_streams(sc.seed, replicate, 0), keep_graph=False)
    start = time.process_time()
    curve = market.run()
    cpu = time.process_time() - start
    labels = curve[-1].edges
    return 1000 * cpu / labels, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    pairs = {
        "until-agreement, humans only": scenario(args.tasks, "until-agreement", False),
        "cascade, three models + humans": scenario(
            args.tasks, {"name": "cascade", "threshold": 0.8}, True),
        "uniform, no [[machines]]": scenario(args.tasks, "uniform", False),
        "uniform, three machines never asked": scenario(args.tasks, "uniform", True),
    }
    runs: dict[str, list[tuple[float, int]]] = {name: [] for name in pairs}
    for repeat in range(args.repeats):  # interleaved: the load of the machine hits each alike
        for name, document in pairs.items():
            runs[name].append(cpu_per_thousand(document, repeat))
    print(f"CPU s per 1,000 labels, {args.tasks} tasks, median of {args.repeats} "
          "(labels per run)")
    for name, values in runs.items():
        cpu = statistics.median(v for v, _ in values)
        print(f"  {name:<38} {cpu:7.3f}   ({', '.join(f'{v:.3f}' for v, _ in values)}; "
              f"labels {', '.join(str(n) for _, n in values)})")


if __name__ == "__main__":
    main()
