"""Benchmark: Hoiem's bad-annotator EM and Jin & Zhang's features EM *through the market*.

Part 1 runs ``scenarios/bad_annotators.toml`` (30 % bad annotators) and prints, at several
budgets, the median over replicates of each arm's task-mean RMSE next to the RMSE of the plain
(unweighted) mean of exactly the same scores (the ``plain_rmse`` column every continuous arm
records), and the reduction. Acceptance (issue 6): the EM's RMSE at least 30 % below the plain
mean's.

Part 2 runs ``scenarios/features.toml`` (informative features) and the same scenario with pure
noise features (``tasks.features.informativeness = 0``), and prints the median error of Dawid-Skene
and of the features EM under the same policy.

Usage: ``python benchmarks/bench_market_continuous.py [--replicates 20] [--jobs 2]``.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marketsim.record.units import UnitResult  # noqa: E402
from marketsim.scenario.parser import load_scenario, parse_scenario  # noqa: E402
from marketsim.scenario.specs import Scenario  # noqa: E402
from marketsim.study.runner import run_study  # noqa: E402

TARGET = 0.30


def at_budgets(results: list[UnitResult], arm: int, column: str,
               budgets: list[int]) -> np.ndarray:
    """(replicates, budgets) values of ``column`` for one arm."""
    units = sorted((u for u in results if u.arm == arm), key=lambda u: u.replicate)
    return np.array([[next(getattr(r, column) for r in u.rows if r.edges == b) for b in budgets]
                     for u in units])


def budgets_of(results: list[UnitResult], n_tasks: int) -> list[int]:
    """Recorded edge counts at whole multiples of the task count (labels per task)."""
    edges = sorted({r.edges for u in results for r in u.rows})
    return [e for e in edges if e % n_tasks == 0 and e > n_tasks] or edges[-1:]


def continuous(sc: Scenario, jobs: int) -> bool:
    started = time.perf_counter()
    results = run_study(sc, jobs=jobs)
    seconds = time.perf_counter() - started
    n = sc.tasks.count
    budgets = budgets_of(results, n)
    gs = sc.workers.gaussian_scores
    print(f"## {sc.name}: {n} tasks, {sc.workers.count} annotators, "
          f"{1 - gs.good_fraction:.0%} bad, sigma {gs.sigma}, {sc.replicates} replicates "
          f"(seed {sc.seed}), {seconds:.1f} s")
    print("medians over replicates; reduction = 1 - median(RMSE / plain-mean RMSE)")
    print(f"{'arm':<22} {'labels':>6} {'per task':>8} {'RMSE':>8} {'plain':>8} "
          f"{'reduction':>9} {'good call':>9}")
    met: dict[int, bool] = {}
    for a, arm in enumerate(sc.arms):
        rmse = at_budgets(results, a, "rmse", budgets)
        plain = at_budgets(results, a, "plain_rmse", budgets)
        acc = at_budgets(results, a, "good_accuracy", budgets)
        for j, b in enumerate(budgets):
            red = 1.0 - float(np.median(rmse[:, j] / plain[:, j]))
            if arm.name == "uniform + EM":
                met[b] = red >= TARGET
            print(f"{arm.name:<22} {b:>6} {b / n:>8.0f} {np.median(rmse[:, j]):>8.4f} "
                  f"{np.median(plain[:, j]):>8.4f} {100 * red:>8.1f}% "
                  f"{100 * np.median(acc[:, j]):>8.1f}%")
    yes = [f"{b // n}" for b, v in met.items() if v]
    no = [f"{b // n}" for b, v in met.items() if not v]
    print(f"acceptance (uniform + EM at least {TARGET:.0%} below the plain mean): met at "
          f"{', '.join(yes) or 'no budget'} labels per task; not met at "
          f"{', '.join(no) or 'no budget'}")
    return bool(met) and met[max(met)]


def features(sc: Scenario, jobs: int, label: str) -> None:
    started = time.perf_counter()
    results = run_study(sc, jobs=jobs)
    seconds = time.perf_counter() - started
    n = sc.tasks.count
    budgets = budgets_of(results, n)
    print(f"## {sc.name} [{label}]: {n} tasks, {sc.workers.count} workers, "
          f"{sc.replicates} replicates (seed {sc.seed}), {seconds:.1f} s")
    print("median task error rate over replicates (%)")
    print(f"{'arm':<36} " + " ".join(f"{b:>7}" for b in budgets))
    for a, arm in enumerate(sc.arms):
        err = at_budgets(results, a, "error_rate", budgets)
        print(f"{arm.name:<36} " + " ".join(f"{100 * np.median(err[:, j]):>7.2f}"
                                             for j in range(len(budgets))))


def with_informativeness(sc: Scenario, value: float) -> Scenario:
    raw = copy.deepcopy(dict(sc.raw))
    raw["tasks"]["features"]["informativeness"] = value
    out = parse_scenario(raw, sc.source)
    return out.with_overrides(replicates=sc.replicates, seed=sc.seed)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replicates", type=int, default=20)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--skip-features", action="store_true")
    args = p.parse_args()
    bad = load_scenario(ROOT / "scenarios" / "bad_annotators.toml")
    ok = continuous(bad.with_overrides(replicates=args.replicates), args.jobs)
    if not args.skip_features:
        print()
        feat = load_scenario(ROOT / "scenarios" / "features.toml")
        feat = feat.with_overrides(replicates=args.replicates)
        features(feat, args.jobs, "informative, as shipped")
        print()
        features(with_informativeness(feat, 0.0), args.jobs, "noise: informativeness = 0")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
