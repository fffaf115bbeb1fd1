"""The compact label log (issue #30): 9 bytes a label, an incidence matrix grown in place that
is the one a fresh build makes, and a requester that remembers every pair without a Python
object per label."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.data.labels import LabelSet
from marketsim.market.label_log import LabelLog
from marketsim.market.pairs import HandedPairs
from marketsim.workers import recorder
from marketsim.workers.recorder import skill_counts


def _random_log(rng: np.random.Generator, n: int, m: int, k: int, batches: int,
                per_batch: int) -> tuple[LabelLog, list[LabelSet]]:
    """A log fed distinct (task, worker) pairs in random order, a batch between refreshes;
    each refresh's labels and the plain LabelSet of the same labels."""
    pairs = rng.permutation(n * m)[: batches * per_batch]
    log = LabelLog(n, m, k, batches * per_batch)
    seen = []
    for b in range(batches):
        chunk = pairs[b * per_batch:(b + 1) * per_batch]
        t, w = chunk // m, chunk % m
        lab = rng.integers(0, k, chunk.size)
        if b % 2:
            log.extend(t, w, lab)
        else:
            for i, j, c in zip(t.tolist(), w.tolist(), lab.tolist(), strict=True):
                log.append(i, j, c)
        seen.append(log.labels())
    return log, seen


@pytest.mark.parametrize("k", [2, 3])
def test_the_grown_incidence_is_the_fresh_build_at_every_refresh(k: int) -> None:
    rng = np.random.default_rng(5)
    log, seen = _random_log(rng, 40, 25, k, 6, 70)
    for labels in seen:
        t, w, lab = (np.asarray(a) for a in labels.compact_arrays())
        plain = LabelSet(t, w, lab, 40, 25, k)
        grown, fresh = labels.incidence, plain.incidence
        assert np.array_equal(grown.indptr, fresh.indptr)
        assert np.array_equal(grown.indices, fresh.indices)
        assert np.array_equal(grown.data, fresh.data)
        assert np.array_equal(labels.worker_label_counts, plain.worker_label_counts)
        assert np.array_equal(labels.task_degree, plain.task_degree)
        assert labels.task_degree.dtype == plain.task_degree.dtype
        # the int64 arrays a plain LabelSet holds, made when read
        assert labels.tasks.dtype == np.int64 and np.array_equal(labels.tasks, plain.tasks)
        assert np.array_equal(labels.labels, plain.labels)
    # an earlier refresh's matrix did not change under its holder as the log grew
    assert seen[0].incidence.nnz == 70


def test_the_log_holds_nine_bytes_a_label() -> None:
    log = LabelLog(1000, 500, 2, 10)
    tasks, workers, labels = log.arrays()
    assert tasks.itemsize + workers.itemsize + labels.itemsize == 9


def test_a_repeated_label_falls_back_to_the_usual_build() -> None:
    log = LabelLog(3, 2, 2, 8)
    log.extend(np.array([0, 1]), np.array([0, 1]), np.array([1, 0]))
    assert log.incidence() is not None
    log.append(0, 0, 1)  # the same triple again: the usual build adds it up
    assert log.incidence() is None
    labels = log.labels()
    assert labels.incidence[0, 1] == 2.0
    assert np.array_equal(labels.worker_label_counts, [[0, 2], [1, 0]])


def test_refresh_labels_are_read_only_views() -> None:
    log = LabelLog(3, 2, 2, 8)
    log.extend(np.array([0, 1]), np.array([0, 1]), np.array([1, 0]))
    labels = log.labels()
    for arr in (*labels.compact_arrays(), labels.tasks, labels.incidence.data,
                labels.incidence.indices):
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 1


def test_handed_pairs_answer_as_a_set_of_every_pair_would() -> None:
    rng = np.random.default_rng(2)
    n, m = 60, 30
    log = LabelLog(n, m, 2, 2000)
    pairs = HandedPairs(n, m, 200, log)  # 1,800 pairs > 8 bits x 200: the hashed filter
    assert not pairs.exact
    truth: set[tuple[int, int]] = set()
    in_flight: list[tuple[int, int]] = []
    for step in range(1500):
        i, j = int(rng.integers(n)), int(rng.integers(m))
        assert pairs.has(i, j) == ((i, j) in truth)
        if (i, j) not in truth:
            pairs.add(i, j)
            truth.add((i, j))
            in_flight.append((i, j))
        if len(in_flight) > 5:  # answers arrive a few hand-outs late
            t, w = in_flight.pop(0)
            log.append(t, w, int(rng.integers(2)))
        if step % 200 == 199:  # a refresh: the log merges, the set gives up what it holds
            log.labels()
            pairs.settle()
            assert len(pairs.recent) <= 5
    assert pairs.settled > 900
    assert all(pairs.has(i, j) for i, j in truth)


def test_skill_counts_by_blocks_add_up_as_one_bincount(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(9)
    n, m, k, size = 50, 20, 3, 900
    labels = LabelSet(rng.integers(0, n, size), rng.integers(0, m, size),
                      rng.integers(0, k, size), n, m, k)
    proba = rng.dirichlet(np.ones(k), n)
    right = proba[labels.tasks, labels.labels]
    correct = np.bincount(labels.workers, weights=right, minlength=m)
    monkeypatch.setattr(recorder, "BLOCK", 128)
    counts = skill_counts(proba, labels)
    assert np.array_equal(counts[:, 0], correct)  # bit for bit


def test_a_small_market_keeps_one_exact_bit_per_pair() -> None:
    pairs = HandedPairs(20, 10, 100)
    assert pairs.exact
    pairs.add(3, 7)
    assert pairs.has(3, 7) and not pairs.has(7, 3) and not pairs.has(3, 6)
    assert not pairs.recent
