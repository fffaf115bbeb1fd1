"""Parameter recovery of ``calibrate``'s model fit (issue #41 point 4): the planted mixed crowd
of ``tests/calibrate/_planted_machines.py`` (40 humans, 8 labels a task, difficulty sigma 1;
three classifiers of known accuracy, rho, insight and overconfidence) fitted for 5 seeds, with
a truth file and without one; prints each model's estimates' mean and standard deviation over
the seeds and the largest gap to the planted value (accuracy, rho, and the calibration error
the options imply).

Run from the repository root: ``PYTHONPATH=. python benchmarks/machine_recovery.py [TASKS]``.
"""

from __future__ import annotations

import sys

import numpy as np

from marketsim.aggregation.machine_fit import implied_calibration_error
from tests.calibrate._planted_machines import MODELS, fitted


def main() -> None:
    """Print the recovery table."""
    n_tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    planted = {m["name"]: m for m in MODELS}
    print(f"{n_tasks} tasks, 5 seeds: estimate mean (sd) and largest |gap| to the planted value")
    for with_truth in (True, False):
        fits = [fitted(seed, n_tasks, with_truth).machines for seed in range(5)]
        print(f"\n{'with' if with_truth else 'without'} a truth file")
        print("| model | accuracy | rho | calibration error (implied) |")
        print("|---|---|---|---|")
        for m, name in enumerate(sorted(planted)):
            p = planted[name]
            true = (p["accuracy"], p["rho"], implied_calibration_error(
                p["accuracy"], p["insight"], p["overconfidence"]))
            cells = []
            for j, key in enumerate(("accuracy", "rho", "implied_ece")):
                values = np.array([getattr(f[m], key) for f in fits], dtype=float)
                cells.append(f"{true[j]:.3f}: {values.mean():.3f} ({values.std(ddof=1):.3f}), "
                             f"max gap {np.abs(values - true[j]).max():.3f}")
            print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
