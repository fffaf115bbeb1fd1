"""Benchmark: Dawid–Skene fits per CPU second on small crowds, the fits a design curve makes by
the hundred (``calibrate``: about 850 per run, issue #39), side by side for several checkouts.

Two crowds: 400 tasks x 3 labels of 40 workers, two classes, and the same with four classes.
Each fit is ``make_estimator("ds")`` (the defaults ``calibrate`` uses) on a fresh
:class:`LabelSet` of the same arrays, as a design curve's every draw is: incidence matrix,
majority start, EM to convergence, tie rule and the identifiability check. Each checkout runs
in its own subprocess with its code first on ``PYTHONPATH``, in turn, ``--repeats`` times,
interleaved (checkout 1, 2, 2, 1, ...) so a load that drifts weighs on all alike; the figure is
fits per CPU second (user + system of the process, ``time.process_time``) of ``--fits`` fits.
Each run also prints a digest of every fitted number (posteriors, labels, confusion matrices,
prior, log-likelihood history): checkouts whose EM gives the same bits print the same digest.

    python benchmarks/bench_small_em.py --checkout /work/main --checkout .
    python benchmarks/bench_small_em.py --checkout . --repeats 1 --fits 50   # a quick look
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

CROWDS = {"binary": 2, "4-class": 4}


def crowd_arrays(n_classes: int, n_tasks: int = 400, per_task: int = 3, n_workers: int = 40,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tasks, workers and labels of a crowd of workers right 55-90 % of the time (a wrong
    answer uniform over the other classes)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_classes, n_tasks)
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.argsort(rng.random((n_tasks, n_workers)), axis=1)[:, :per_task].ravel()
    right = rng.random(tasks.size) < rng.uniform(0.55, 0.9, n_workers)[workers]
    wrong = (truth[tasks] + rng.integers(1, n_classes, tasks.size)) % n_classes
    return tasks, workers, np.where(right, truth[tasks], wrong)


def inner(n_classes: int, fits: int) -> dict[str, float | str]:
    """``fits`` fits in this process (one untimed first): fits per CPU second and the digest."""
    from marketsim.aggregation.registry import make_estimator
    from marketsim.data.labels import LabelSet

    tasks, workers, labels = crowd_arrays(n_classes)
    digest = hashlib.sha256()

    def fit() -> None:
        data = LabelSet(tasks, workers, labels, 400, 40, n_classes)
        model = make_estimator("ds").fit(data)
        for value in (model.proba_, model.labels_, model.confusion_, model.prior_,
                      np.asarray(model.log_likelihood_)):
            digest.update(np.ascontiguousarray(value).tobytes())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit()
        start = time.process_time()
        for _ in range(fits):
            fit()
        cpu = time.process_time() - start
    return {"fits_per_cpu_second": fits / cpu, "digest": digest.hexdigest()[:16]}


def run(checkout: str, crowd: str, fits: int) -> dict[str, float | str]:
    """One subprocess on ``checkout``'s code."""
    env = {**os.environ, "PYTHONPATH": str(Path(checkout).resolve())}
    done = subprocess.run([sys.executable, __file__, "--inner", crowd, "--fits", str(fits)],
                          env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", action="append", help="a checkout's folder (repeatable; "
                        "default: this one)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per checkout and crowd")
    parser.add_argument("--fits", type=int, default=200, help="fits timed per run")
    parser.add_argument("--inner", choices=sorted(CROWDS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        print(json.dumps(inner(CROWDS[args.inner], args.fits)))
        return 0
    checkouts = args.checkout or [str(Path(__file__).resolve().parents[1])]
    for crowd in CROWDS:
        rates: dict[str, list[float]] = {c: [] for c in checkouts}
        digests: dict[str, set[str]] = {c: set() for c in checkouts}
        for repeat in range(args.repeats):
            order = checkouts if repeat % 2 == 0 else checkouts[::-1]
            for checkout in order:
                result = run(checkout, crowd, args.fits)
                rates[checkout].append(float(result["fits_per_cpu_second"]))
                digests[checkout].add(str(result["digest"]))
                print(f"{crowd:8} {checkout}: {result['fits_per_cpu_second']:.1f} fits per "
                      f"CPU s (digest {result['digest']})", flush=True)
        for checkout in checkouts:
            print(f"{crowd:8} {checkout}: median {statistics.median(rates[checkout]):.1f} "
                  f"fits per CPU s over {args.repeats} runs; digest "
                  f"{', '.join(sorted(digests[checkout]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
