"""Cost follows use (issue #25, point 4): a run must not get slower because a key is set to a
large allowed value that the run never uses.

    python benchmarks/unused_maxima.py [--repeats 3]

One small market (1,000 tasks, 50 workers, 20,000 labels, uniform policy, one-coin EM) is run
with a small value of each key and with a value near the key's allowed maximum; the table gives
the median wall time of each and their ratio (large / small). A ratio near 1 means the key costs
what it is used for. Run it from two checkouts (``PYTHONPATH=<checkout>``) to compare code.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from marketsim.scenario.parser import parse_scenario
from marketsim.study.runner import run_unit

BASE: dict[str, Any] = {
    "scenario": {"seed": 1, "replicates": 1},
    "tasks": {"count": 1000},
    "workers": {"count": 50},
    "budget": {"edges": 20_000, "batch": 1000},
    "output": {"graph": False},
    "arms": [{"name": "u", "policy": "uniform", "inference": "one-coin"}],
}

#: (what, small variant, large variant): tables merged into BASE.
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("gold.count", {"gold": {"count": 10, "rate": 0.05}},
     {"gold": {"count": 1_000_000, "rate": 0.05}}),
    ("gold.count (in inference)", {"gold": {"count": 10, "rate": 0.2}},
     {"gold": {"count": 10_000_000, "rate": 0.2}}),
    ("workers.capacity", {"workers": {"count": 50, "capacity": 1000}},
     {"workers": {"count": 50, "capacity": 10_000_000_000}}),
    ("workers.session_mean", {"workers": {"count": 50, "session_mean": 1e5}},
     {"workers": {"count": 50, "session_mean": 1e12}}),
    ("budget.edges with budget.money",
     {"budget": {"edges": 20_000, "batch": 1000, "money": 20_000}},
     {"budget": {"edges": 50_000, "batch": 1000, "money": 20_000}}),
    ("budget.edges at its maximum, money",
     {"tasks": {"count": 100_000}, "workers": {"count": 100_000},
      "budget": {"edges": 20_000, "batch": 1000, "money": 20_000}},
     {"tasks": {"count": 100_000}, "workers": {"count": 100_000},
      "budget": {"edges": 10_000_000_000, "batch": 1000, "money": 20_000}}),
    ("budget.batch", {"budget": {"edges": 20_000, "batch": 20_000}},
     {"budget": {"edges": 20_000, "batch": 10_000_000_000}}),
]


def scenario(extra: dict[str, Any]) -> Any:
    doc = {key: (dict(value) if isinstance(value, dict) else value)
           for key, value in BASE.items()}
    for key, value in extra.items():
        doc[key] = doc.get(key, {}) | value if isinstance(value, dict) else value
    if "tasks" in extra:  # a one-per-task graph over the larger pool
        doc["budget"] = doc["budget"] | {"initial": "none"}
    return parse_scenario(doc, "unused_maxima.toml")


def seconds(extra: dict[str, Any], repeats: int) -> float:
    sc = scenario(extra)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run_unit(sc, 0, 0)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'key':34} {'small s':>9} {'large s':>9} {'ratio':>7}")
    for what, small, large in CASES:
        a, b = seconds(small, args.repeats), seconds(large, args.repeats)
        print(f"{what:34} {a:9.3f} {b:9.3f} {b / a:7.2f}", flush=True)


if __name__ == "__main__":
    main()
