"""Benchmark: Hoiem's bad-annotator EM vs the plain mean on synthetic continuous markets,
plus Jin & Zhang's features-EM vs Dawid–Skene on synthetic crowds with binary task features.

Continuous part (acceptance target: median RMSE of the EM task means at least 30 % below the
plain mean's): 1,000 tasks, 20 annotators, 5 distinct annotators per task, 30 % of the
annotators bad (uniform scores), good scores ``N(mu_i, 0.05^2)`` clipped to [0, 1].

Usage: ``python benchmarks/bench_continuous.py [--seeds 10] [--skip-features]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from marketsim.aggregation.bad_annotators import (  # noqa: E402
    GaussianBadAnnotatorEM,
    GaussianHardEM,
    plain_means,
    simulate_bad_annotators,
)
from marketsim.aggregation.dawid_skene import DawidSkene  # noqa: E402
from marketsim.aggregation.features import DawidSkeneWithFeatures, simulate_features  # noqa: E402
from marketsim.data.labels import LabelSet  # noqa: E402


def rmse(est: np.ndarray, truth: np.ndarray) -> float:
    return float(np.sqrt(np.mean((est - truth) ** 2)))


def continuous(
    seeds: int, bad_fraction: float, sigma: float, n_tasks: int = 1000, per_task: int = 5
) -> bool:
    """Print per-seed RMSEs; return whether the 30 % target is met on the median."""
    print(f"## continuous: {n_tasks} tasks, 20 annotators, {per_task} scores/task, "
          f"{bad_fraction:.0%} bad, "
          f"sigma {sigma}")
    print(f"{'seed':>4} {'plain':>8} {'EM':>8} {'hard EM':>8} {'oracle':>8} "
          f"{'EM gain':>8} {'types ok':>8} {'iters':>5} {'ms':>6}")
    rows = []
    for seed in range(seeds):
        data, mu, good = simulate_bad_annotators(
            n_tasks, 20, per_task, bad_fraction=bad_fraction, sigma=sigma, random_state=seed
        )
        t0 = time.perf_counter()
        soft = GaussianBadAnnotatorEM().fit(data)
        ms = 1e3 * (time.perf_counter() - t0)
        hard = GaussianHardEM().fit(data)
        # oracle: mean of the truly good scores (plain mean where a task has none)
        oracle = plain_means(data.subset(good[data.workers]))
        oracle = np.where(np.isnan(oracle), plain_means(data), oracle)
        r = (rmse(plain_means(data), mu), rmse(soft.means_, mu), rmse(hard.means_, mu),
             rmse(oracle, mu))
        ok = bool(np.all((soft.good_proba_ > 0.5) == good))
        rows.append(r)
        print(f"{seed:>4} {r[0]:8.4f} {r[1]:8.4f} {r[2]:8.4f} {r[3]:8.4f} "
              f"{1 - r[1] / r[0]:8.1%} {ok!s:>8} {soft.n_iter_:>5} {ms:6.1f}")
    med = np.median(np.asarray(rows), axis=0)
    gain = 1 - med[1] / med[0]
    print(f"median plain {med[0]:.4f}  EM {med[1]:.4f}  hard EM {med[2]:.4f}  "
          f"oracle {med[3]:.4f}  -> EM RMSE {gain:.1%} lower (target >= 30%): "
          f"{'PASS' if gain >= 0.30 else 'FAIL'}")
    return gain >= 0.30


def crowd(n: int, m: int, k: int, per_task: int, rng: np.random.Generator
          ) -> tuple[LabelSet, np.ndarray]:
    """D&S crowd, accuracy ~ U(0.6, 0.9), errors uniform over the wrong classes."""
    truth = rng.integers(0, k, n)
    acc = rng.uniform(0.6, 0.9, m)
    conf = np.repeat(((1 - acc) / (k - 1))[:, None, None], k, axis=1).repeat(k, axis=2)
    conf[:, np.arange(k), np.arange(k)] = acc[:, None]
    workers = np.argsort(rng.random((n, m)), axis=1)[:, :per_task].ravel()
    tasks = np.repeat(np.arange(n), per_task)
    cum = conf[workers, truth[tasks]].cumsum(axis=1)
    labels = np.minimum((rng.random(tasks.size)[:, None] > cum).sum(axis=1), k - 1)
    return LabelSet(tasks, workers, labels, n, m, k), truth


def features(seeds: int) -> None:
    """Error of D&S (smoothing 0 and 1) vs features-EM, for three feature regimes."""
    n, m, per_task, n_feat = 2000, 30, 3, 10
    print(f"\n## features: {n} tasks, {m} workers, {per_task} labels/task, accuracy U(0.6, 0.9), "
          f"{n_feat} binary features; mean error over {seeds} seeds (max per-seed diff)")
    print(f"{'K':>2} {'features':<22} {'D&S s=0':>8} {'D&S s=1':>8} {'D&S+feat':>9} "
          f"{'diff vs s=1':>12} {'max diff':>9}")
    for k in (2, 3):
        own = (np.arange(n_feat)[None, :] % k) == np.arange(k)[:, None]
        regimes = {
            "informative 0.7/0.3": lambda rng, own=own: np.where(own, 0.7, 0.3),
            "weak 0.6/0.4": lambda rng, own=own: np.where(own, 0.6, 0.4),
            "noise (same phi)": lambda rng, k=k: np.tile(rng.uniform(0.1, 0.9, n_feat), (k, 1)),
        }
        for name, make_phi in regimes.items():
            errs = []
            for seed in range(seeds):
                rng = np.random.default_rng(1000 + seed)
                data, truth = crowd(n, m, k, per_task, rng)
                x = simulate_features(truth, make_phi(rng), rng)
                errs.append([
                    np.mean(DawidSkene().fit(data).labels_ != truth),
                    np.mean(DawidSkene(smoothing=1.0).fit(data).labels_ != truth),
                    np.mean(DawidSkeneWithFeatures().fit(data, features=x).labels_ != truth),
                ])
            e = np.asarray(errs)
            d = e[:, 2] - e[:, 1]
            print(f"{k:>2} {name:<22} {e[:, 0].mean():8.2%} {e[:, 1].mean():8.2%} "
                  f"{e[:, 2].mean():9.2%} {d.mean():+12.2%} {d.max():+9.2%}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--bad-fraction", type=float, default=0.3)
    parser.add_argument("--sigma", type=float, default=0.05)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--per-task", type=int, default=5)
    parser.add_argument("--skip-features", action="store_true")
    args = parser.parse_args()
    ok = continuous(args.seeds, args.bad_fraction, args.sigma, args.tasks, args.per_task)
    if not args.skip_features:
        features(args.seeds)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
