"""Issue #40's diagnosis, without a market: each candidate world ``marketsim calibrate`` fits,
replayed on the real file's own (task, worker) pairs
(:mod:`marketsim.aggregation.world_replay`), against the real design curve at k = 3, 5 and the
full data, majority vote and Dawid–Skene. The world answers the same workers on the same tasks
as the file, so a gap here is the world's; the twin market's curve
(``benchmarks/twin_design_curve.py``) minus this one is the market's choice of who labels what.
Also per set: how the labels are spread over the workers (the busiest tenth's share) and
whether the busy workers are the good ones (label-weighted accuracy of the half of workers who
gave the fewest labels, the next 40 % and the busiest tenth). Run, e.g.::

    MARKETSIM_DATA=/work/shared/data python benchmarks/world_on_pairs.py --dataset web

Each set's worlds are fitted first (seconds to a minute), then every world is replayed
``--replicates`` times with 2 draws of k labels each (a few seconds a world).
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np

from marketsim.aggregation.confusion_fit import ConfusionFit, candidate_worlds
from marketsim.aggregation.crowd_worlds import crowd_worlds
from marketsim.aggregation.curve_difficulty import curve_worlds
from marketsim.aggregation.design_curve import DesignCurve, real_curve
from marketsim.aggregation.fit_reference import reference
from marketsim.aggregation.pull_fit import pull_worlds
from marketsim.aggregation.world_replay import pairs_curve
from marketsim.cli.calibrate import checked_input
from marketsim.data.datasets import DATASETS, dataset_paths
from marketsim.data.labels import LabelSet
from marketsim.data.load import load_labels

KS = (3, 5)


def cells(curve: DesignCurve) -> str:
    """MV / DS at each design, %."""
    return " | ".join(f"{100 * v:.2f} / {100 * d:.2f}" for v, d in zip(curve.vote, curve.ds,
                                                                      strict=True))


def activity(data: LabelSet, truth: np.ndarray) -> str:
    """The busiest tenth's share of the labels and accuracy by activity group."""
    per_worker = np.bincount(data.workers, minlength=data.n_workers)
    ranked = np.sort(per_worker)[::-1]
    top = ranked[: max(data.n_workers // 10, 1)].sum() / ranked.sum()
    judged = truth[data.tasks] >= 0
    right = (data.labels == truth[data.tasks]) & judged
    group = np.digitize(per_worker, np.quantile(per_worker, [0.5, 0.9]))[data.workers]
    acc = [f"{right[group == g].sum() / max(judged[group == g].sum(), 1):.3f}"
           for g in range(3)]
    return (f"busiest tenth of workers give {100 * top:.0f} % of the labels; label-weighted "
            f"accuracy of the least active half / next 40 % / busiest tenth: {' / '.join(acc)}")


def main(argv: list[str] | None = None) -> int:
    """Print, per set, the real curve and every world's on the real pairs."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", action="append", choices=DATASETS)
    p.add_argument("--data-dir", help="folder of the reference data (default: $MARKETSIM_DATA)")
    p.add_argument("--replicates", type=int, default=5)
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    for name in args.dataset or ["rte", "dog", "web"]:
        print(f"{name}...", file=sys.stderr, flush=True)
        crowd_file, truth_file = dataset_paths(name, args.data_dir)
        data, truth = load_labels(str(crowd_file), str(truth_file), "zhang")
        data, known_truth = checked_input(data, np.asarray(truth), str(crowd_file))
        assert known_truth is not None
        weights, _, ref, _, _ = reference(data, known_truth)
        known = known_truth >= 0
        fits = candidate_worlds(data.tasks, data.workers, data.labels, weights, data.n_workers)
        crowd = crowd_worlds(data.tasks, data.workers, data.labels, weights, data.n_workers)
        real = real_curve(data, known_truth, ks=KS)
        full_real = real_curve(data, known_truth)
        crowd += curve_worlds(crowd[:2], data, ref, known, full_real, weights)
        crowd += pull_worlds(data, weights, ref, known, full_real)
        print(f"\n{name}: {activity(data, known_truth)}\n")
        print("| world | sigma | k = 3 | k = 5 | full |\n|---|---|---|---|---|")
        print(f"| real labels | | {cells(real)} |")
        world: ConfusionFit
        for world in (*fits, *crowd):
            curve = pairs_curve(world, data, ref, known, KS, args.replicates)
            print(f"| {world.name} | {world.sigma:.2f} | {cells(curve)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
