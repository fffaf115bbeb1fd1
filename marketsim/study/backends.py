"""Where units run: in this process, in local worker processes (joblib), or on a Dask cluster.

No home-made scheduling: joblib's loky processes on one machine, ``distributed`` beyond it.
Results are yielded as units finish; the caller orders them canonically, so the output does
not depend on the backend, the number of jobs or the completion order.

On Dask, faults end in one line: a scheduler or worker that cannot import marketsim or a
plug-in module is refused before any unit is submitted (``InputError``); a lost scheduler, or
a unit lost with more workers than Dask retries, is a ``ClusterError`` (a lost worker alone
is not: Dask runs its units again elsewhere, and a unit's result does not depend on where it
ran).
"""

from __future__ import annotations

import functools
import importlib
import logging
import time
import warnings
from collections.abc import Callable, Generator, Iterator, Mapping
from concurrent.futures import CancelledError
from contextlib import contextmanager
from typing import Any

from marketsim.aggregation import max_threads
from marketsim.errors import ClusterError, InputError, SimulationError

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


#: joblib's warning, as a regular expression, when a generator of results is closed early.
CANCELLED_UNITS = r".*(tasks which were still being processed|successfully executed +but not used)"


def process_map(jobs: int) -> Callable[[Callable[..., Any], list[tuple[Any, ...]]],
                                       Iterator[Any]]:
    """A mapper (:mod:`marketsim.aggregation.mapping`) running each call in one of ``jobs``
    joblib worker processes (single-threaded kernels: they share the cores), results in
    order; one that runs them here when ``jobs`` is 1."""
    def run(function: Callable[..., Any], arguments: list[tuple[Any, ...]]) -> Iterator[Any]:
        if jobs <= 1 or len(arguments) <= 1:
            return (function(*args) for args in arguments)
        from joblib import Parallel, delayed

        parallel = Parallel(n_jobs=min(jobs, len(arguments)), return_as="generator")
        capped = functools.partial(single_threaded, function)
        return closing_quietly(parallel(delayed(capped)(*args) for args in arguments))
    return run


def closing_quietly(results: Generator[Any, None, None]) -> Iterator[Any]:
    """``results`` (a joblib generator) item by item, closed without joblib's warning when the
    consumer stops early: Ctrl-C or an error cancels the units still running, and joblib's
    "... tasks which were still being processed ... have been cancelled" would come ahead of
    marketsim's own message of what was kept and how to resume."""
    try:
        # not ``yield from``: it would close ``results`` itself, warning, before ``finally``
        for result in results:  # noqa: UP028
            yield result
    finally:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=CANCELLED_UNITS, category=UserWarning)
            results.close()


#: CPU seconds a local worker process takes to start (Python, numpy, scipy and the simulator
#: imported: 0.85 to 0.9 CPU s measured on the project's machine, rounded up). Workers run at
#: once, one per core, so starting them costs about this much wall time.
PROCESS_START_SECONDS = 1.0


def worth_processes(cpu_seconds: Mapping[int, list[float]], remaining: int, jobs: int) -> bool:
    """Whether ``jobs`` worker processes would finish ``remaining`` units sooner than this
    process alone, projecting each unit at the costliest arm's mean unit so far
    (``cpu_seconds``: the CPU seconds of the units measured here, by arm): they save
    ``(1 - 1/jobs)`` of the serial time and cost :data:`PROCESS_START_SECONDS` to start.
    CPU seconds, not wall, so a loaded machine does not make the same study look costlier.

    An arm's mean, not its costliest unit: a unit that a full collection of Python's cycle
    collector lands in takes several times its arm's other units (0.06 to 0.09 CPU s in
    lesson 6, whose units take 0.007 to 0.03), and projecting every remaining unit at that
    pause could start workers (2 CPU s) for a study whose units take 0.7 s in all."""
    means = [sum(units) / len(units) for units in cpu_seconds.values() if units]
    serial = max(means, default=0.0) * remaining
    return jobs > 1 and remaining > 1 and serial * (1.0 - 1.0 / jobs) > PROCESS_START_SECONDS


def local_units(
    run: Callable[..., Any], keys: list[tuple[int, int]], jobs: int, **kwargs: Any
) -> Iterator[Any]:
    """Serial when ``jobs == 1``; else units run in this process while the rest is projected to
    take less than starting worker processes would save (:func:`worth_processes`: a small
    study, a lesson, never starts them), and the rest in joblib worker processes, which end
    when the units do (none is left behind for the next study, nor outlives this process).

    With ``jobs > 1`` this process takes its units from the end of ``keys`` (the cheapest, in
    :func:`~marketsim.study.runner.costly_first`'s order), since the other cores wait while it
    measures; the workers take theirs from the front, the costly units first."""
    todo = list(keys)
    measured: dict[int, list[float]] = {}
    while todo and (jobs == 1 or not worth_processes(measured, len(todo), jobs)):
        rep, arm = todo.pop(0 if jobs == 1 else -1)
        start = time.process_time()
        yield run(rep, arm, **kwargs)
        measured.setdefault(arm, []).append(time.process_time() - start)
    if not todo:
        return
    from joblib import Parallel, delayed
    from joblib.externals.loky import get_reusable_executor

    kwargs.pop("on_refresh", None)  # callbacks cannot cross process boundaries
    parallel = Parallel(n_jobs=jobs, return_as="generator_unordered")
    capped = functools.partial(single_threaded, run)
    try:
        yield from closing_quietly(
            parallel(delayed(capped)(rep, arm, **kwargs) for rep, arm in todo))
    finally:
        # joblib keeps its worker processes for the next call, idle for five minutes, and
        # only the interpreter's clean-up at exit ends them sooner: a process that exits
        # without it (os._exit, as pytest-xdist's test processes do) left them running.
        # The study's workers end with the study (PROCESS_START_SECONDS counts a fresh start).
        get_reusable_executor(reuse=True).shutdown(wait=True, kill_workers=True)


def dask_units(
    run: Callable[..., Any],
    keys: list[tuple[int, int]],
    jobs: int,
    scheduler: str | None = None,
    modules: dict[str, str] | None = None,
    **kwargs: Any,
) -> Iterator[Any]:
    """Submit every unit to a Dask cluster (``scheduler`` address) or a LocalCluster of
    ``jobs`` single-threaded worker processes; yield results as they complete. ``modules``
    (module name -> what needs it, e.g. ``"arm 'mine': policy"``) must be importable on the
    scheduler and every worker besides marketsim; that is checked before anything runs."""
    require_distributed()
    from distributed import Client, LocalCluster, as_completed
    kwargs.pop("on_refresh", None)
    cluster = None
    where = f"Dask scheduler {scheduler}" if scheduler else "Dask LocalCluster"
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
    lost = False
    try:
        check_imports(client, modules or {})
        capped = functools.partial(single_threaded, run)
        futures = [client.submit(capped, rep, arm, pure=False, **kwargs) for rep, arm in keys]
        for future in as_completed(futures):
            try:
                result = future.result()
            except (SimulationError, InputError):
                raise  # the unit's own one-line error, as on the local backend
            except Exception as exc:  # noqa: BLE001 - Dask reports faults in many types
                fault = cluster_fault(exc, where, modules or {})
                if fault is None:
                    raise  # not a fault of the cluster: a bug, with its traceback
                lost = isinstance(exc, CancelledError | OSError)
                raise fault from None
            yield result
    finally:
        with _muted("distributed.client", lost):  # its reconnection attempt, cancelled
            client.close()
        if cluster is not None:
            cluster.close()


def missing_modules(names: list[str]) -> list[tuple[str, str]]:
    """``(module, reason)`` for each of ``names`` that cannot be imported here: run on the
    Dask scheduler and workers before any unit is sent there."""
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - a plug-in module may fail in any way
            missing.append((name, f"{type(exc).__name__}: {exc}"))
    return missing


def check_imports(client: Any, modules: dict[str, str]) -> None:
    """Refuse in one line a scheduler or worker that cannot import marketsim or one of
    ``modules``: Dask would fail unpickling the units there (a worker that cannot dies, and
    the study then waits for workers forever)."""
    names = ["marketsim", *modules]
    answers: list[tuple[str, Any]] = []
    try:
        answers.append(("the Dask scheduler", client.run_on_scheduler(missing_modules, names)))
    except Exception as exc:  # noqa: BLE001 - this very function may not unpickle there
        answers.append(("the Dask scheduler", exc))
    for address, got in client.run(missing_modules, names, on_error="return").items():
        answers.append((f"the Dask worker {address}", got))
    for place, got in answers:
        if isinstance(got, BaseException):  # missing_modules itself: marketsim is missing
            got = [("marketsim", str(got))]
        for name, reason in got:
            raise InputError(_cannot_import(name, place, reason, modules))


def _cannot_import(name: str, place: str, reason: str, modules: dict[str, str]) -> str:
    """The one-line message of a module that ``place`` cannot import."""
    what = f"{modules[name]} module" if name in modules else "module"
    return (f"{what} {name!r} cannot be imported on {place} ({reason}): install it there or "
            "add its folder to the PYTHONPATH of the Dask scheduler and every worker")


def cluster_fault(
    exc: Exception, where: str, modules: dict[str, str]
) -> InputError | ClusterError | None:
    """The one-line error of a Dask fault met while collecting units: a module the scheduler
    or a worker cannot import (an ``ImportError`` behind a deserialisation error), a lost
    scheduler, a unit that lost too many workers; None for anything else."""
    from distributed import KilledWorker

    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ImportError) and cause.name:
            return InputError(_cannot_import(cause.name, "the Dask scheduler or a worker",
                                             f"{type(cause).__name__}: {cause}", modules))
        cause = cause.__cause__  # raised *from* it, not merely while handling it
    if isinstance(exc, CancelledError | OSError):
        reason = getattr(exc, "reason", None) or " ".join(str(exc).split())
        return ClusterError(f"lost the connection to the {where} ({reason})")
    if isinstance(exc, KilledWorker):
        last = getattr(exc.last_worker, "address", exc.last_worker)
        return ClusterError(
            f"the {where} lost a unit with each of the {exc.allowed_failures + 1} workers "
            f"that ran it (the last: {last}); Dask's distributed.scheduler.allowed-failures "
            "sets how many it retries")
    return None


@contextmanager
def _muted(name: str, mute: bool) -> Iterator[None]:
    """Logger ``name`` silenced inside the block when ``mute``: the fault it would log with a
    traceback has been reported in one line already."""
    logger = logging.getLogger(name)
    level = logger.level
    if mute:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(level)
