"""Where units run: in this process, in local worker processes (joblib), or on a Dask cluster.

No home-made scheduling: joblib's loky processes on one machine, ``distributed`` beyond it.
Results are yielded as units finish; the caller orders them canonically, so the output does
not depend on the backend, the number of jobs or the completion order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from marketsim.aggregation import max_threads
from marketsim.errors import InputError

BACKENDS = ("local", "dask")


def require_distributed() -> None:
    """Refuse ``--backend dask`` in one line when the ``distributed`` package is missing (so
    the command line can say so before it creates anything)."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise InputError(
            '--backend dask needs the \'distributed\' package: pip install "marketsim[cluster]"'
        ) from None


def single_threaded(run: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``run(*args, **kwargs)`` with the aggregation kernels on one thread: a worker process
    shares the cores with the other workers, so extra threads would only oversubscribe them."""
    with max_threads(1):
        return run(*args, **kwargs)


def local_units(
    run: Callable[..., Any], keys: list[tuple[int, int]], jobs: int, **kwargs: Any
) -> Iterator[Any]:
    """Serial when ``jobs == 1``, else joblib worker processes."""
    if jobs == 1 or len(keys) <= 1:
        for rep, arm in keys:
            yield run(rep, arm, **kwargs)
        return
    from joblib import Parallel, delayed

    kwargs.pop("on_refresh", None)  # callbacks cannot cross process boundaries
    parallel = Parallel(n_jobs=jobs, return_as="generator_unordered")
    capped = functools.partial(single_threaded, run)
    yield from parallel(delayed(capped)(rep, arm, **kwargs) for rep, arm in keys)


def dask_units(
    run: Callable[..., Any],
    keys: list[tuple[int, int]],
    jobs: int,
    scheduler: str | None = None,
    **kwargs: Any,
) -> Iterator[Any]:
    """Submit every unit to a Dask cluster (``scheduler`` address) or a LocalCluster of
    ``jobs`` single-threaded worker processes; yield results as they complete."""
    require_distributed()
    from distributed import Client, LocalCluster, as_completed
    kwargs.pop("on_refresh", None)
    cluster = None
    try:
        if scheduler:
            client = Client(scheduler, timeout="30s")
        else:
            cluster = LocalCluster(
                n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None
            )
            client = Client(cluster)
    except OSError as exc:
        raise InputError(f"cannot reach Dask scheduler {scheduler!r}: {exc}") from None
    try:
        capped = functools.partial(single_threaded, run)
        futures = [client.submit(capped, rep, arm, pure=False, **kwargs) for rep, arm in keys]
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
