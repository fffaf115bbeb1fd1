"""GLAD's and MACE's fit times on one million labels as multiples of our Dawid–Skene fit's,
measured in the same run (issue #27: at most 20×).

The 1,000,000 synthetic labels of ``make_synthetic_labels.py`` (100,000 tasks × 10 labels,
2,000 workers, K = 2); each round fits ``DawidSkene()``, ``GLAD()`` and ``MACE()`` one after
the other on a fresh copy of the labels (no cached incidence), so a slow moment of a shared
machine hits all three. Prints each round's times, then the median times, and the ratios to
D&S per round: their median and their range (min–max).

Run: ``python benchmarks/million_ratio.py [--rounds 5]``.

Each fit's process CPU time is measured too (all threads; less moved by other jobs on a shared
machine than wall time) and its ratios printed after the wall-time ones. ``--metric glad`` (or
``mace``, ``glad-cpu``, ``mace-cpu``) also prints a median ratio as the line ``{"metric":
"glad", "seconds": RATIO}`` that ``compare_commits.py --metric`` reads, so two commits'
ratios can be compared interleaved (the marketsim on ``PYTHONPATH`` is measured, as
compare_commits sets it)::

    python benchmarks/compare_commits.py OLD NEW --bench cmd --metric glad --repeats 5 -- \
        $PWD/benchmarks/million_ratio.py --rounds 1 --metric glad
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

# With PYTHONPATH set (as compare_commits.py sets it per checkout) the marketsim found there is
# measured, else this checkout's; it is imported before make_synthetic_labels, which puts this
# checkout first on sys.path.
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import marketsim  # noqa: E402
from marketsim.aggregation import GLAD, MACE, DawidSkene  # noqa: E402
from marketsim.data.labels import LabelSet  # noqa: E402

MEASURED = Path(marketsim.__file__).parent  # the marketsim under test, printed first

from make_synthetic_labels import make_crowd  # noqa: E402

METHODS = {"ds": DawidSkene, "glad": GLAD, "mace": MACE}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--metric", choices=("glad", "mace", "glad-cpu", "mace-cpu"),
                        default=None, help='also print {"metric": NAME, "seconds": median '
                        'ratio to D&S} (wall time, or with -cpu the process CPU time)')
    args = parser.parse_args(argv)
    print(f"marketsim from {MEASURED}")
    base = make_crowd(n_classes=2).labelset
    times: dict[str, list[float]] = {name: [] for name in METHODS}
    cpu: dict[str, list[float]] = {name: [] for name in METHODS}
    for r in range(args.rounds):
        for name, make in METHODS.items():
            data = LabelSet(base.tasks, base.workers, base.labels, base.n_tasks,
                            base.n_workers, base.n_classes)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start, start_cpu = time.perf_counter(), time.process_time()
                make().fit(data)
                times[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
        print(f"round {r + 1}: " + "  ".join(f"{n} {t[-1]:.3f} s" for n, t in times.items())
              + "  (CPU " + "  ".join(f"{n} {t[-1]:.3f} s" for n, t in cpu.items()) + ")",
              flush=True)
    print("medians: " + "  ".join(f"{n} {statistics.median(t):.3f} s" for n, t in times.items()))
    for name in ("glad", "mace"):
        for what, table in (("", times), ("-cpu", cpu)):
            ratios = [m / d for m, d in zip(table[name], table["ds"], strict=True)]
            print(f"{name} / ds{' (CPU time)' if what else ''}: median "
                  f"{statistics.median(ratios):.1f}x (range {min(ratios):.1f}-"
                  f"{max(ratios):.1f}x over {len(ratios)} rounds)")
            if name + what == args.metric:
                print(json.dumps({"metric": args.metric, "seconds": statistics.median(ratios)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
