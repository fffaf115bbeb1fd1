"""Would a twin judged where the truth is, by the workers who labelled there, match the real
curve? A check for a file whose truth covers some tasks labelled by another mix of workers
(``calibrate`` warns: ``calibration_input.judged_crowd_note``; AdultContent2, issue #40).

The calibrated twin's world (``--twin``, a scenario ``marketsim calibrate`` wrote for the same
file) is run in two groups of tasks: the tasks without a truth, each worker arriving as often
as they labelled those, and the tasks with a truth, each worker as often as they labelled
them and the truth's class mix as prior. Each group is drawn at exactly k labels per task
(the design sampler, a replicate's world each) and as collected (each task its own count);
majority vote and Dawid–Skene are fitted on both groups at once, as on the file, and judged
on the group with a truth. The real curve is the file's own (``--draws`` random draws of k of
each task's labels, :func:`marketsim.aggregation.design_curve.real_curve`). Prints a markdown
table at k = 3, 5 and the full data. Run, e.g.::

    PYTHONPATH=. python benchmarks/gold_crowd_twin.py answer.csv --truth truth.csv \\
        --twin calibrated_adult2.toml --duplicates first

A worker who never labelled a group arrives there with a weight of :data:`ABSENT` (a
scenario's arrival weights are positive): in expectation under a thousandth of a label.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from marketsim.aggregation.design_curve import References, errors, real_curve
from marketsim.data.calibration_input import labelled_only
from marketsim.data.labels import LabelSet
from marketsim.data.load import load_labels
from marketsim.errors import InputError
from marketsim.scenario.parser import load_scenario
from marketsim.scenario.specs import Scenario
from marketsim.study.twin import as_collected
from marketsim.study.twin_curve import exact_labels

#: The designs compared (labels per task; the full data comes after them).
KS = (3, 5)
#: The arrival weight (a share of the group's labels) of a worker who never labelled a group.
ABSENT = 1e-9
#: Replicate numbers of the group with a truth start here (its worlds drawn apart from the
#: other group's).
JUDGED_OFFSET = 1_000_000


def group(twin: Scenario, data: LabelSet, mask: np.ndarray, prior: Any) -> Scenario:
    """The twin's world on the tasks of ``mask``: each worker arriving as often as they
    labelled those tasks, each task as many labels as collected, class prior ``prior``."""
    on = mask[data.tasks]
    counts = np.bincount(data.workers[on], minlength=data.n_workers).astype(np.float64)
    weights = np.where(counts > 0, counts / counts.sum(), ABSENT)
    per_task = np.bincount(data.tasks[on], minlength=data.n_tasks)[mask]
    overlaps, tasks = np.unique(per_task, return_counts=True)
    arm = {"name": "as collected", "initial": "one-per-task",
           "policy": {"name": "fixed-overlap",
                      "overlaps": [[int(o), int(t)] for o, t in zip(overlaps, tasks, strict=True)]},
           "inference": {"method": "ds", "class_prior": "estimate"}}
    return twin.replace({"tasks.count": int(mask.sum()), "tasks.prior": [float(p) for p in prior],
                         "workers.arrivals.weights": weights.tolist(),
                         # shares of the group's labels, not a deck's whole cards (a twin
                         # written since session 32 deals its file's labels as a deck)
                         "workers.arrivals.order": "independent",
                         "budget.edges": int(counts.sum()), "budget.batch": int(mask.sum()),
                         "arms": [arm]})


def judged_effects(judged: Scenario, sigma: float | None, diagonal: float | None) -> Scenario:
    """The judged group with its own difficulty ``sigma`` and, with ``diagonal``, look-alike
    tasks: each class but the most common one looks like it with probability ``1 -
    diagonal`` (None: the twin's own effects)."""
    changes: dict[str, Any] = {}
    if sigma is not None:
        changes["workers.confusion.sigma"] = sigma
    if diagonal is not None:
        k = judged.tasks.classes
        common = int(np.argmax(judged.tasks.prior))
        look = np.eye(k) * diagonal
        look[:, common] += 1.0 - diagonal
        look[common] = np.eye(k)[common]
        changes["workers.confusion.lookalike"] = look.tolist()
    return judged.replace(changes) if changes else judged


def merged(rest: LabelSet, judged: LabelSet) -> LabelSet:
    """Both groups' labels as one file, the judged group's tasks after the others'."""
    return LabelSet(np.concatenate([rest.tasks, judged.tasks + rest.n_tasks]),
                    np.concatenate([rest.workers, judged.workers]),
                    np.concatenate([rest.labels, judged.labels]),
                    rest.n_tasks + judged.n_tasks, rest.n_workers, rest.n_classes)


def two_group_runs(rest: Scenario, judged: Scenario, replicates: range) -> np.ndarray:
    """(replicates, points, 2): majority vote's and Dawid–Skene's errors on the judged group
    at :data:`KS` and as collected."""
    runs = []
    for replicate in replicates:
        other = replicate + JUDGED_OFFSET
        rest_full, _, _, rest_world = as_collected(rest, replicate, False)
        gold_full, truth, _, gold_world = as_collected(judged, other, False)
        rest_k = exact_labels(rest, KS, replicate, False, rest_world)
        gold_k = exact_labels(judged, KS, other, False, gold_world)
        reference = np.concatenate([np.full(rest_full.n_tasks, -1), truth])
        refs = References(reference, reference, "truth", None)
        runs.append([errors(merged(a, b), refs)
                     for a, b in [*zip(rest_k, gold_k, strict=True), (rest_full, gold_full)]])
    return np.asarray(runs, dtype=np.float64)


def main(argv: list[str] | None = None) -> int:
    """Print the real curve against the two-group twin's (exit code 2, one line, on bad
    input)."""
    try:
        return compare(argv)
    except InputError as exc:
        print(exc, file=sys.stderr)
        return 2


def compare(argv: list[str] | None) -> int:
    """:func:`main`'s work."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("labels")
    p.add_argument("--truth", required=True)
    p.add_argument("--twin", required=True, help="the scenario calibrate wrote for the file")
    p.add_argument("--duplicates", default="error", choices=("error", "first", "last"))
    p.add_argument("--replicates", type=int, default=10)
    p.add_argument("--draws", type=int, default=100)
    p.add_argument("--judged-sigma", type=float, default=None,
                   help="the judged group's task difficulty (workers.confusion.sigma; default: "
                        "the twin's)")
    p.add_argument("--judged-lookalike", type=float, default=None, metavar="DIAGONAL",
                   help="give the judged group look-alike tasks: a task of any class but the "
                        "twin's most common one looks like that class with probability "
                        "1 - DIAGONAL (a probe of how shared the gold's errors are)")
    args = p.parse_args(argv)
    data, truth = load_labels(args.labels, args.truth, duplicates=args.duplicates)
    data, truth, _ = labelled_only(data, truth)
    if truth is None or not (truth >= 0).any() or (truth >= 0).all():
        print(f"{args.truth}: the check needs a truth on some of the labelled tasks, not all",
              file=sys.stderr)
        return 2
    known = truth >= 0
    twin = load_scenario(args.twin)
    if (twin.workers.count, twin.tasks.classes) != (data.n_workers, data.n_classes):
        print(f"{args.twin}: a twin of {twin.workers.count} workers and {twin.tasks.classes} "
              f"classes, the file has {data.n_workers} and {data.n_classes}: calibrate the "
              "twin on the same file (and --duplicates)", file=sys.stderr)
        return 2
    mix = np.bincount(truth[known], minlength=data.n_classes) / known.sum()
    judged = judged_effects(group(twin, data, known, mix), args.judged_sigma,
                            args.judged_lookalike)
    runs = two_group_runs(group(twin, data, ~known, twin.tasks.prior), judged,
                          range(args.replicates))
    real = real_curve(data, truth, draws=args.draws, ks=KS)
    print(f"Error %, real ({args.draws} draws of k labels per task, judged on the {known.sum()} "
          f"tasks with a truth) / two-group twin ({args.replicates} replicates):\n")
    print("| method | k = 3: real / twin | k = 5: real / twin | full: real / twin | "
          "largest gap |\n|---|---|---|---|---|")
    for name, column, real_errors in (("DS", 1, real.ds), ("MV", 0, real.vote)):
        twin_errors = runs[:, :, column].mean(axis=0)
        cells = " | ".join(f"{100 * r:.2f} / {100 * t:.2f}"
                           for r, t in zip(real_errors, twin_errors, strict=True))
        gap = float(np.abs(twin_errors - real_errors).max())
        print(f"| {name} | {cells} | {100 * gap:.2f} |")
    se = runs.std(axis=0, ddof=1).max() / np.sqrt(len(runs)) if len(runs) > 1 else 0.0
    print(f"\nthe twin's largest standard error: {100 * se:.2f} points")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
