"""The small thread pool the EM kernels split their big passes over, and its cap.

numpy's ufuncs and scipy's sparse mat-vecs release the GIL, so on a million labels two
threads each doing half of the rows (or half of the classes) finish sooner; a hand-off costs
0.05-0.35 ms on the shared 2-core machine, so the kernels fuse their passes. Every split keeps
each number's own arithmetic unchanged, so threaded fits are bit for bit the single-threaded
ones (see ``_numeric.py``). Small fits (a market refresh on 30,000 labels) stay on the calling
thread: below :data:`MIN_LABELS` the hand-off costs more than it saves.

Parallel study workers already fill the cores, so the study runner caps this at one thread in
its worker processes (:func:`max_threads`).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

#: Fits on fewer labels than this run single-threaded. Measured on the shared 2-core machine
#: (one D&S E- and M-step, K = 2, medians): 100,000 labels 0.9-1.5 ms on one thread against
#: 1.2-1.7 ms on two; 200,000 labels 2.6-2.9 against 2.4-2.9 ms; 500,000 labels 6.4-6.5
#: against 5.8-5.9 ms. A hand-off costs 0.05-0.35 ms there, depending on the load.
MIN_LABELS = 200_000

#: Smallest block of rows a threaded kernel hands out (a block's numpy calls cost a few
#: microseconds each; 8,192 rows keep that well under 5 %).
MIN_BLOCK_ROWS = 8192

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_pid = 0
_pool_size = 0
_cap: int | None = None


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def thread_limit() -> int:
    """Threads the kernels may use: the cap set by :func:`set_max_threads`, else the cores."""
    cores = available_cores()
    return cores if _cap is None else max(1, min(_cap, cores))


def set_max_threads(n: int | None) -> int | None:
    """Cap the aggregation kernels at ``n`` threads (``None``: one per available core);
    return the previous cap. ``1`` keeps every fit on the calling thread."""
    global _cap
    if n is not None and int(n) < 1:
        raise ValueError(f"max threads must be >= 1 or None, got {n}")
    previous, _cap = _cap, None if n is None else int(n)
    return previous


@contextmanager
def max_threads(n: int | None) -> Iterator[None]:
    """:func:`set_max_threads` for the duration of a ``with`` block."""
    previous = set_max_threads(n)
    try:
        yield
    finally:
        set_max_threads(previous)


_blas_controller: Any = None  # a threadpoolctl ThreadpoolController, or False without it


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the dense linear algebra inside on one BLAS thread (threadpoolctl, which
    scikit-learn requires; without it, unchanged). numpy's OpenBLAS otherwise wakes a thread
    per core for every small LAPACK call: on the shared 2-core machine under load an ``eigh``
    of a 39 x 39 matrix took 35-70 ms against 0.12-0.2 ms on one thread (M-MSR on the Bird
    data, 39 workers: 0.3-1.4 s a fit). The numbers do not change: LAPACK's blocking does not
    depend on the thread count at these sizes (tests compare the two)."""
    global _blas_controller
    if _blas_controller is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
            _blas_controller = False
        else:
            _blas_controller = ThreadpoolController()  # scans the loaded libraries once
    if _blas_controller is False:  # pragma: no cover - see above
        yield
        return
    with _blas_controller.limit(limits=1, user_api="blas"):
        yield


def threads_for(n_labels: int) -> int:
    """How many threads a fit on ``n_labels`` labels uses: 1 below :data:`MIN_LABELS`."""
    return 1 if n_labels < MIN_LABELS else thread_limit()


def _get_pool(size: int) -> ThreadPoolExecutor:
    """The shared pool, created on first use (again after a fork, whose child has no threads)."""
    global _pool, _pool_pid, _pool_size
    with _lock:
        if _pool is None or _pool_pid != os.getpid() or _pool_size < size:
            if _pool is not None and _pool_pid == os.getpid():
                _pool.shutdown(wait=False)  # outgrown: its idle threads exit, none leaks
            _pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="marketsim-em")
            _pool_pid, _pool_size = os.getpid(), size
        return _pool


def run_parallel(tasks: list[Callable[[], object]], n_threads: int | None = None) -> None:
    """Run ``tasks`` on up to ``n_threads`` threads (default one per task), this one included:
    each thread takes the next task not yet taken until none is left, so a thread the shared
    machine slows down takes fewer. Returns when all are done (re-raising the first error)."""
    n = len(tasks) if n_threads is None else min(n_threads, len(tasks))
    if n <= 1:
        for task in tasks:
            task()
        return
    claim = itertools.count()  # next() on it is atomic: each task is taken exactly once

    def drain() -> None:
        while (i := next(claim)) < len(tasks):
            tasks[i]()

    pool = _get_pool(n - 1)
    futures: list[Future[None]] = [pool.submit(drain) for _ in range(n - 1)]
    try:
        drain()
    finally:
        for future in futures:
            future.result()


def blocks(n: int, parts: int) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges splitting ``range(n)`` into ``parts`` near-equal blocks."""
    edges = [n * i // parts for i in range(parts + 1)]
    return [(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]


def row_blocks(n: int, n_threads: int) -> list[tuple[int, int]]:
    """Blocks of ``n`` rows for ``n_threads`` threads: one block on one thread, else up to
    four per thread of at least :data:`MIN_BLOCK_ROWS` rows, so that a thread slowed down by
    other work leaves its share to the others (:func:`run_parallel`)."""
    if n_threads <= 1:
        return [(0, n)] if n else []
    return blocks(n, max(n_threads, min(4 * n_threads, n // MIN_BLOCK_ROWS)))
