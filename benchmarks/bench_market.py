"""Simulator benchmarks (issue 5): per-label cost of the market, per-refresh cost of the
inference service, the large market's time and peak memory, and the --jobs 2 speed-up.

    python benchmarks/bench_market.py                    # everything (about 10 minutes)
    python benchmarks/bench_market.py --only large       # one part: labels|large|jobs|forest

Figures are medians over repeats; ratios are measured side by side in the same run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marketsim.market.inference import estimator_factory  # noqa: E402
from marketsim.market.market import Market  # noqa: E402
from marketsim.market.worker_models import draw_world  # noqa: E402
from marketsim.policies.registry import make_policy  # noqa: E402
from marketsim.scenario.parser import load_scenario  # noqa: E402
from marketsim.study.runner import market_setup  # noqa: E402
from marketsim.study.seeds import unit_streams, world_rng  # noqa: E402


def time_market(path: Path, arm: int, replicate: int = 0) -> dict[str, float]:
    """Run one unit in-process; split its wall time into simulator, inference and policy."""
    sc = load_scenario(path)
    spec = sc.arms[arm]
    market = Market(
        market_setup(sc),
        draw_world(sc.crowd, world_rng(sc.seed, replicate)),
        make_policy(spec.policy.name, dict(spec.policy.options)),
        estimator_factory(sc.crowd, spec.inference),
        unit_streams(sc.seed, replicate, arm),
        warm_start=spec.inference.warm_start,
        keep_graph=sc.output.graph,
    )
    start = time.perf_counter()
    curve = market.run()
    total = time.perf_counter() - start
    labels = market.log.size - len(market.world.initial_tasks)
    sim = total - market.inference_seconds - market.policy_seconds
    return {
        "total_s": total,
        "sim_us_per_label": 1e6 * sim / max(labels, 1),
        "inference_ms_per_refresh": 1e3 * market.inference_seconds / len(curve),
        "policy_ms_per_refresh": 1e3 * market.policy_seconds / max(len(curve) - 1, 1),
        "refreshes": len(curve),
        "final_error": curve[-1].error_rate,
    }


def part_labels(repeats: int) -> None:
    print("## per-label and per-refresh cost (scenarios/30_workers.toml, uniform + prior arm)")
    runs = [time_market(ROOT / "scenarios/30_workers.toml", 0, r) for r in range(repeats)]
    for key in ("sim_us_per_label", "inference_ms_per_refresh", "policy_ms_per_refresh"):
        print(f"  {key:<28} median {statistics.median(r[key] for r in runs):9.2f}  "
              f"(runs: {', '.join(f'{r[key]:.2f}' for r in runs)})")


def part_large() -> None:
    print("## scenarios/large_market.toml, one replicate, through the CLI")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "marketsim", "run", str(ROOT / "scenarios/large_market.toml"),
               "--out", tmp, "--quiet"]
        start = time.perf_counter()
        subprocess.run(cmd, check=True, cwd=ROOT)
        wall = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"  wall time {wall:.1f} s, peak RSS {peak_mib:.0f} MiB (target: < 600 s, < 4096 MiB)")
    for arm in (0, 1):
        r = time_market(ROOT / "scenarios/large_market.toml", arm)
        print(f"  arm {arm}: total {r['total_s']:.1f} s, simulator {r['sim_us_per_label']:.2f} "
              f"us/label, inference {r['inference_ms_per_refresh']:.0f} ms/refresh, policy "
              f"{r['policy_ms_per_refresh']:.0f} ms/refresh, {r['refreshes']} refreshes, "
              f"final error {r['final_error']:.4f}")


def part_jobs(repeats: int) -> None:
    print("## --jobs 2 versus --jobs 1, scenarios/30_workers.toml (all arms, all replicates)")
    times: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(repeats):
        for jobs in (1, 2):
            with tempfile.TemporaryDirectory() as tmp:
                start = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-m", "marketsim", "run",
                     str(ROOT / "scenarios/30_workers.toml"), "--out", tmp, "--quiet",
                     "--jobs", str(jobs)],
                    check=True, cwd=ROOT,
                )
                times[jobs].append(time.perf_counter() - start)
    one, two = statistics.median(times[1]), statistics.median(times[2])
    print(f"  jobs 1: median {one:.1f} s {times[1]}")
    print(f"  jobs 2: median {two:.1f} s {times[2]}")
    print(f"  speed-up {one / two:.2f}x (target >= 1.7x)")


def part_forest(repeats: int) -> None:
    """The random-forest policy's forest: scikit-learn's RandomForestClassifier(max_samples)
    against BootstrapForest on the same real training set, interleaved; held-out AUC of both."""
    import numpy as np
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import roc_auc_score

    from marketsim.policies.bagging import BootstrapForest

    print("## random-forest policy: forest fit on one training set (faithful 30-worker arm, "
          "15,000 labels: 10 simulated instances x 2,000 tasks = 20,000 rows x 23 features)")
    sc = load_scenario(ROOT / "scenarios/paper/30_workers_faithful.toml")
    spec = sc.arms[0]
    market = Market(
        market_setup(sc), draw_world(sc.crowd, world_rng(sc.seed, 0)),
        make_policy(spec.policy.name, dict(spec.policy.options)),
        estimator_factory(sc.crowd, spec.inference), unit_streams(sc.seed, 0, 0), keep_graph=False,
    )
    market.budget = 15_000  # stop the market half way: a realistic graph
    market.run()
    labels, policy = market.log.view(), market.policy
    rng = np.random.default_rng(0)
    x, y = policy.training_set(labels, rng)
    x_test, y_test = policy.training_set(labels, rng)
    params = dict(max_depth=10, criterion="entropy")
    times: dict[str, list[float]] = {"sklearn RandomForestClassifier": [], "BootstrapForest": []}
    auc: dict[str, list[float]] = {k: [] for k in times}
    for r in range(repeats):
        for name in times:
            if name == "BootstrapForest":
                forest = BootstrapForest(n_trees=10, sample_fraction=0.2, max_features=10,
                                         random_state=r, **params)
            else:
                forest = RandomForestClassifier(n_estimators=10, max_samples=0.2, max_features=10,
                                                n_jobs=1, random_state=r, **params)
            start = time.perf_counter()
            forest.fit(x, y)
            times[name].append(time.perf_counter() - start)
            auc[name].append(roc_auc_score(y_test, forest.predict_proba(x_test)[:, 1]))
    for name, values in times.items():
        print(f"  {name:<31} fit median {1e3 * statistics.median(values):7.1f} ms  held-out AUC "
              f"median {statistics.median(auc[name]):.4f}")
    ratio = statistics.median(
        a / b for a, b in zip(times["sklearn RandomForestClassifier"], times["BootstrapForest"],
                              strict=True)
    )
    print(f"  paired speed-up of BootstrapForest: median {ratio:.2f}x over {repeats} pairs")
    r = time_market(ROOT / "scenarios/paper/30_workers_faithful.toml", 0)
    print(f"  one faithful forest unit (30,000 labels): total {r['total_s']:.1f} s, policy "
          f"{r['policy_ms_per_refresh']:.0f} ms/refresh, inference "
          f"{r['inference_ms_per_refresh']:.1f} ms/refresh")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("labels", "large", "jobs", "forest"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    if args.only in (None, "labels"):
        part_labels(args.repeats)
    if args.only in (None, "large"):
        part_large()
    if args.only in (None, "jobs"):
        part_jobs(args.repeats)
    if args.only in (None, "forest"):
        part_forest(max(args.repeats, 5))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
