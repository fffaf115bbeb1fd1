"""The requester's scan for one arriving worker (``HandedPairs.scan``): the compiled scan and
the Python loop agree on every input, and bad ids are refused rather than read out of range."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.market import pairs as pairs_module
from marketsim.market.pairs import HandedPairs

native = pairs_module.first_new_native
needs_native = pytest.mark.skipif(native is None, reason="hand_out extension not built")


def _state(seed: int, dtype: type[np.signedinteger]) -> tuple[HandedPairs, np.ndarray,
                                                                bytearray, int]:
    """A small exact-filter market part-way through a round: a ranking, tasks given this round,
    pairs already handed out, and a cursor."""
    rng = np.random.default_rng(seed)
    n_tasks, n_workers = int(rng.integers(1, 40)), int(rng.integers(1, 8))
    pairs = HandedPairs(n_tasks, n_workers, budget=n_tasks * n_workers)
    assert pairs.exact
    done = rng.random((n_tasks, n_workers)) < rng.random()
    tasks, workers = np.nonzero(done)
    pairs.add_many(tasks, workers)
    ranking = rng.permutation(n_tasks).astype(dtype)
    given = bytearray((rng.random(n_tasks) < rng.random()).astype(np.uint8).tobytes())
    return pairs, ranking, given, int(rng.integers(0, n_tasks + 1))


def _scan_all(pairs: HandedPairs, ranking: np.ndarray, given: bytearray,
              cursor: int, workers: list[int]) -> list[tuple[int, int]]:
    """Scan for each worker in turn, giving the task found (as the requester does)."""
    out = []
    order = ranking.data
    for worker in workers:
        cursor, pos = pairs.scan(order, given, cursor, worker)
        if pos >= 0:
            given[order[pos]] = 1
        out.append((cursor, pos))
    return out


@needs_native
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("seed", range(40))
def test_the_compiled_scan_is_the_python_loop(
    seed: int, dtype: type[np.signedinteger], monkeypatch: pytest.MonkeyPatch
) -> None:
    results = []
    for compiled in (True, False):
        if not compiled:
            monkeypatch.setattr(pairs_module, "first_new_native", None)
        pairs, ranking, given, cursor = _state(seed, dtype)
        rng = np.random.default_rng(seed + 1000)
        workers = rng.integers(0, pairs.n_workers, size=12).tolist()
        found = _scan_all(pairs, ranking, given, cursor, workers)
        results.append((found, bytes(given), bytes(pairs._filter)))
    assert results[0] == results[1]


@needs_native
def test_the_scan_hands_each_pair_once_and_skips_given_tasks() -> None:
    pairs = HandedPairs(5, 2, budget=10)
    order = np.array([3, 1, 4, 0, 2], dtype=np.int32)
    given = bytearray(5)
    given[3] = 1  # task 3 went to someone this round
    assert pairs.scan(order.data, given, 0, 0) == (1, 1)  # cursor past task 3, task 1
    pairs.add(4, 1)  # worker 1 held task 4 before
    assert pairs.scan(order.data, given, 1, 1) == (1, 1)  # task 1 not yet given: theirs too
    given[1] = 1
    assert pairs.scan(order.data, given, 1, 1) == (2, 3)  # skips 4 (held before): task 0
    assert pairs.has(0, 1) and not pairs.has(2, 1)


@needs_native
def test_the_compiled_scan_refuses_ids_out_of_range() -> None:
    assert native is not None
    given, bits = bytearray(3), bytearray(1)
    with pytest.raises(ValueError, match="out of range"):
        native(np.array([7, 0, 1], dtype=np.int32).data, given, 0, bits, 2, 0)
    with pytest.raises(ValueError, match="do not match"):
        native(np.array([0, 1, 2], dtype=np.int32).data, given, 0, bits, 2, 5)
    with pytest.raises(ValueError, match="4- or 8-byte"):
        native(np.array([0, 1, 2], dtype=np.int16).data, given, 0, bits, 2, 0)
