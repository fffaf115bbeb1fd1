"""Issue #40's diagnosis from the real labels alone: which structure of a crowd's labels sets
which point of its design curve. Each row shuffles the real labels so as to keep one structure
and destroy another, then draws the design curve as the real one is drawn (k of each task's
labels at random, k = 3, 5 and the full data; majority vote and Dawid–Skene against the
truth):

- **real labels**: the file as it is;
- **worker × class shuffled**: each worker's labels shuffled among that worker's tasks of the
  same true class — every worker keeps exactly its confusion counts (its bias, its accuracy,
  its number of labels, its tasks), but which of a task's workers err is no longer shared:
  the errors are independent given the class, Dawid & Skene's (1979) model with the file's
  own matrices;
- **task shuffled**: each task's labels shuffled among its workers — every task keeps its
  answers (the per-task share of correct labels, its ambiguity), but a worker's labels no
  longer say who is reliable;
- **class shuffled**: every label shuffled among the tasks of its true class (both gone).

A twin's world must reproduce the real row; the gaps between the rows say what each
structure is worth at each design, and which of them a fitted world gets wrong
(docs/explanation/models/calibration/spread-and-ambiguity.md). Run, e.g.::

    MARKETSIM_DATA=/work/shared/data PYTHONPATH=. python benchmarks/label_permutations.py \
        --dataset rte --dataset dog --labels face=answer.csv:truth.csv

No fit and no market: each row costs its Dawid–Skene runs (seconds a set).
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable

import numpy as np

from marketsim.aggregation.design_curve import References, errors, keep_k_per_task, subset
from marketsim.cli.calibrate import checked_input
from marketsim.data.datasets import DATASETS, dataset_paths
from marketsim.data.labels import LabelSet
from marketsim.data.load import load_labels

#: The designs (labels per task; the full data comes after them).
KS = (3, 5)
#: The rows of the table, in order.
SHUFFLES = ("real labels", "worker × class shuffled", "task shuffled", "class shuffled")


def shuffled_within(groups: np.ndarray, values: np.ndarray, rng: np.random.Generator
                    ) -> np.ndarray:
    """``values`` permuted at random within each group of ``groups`` (each group keeps the
    multiset of its values; one sort, no loop over groups)."""
    by_group = np.argsort(groups, kind="stable")
    shuffled = np.lexsort((rng.random(values.size), groups))
    out = np.empty_like(values)
    out[by_group] = values[shuffled]
    return out


def shuffle_groups(data: LabelSet, truth: np.ndarray) -> dict[str, np.ndarray | None]:
    """Per row of :data:`SHUFFLES`, the groups within which the labels are shuffled."""
    classes = truth[data.tasks]
    return {"real labels": None,
            "worker × class shuffled": data.workers * data.n_classes + classes,
            "task shuffled": data.tasks,
            "class shuffled": classes}


def curve_of(data: LabelSet, truth: np.ndarray, make: Callable[[np.random.Generator],
             np.ndarray], shuffles: int, draws: int, seed: int = 0) -> np.ndarray:
    """Mean errors (points, 2: majority vote, Dawid–Skene) over ``shuffles`` label sets made
    by ``make`` and ``draws`` draws of k labels per task of each."""
    rng = np.random.default_rng(seed)
    refs = References(truth, truth, "truth")
    runs = []
    for _ in range(shuffles):
        labels = LabelSet(data.tasks, data.workers, make(rng), data.n_tasks, data.n_workers,
                          data.n_classes)
        full = errors(labels, refs)
        for _ in range(draws):
            runs.append([*(errors(subset(labels, keep_k_per_task(labels.tasks, k, rng)), refs)
                           for k in KS), full])
    return np.asarray(runs, dtype=np.float64).mean(axis=0)


def rows_for(name: str, data: LabelSet, truth: np.ndarray, shuffles: int, draws: int
             ) -> list[str]:
    """The table's rows of one set (the real labels' ``shuffles * draws`` draws of k)."""
    judged = truth >= 0
    data = subset(data, judged[data.tasks])
    lines = []
    for label, groups in shuffle_groups(data, truth).items():
        if groups is None:
            point = curve_of(data, truth, lambda rng: data.labels, 1, shuffles * draws)
        else:
            def make(rng: np.random.Generator, g: np.ndarray = groups) -> np.ndarray:
                return shuffled_within(g, data.labels, rng)
            point = curve_of(data, truth, make, shuffles, draws)
        cells = " | ".join(f"{100 * v:.2f} / {100 * d:.2f}" for v, d in point)
        lines.append(f"| {name} | {label} | {cells} |")
    return lines


def load(spec: str, data_dir: str | None) -> tuple[str, LabelSet, np.ndarray]:
    """A reference set by name, or ``NAME=LABELS:TRUTH`` (duplicate pairs: the first kept)."""
    name, sep, paths = spec.partition("=")
    if sep:
        labels_file, _, truth_file = paths.rpartition(":")
        data, truth = load_labels(labels_file, truth_file, duplicates="first")
    else:
        labels_file, truth_file = (str(p) for p in dataset_paths(name, data_dir))
        data, truth = load_labels(labels_file, truth_file, "zhang")
    if truth is None:
        raise SystemExit(f"{spec}: the diagnosis needs a truth file")
    data, known = checked_input(data, np.asarray(truth), labels_file)
    assert known is not None
    return name, data, known


def main(argv: list[str] | None = None) -> int:
    """Print the table: per set and shuffle, MV / DS error at k = 3, 5 and full."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", action="append", default=[], choices=DATASETS)
    p.add_argument("--labels", action="append", default=[], metavar="NAME=LABELS:TRUTH")
    p.add_argument("--data-dir", help="folder of the reference data (default: $MARKETSIM_DATA)")
    p.add_argument("--shuffles", type=int, default=4)
    p.add_argument("--draws", type=int, default=3, help="draws of k labels per shuffle")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    print("Error %, majority vote / Dawid-Skene (mean of "
          f"{args.shuffles} shuffles x {args.draws} draws of k labels per task):\n")
    print("| set | labels | k = 3 | k = 5 | full |\n|---|---|---|---|---|")
    for spec in [*args.dataset, *args.labels] or ["rte", "dog"]:
        print("\n".join(rows_for(*load(spec, args.data_dir), args.shuffles, args.draws)),
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
