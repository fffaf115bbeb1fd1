"""Aggregating a mixed crowd of humans and models (issue #41, points 3-4): errors against the
gold standard of MV, DS and ds-confidence on

1. **RTE with synthetic models** (clearly synthetic: no public data set joins crowd and model
   labels on the same items, see docs/explanation/infer/mixed-crowds.md): the real RTE crowd
   (Snow et al. 2008), thinned to its first ``--per-task`` labels per task in file order, plus
   two models drawn here from known parameters, each answering every task twice at
   temperature 0 (the same answer): ``over-confident``, whose accuracy is 55, 70, 85, 97 % for
   stated confidences in [0, .25), [.25, .5), [.5, .75), [.75, 1] (drawn uniformly), and ``flat``,
   right 80 % of the time whatever confidence (uniform on [.5, 1]) it states;
2. **Espinosa & Salathé (2024)** when its files are in the data folder
   (:mod:`marketsim.data.espinosa2024`): six language models under eight prompts, real, against
   the experts' stance (no human crowd: see the module).

    PYTHONPATH=. python benchmarks/mixed_crowd.py [--per-task 3] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np

from marketsim.aggregation.model_repeats import count_model_answers_once
from marketsim.aggregation.registry import make_estimator
from marketsim.aggregation.source_accuracy import confidence_bin_accuracy, source_accuracy
from marketsim.data.datasets import dataset_paths
from marketsim.data.espinosa2024 import load_espinosa2024
from marketsim.data.labels import LabelSet
from marketsim.data.zhang import load_zhang
from marketsim.errors import InputError

METHODS = ("mv", "ds", "ds-confidence")
#: The over-confident model's accuracy per quarter of stated confidence.
OVER_CONFIDENT = (0.55, 0.70, 0.85, 0.97)
FLAT_ACCURACY = 0.80


def first_labels(data: LabelSet, per_task: int) -> LabelSet:
    """Each task's first ``per_task`` labels in file order."""
    order = np.argsort(data.tasks, kind="stable")
    start = np.concatenate([[0], np.cumsum(data.task_degree)[:-1]])
    rank = np.empty(data.n_labels, dtype=np.int64)
    rank[order] = np.arange(data.n_labels) - start[data.tasks[order]]
    return data.subset(rank < per_task)


def with_models(humans: LabelSet, truth: np.ndarray, seed: int) -> LabelSet:
    """``humans`` plus the two synthetic models' answers (each given twice) with
    confidences; binary classes."""
    rng = np.random.default_rng(seed)
    n = humans.n_tasks
    quarter = rng.integers(0, 4, n)
    over_conf = (quarter + rng.random(n)) / 4
    over_right = rng.random(n) < np.asarray(OVER_CONFIDENT)[quarter]
    flat_conf = 0.5 + 0.5 * rng.random(n)
    flat_right = rng.random(n) < FLAT_ACCURACY
    answers = [np.where(right, truth, 1 - truth) for right in (over_right, flat_right)]
    every = np.arange(n)
    m = humans.n_workers
    tasks = np.concatenate([humans.tasks, every, every, every, every])
    workers = np.concatenate([humans.workers, np.full(2 * n, m), np.full(2 * n, m + 1)])
    labels = np.concatenate([humans.labels, answers[0], answers[0], answers[1], answers[1]])
    confidence = np.concatenate([np.full(humans.n_labels, np.nan), over_conf, over_conf,
                                 flat_conf, flat_conf])
    return LabelSet(tasks, workers, labels, n, m + 2, humans.n_classes, confidence=confidence,
                    sources=("human",) * m + ("over-confident", "flat"))


def errors(data: LabelSet, truth: np.ndarray) -> dict[str, float]:
    """Each method's error (%) on the tasks of known class, a model's repeats counted once."""
    data, _ = count_model_answers_once(data)
    known = truth >= 0
    out = {}
    for method in METHODS:
        est = make_estimator(method)
        if "random_state" in est.get_params():  # ties broken reproducibly
            est.set_params(random_state=0)
        est.fit(data)
        out[method] = 100 * float(np.mean(est.labels_[known] != truth[known]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-task", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rte, truth = load_zhang(*dataset_paths("rte"))
    assert truth is not None
    humans = first_labels(rte, args.per_task)
    mixed = with_models(humans, truth, args.seed)
    print(f"RTE, first {args.per_task} human labels per task, + 2 synthetic models "
          f"(seed {args.seed}): error %")
    print("| labels | " + " | ".join(METHODS) + " |")
    print("|---|" + "---:|" * len(METHODS))
    for name, data in (("humans only", humans), ("humans + models", mixed)):
        row = errors(data, truth)
        print(f"| {name} | " + " | ".join(f"{row[m]:.2f}" for m in METHODS) + " |")
    est = make_estimator("ds-confidence").fit(mixed)
    for row in source_accuracy(est, count_model_answers_once(mixed)[0], truth):
        print(row)
    for cell in confidence_bin_accuracy(est):
        print(cell)
    try:
        models, stance = load_espinosa2024()
    except InputError as exc:
        print(f"Espinosa & Salathe (2024): skipped ({exc})")
        return
    row = errors(models, stance)
    print("Espinosa & Salathe (2024), 6 models x 8 prompts vs experts: error % "
          + ", ".join(f"{m} {row[m]:.2f}" for m in METHODS))


if __name__ == "__main__":
    main()
