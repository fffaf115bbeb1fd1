"""benchmarks/label_permutations.py: each shuffle keeps what its row says it keeps (every
group's labels, as a multiset) and moves labels between the group's members."""

from __future__ import annotations

import numpy as np

from marketsim.data.labels import LabelSet
from tests.helpers import benchmark_script

label_permutations = benchmark_script("label_permutations")


def test_a_shuffle_keeps_each_groups_labels_and_moves_them_within_it() -> None:
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 7, 500)
    values = rng.integers(0, 3, 500)
    out = label_permutations.shuffled_within(groups, values, rng)
    for g in range(7):
        assert sorted(out[groups == g]) == sorted(values[groups == g])
    assert (out != values).mean() > 0.3  # labels really moved


def test_the_worker_class_shuffle_keeps_every_workers_confusion_counts() -> None:
    rng = np.random.default_rng(1)
    tasks = np.repeat(np.arange(60), 5)
    workers = rng.integers(0, 12, tasks.size)
    truth = rng.integers(0, 2, 60)
    labels = np.where(rng.random(tasks.size) < 0.8, truth[tasks], 1 - truth[tasks])
    data = LabelSet(tasks, workers, labels, 60, 12, 2)
    groups = label_permutations.shuffle_groups(data, truth)["worker × class shuffled"]
    out = label_permutations.shuffled_within(groups, labels, rng)

    def confusion(answers: np.ndarray) -> np.ndarray:
        counts = np.zeros((12, 2, 2))
        np.add.at(counts, (workers, truth[tasks], answers), 1)
        return counts
    np.testing.assert_array_equal(confusion(out), confusion(labels))
    per_task_right = np.bincount(tasks, weights=out == truth[tasks], minlength=60)
    assert not np.array_equal(per_task_right,
                              np.bincount(tasks, weights=labels == truth[tasks], minlength=60))
