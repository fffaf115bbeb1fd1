"""Per-label cost of a platform preset's market as its tasks grow, side by side for several
checkouts (issue #40: the "as collected" arm of a calibrated twin is ``fixed-overlap`` with one
overlap per task, and a 1,000,000-label file of 51,000 tasks took over 10 minutes in it).

    python benchmarks/preset_market_scale.py --checkout /work/main --checkout .
    python benchmarks/preset_market_scale.py --tasks 2000 --tasks 8000 --tasks 32000 --overlap 20

Each size is one scenario: ``--tasks`` tasks of two classes, ``--workers`` one-coin workers,
a ``fixed-overlap`` arm handing every task ``--overlap`` labels (the first one per task in the
initial graph, as calibrate's twins do), majority vote refitted every ``--batch`` labels, so
the market's hand-out, not inference, is what is timed. Each checkout runs it in a subprocess
from its own folder (its code first on ``PYTHONPATH``), interleaved over ``--repeats``
(checkout 1, 2, 2, 1, ...) so a drifting load weighs on all alike. Printed: per size and
checkout, the median CPU microseconds per label (user + system of the child) and the labels
bought; a market whose hand-out reads every task at every arrival shows a cost per label
growing with the tasks, a linear one a flat cost. ``--timeout`` stops a run that would take
too long (reported as such).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SCENARIO = """[scenario]
name = "preset market scale"
seed = 7
replicates = 1

[tasks]
count = {tasks}
classes = 2

[workers]
count = {workers}
model = "one-coin"

[workers.ability]
distribution = "shifted-beta"
alpha = 6
beta = 2
low = 0.1

[workers.arrivals]
rate = 1.0

[workers.service]
mean = 0.0

[budget]
edges = {edges}
initial = "one-per-task"
batch = {batch}

[[arms]]
name = "fixed overlap"
policy = {{ name = "fixed-overlap", overlap = {overlap} }}
inference = "mv"
"""

#: Run in the child: the market of the scenario's one arm, timed on the child's CPU clock.
CHILD = """
import sys, time
from marketsim.scenario.parser import load_scenario
from marketsim.study.twin import simulated_labels
scenario = load_scenario(sys.argv[1])
start = time.process_time()
labels = simulated_labels(scenario, 0, times=False)[0]
print(labels.tasks.shape[0], time.process_time() - start)
"""


def run_once(checkout: Path, scenario: Path, timeout: float) -> tuple[int, float] | None:
    """(labels bought, CPU seconds of the market) of one run from ``checkout``; ``None`` when
    it did not finish within ``timeout`` seconds."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, str(scenario)], cwd=checkout,
                              env=env, capture_output=True, text=True, timeout=timeout,
                              check=True)
    except subprocess.TimeoutExpired:
        return None
    labels, cpu = done.stdout.split()[-2:]
    return int(labels), float(cpu)


def main(argv: list[str] | None = None) -> int:
    """Parse the options, time every size on every checkout, print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", action="append", type=Path,
                        help="a checkout to time (repeat for side by side; default: this one)")
    parser.add_argument("--tasks", action="append", type=int,
                        help="tasks of one size (repeat; default 2,000, 8,000 and 32,000)")
    parser.add_argument("--overlap", type=int, default=20, help="labels per task (default 20)")
    parser.add_argument("--workers", type=int, default=110, help="workers (default 110)")
    parser.add_argument("--batch", type=int, default=50_000,
                        help="labels between majority-vote refits (default 50,000)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per checkout and size")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds after which a run is stopped (default 900)")
    ns = parser.parse_args(argv)
    if ns.overlap > ns.workers:
        parser.error(f"--overlap {ns.overlap} needs at least as many --workers")
    checkouts = [c.resolve() for c in (ns.checkout or [Path(__file__).resolve().parents[1]])]
    with tempfile.TemporaryDirectory() as tmp:
        for tasks in ns.tasks or [2_000, 8_000, 32_000]:
            path = Path(tmp) / f"preset_{tasks}.toml"
            path.write_text(SCENARIO.format(tasks=tasks, workers=ns.workers, batch=ns.batch,
                                            edges=tasks * ns.overlap, overlap=ns.overlap))
            cost: dict[Path, list[float]] = {c: [] for c in checkouts}
            bought: dict[Path, int] = {}
            for r in range(ns.repeats):
                for checkout in checkouts if r % 2 == 0 else checkouts[::-1]:
                    result = run_once(checkout, path, ns.timeout)
                    if result is None:
                        print(f"{tasks} tasks, {checkout}: stopped after {ns.timeout:.0f} s",
                              flush=True)
                        continue
                    bought[checkout] = result[0]
                    cost[checkout].append(1e6 * result[1] / result[0])
                    print(f"{tasks} tasks, {checkout}: {result[0]:,} labels, "
                          f"{cost[checkout][-1]:.1f} CPU us per label", flush=True)
            for checkout, us in cost.items():
                if us:
                    print(f"median {tasks} tasks, {checkout}: {statistics.median(us):.1f} CPU us "
                          f"per label ({min(us):.1f}-{max(us):.1f}), {bought[checkout]:,} labels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
