"""Resource guard: estimate a run's memory from its studies' outlines (the sizes of a
scenario, one per sweep point: :attr:`~marketsim.scenario.specs.Scenario.outline`) and refuse
runs that cannot fit.

A run that needs more memory than the machine has is killed half-way by the operating system,
losing the unit in progress; refusing it before it starts, with the numbers, is kinder.

The estimate is deliberately simple and on the generous side. Per simulated unit (one
replicate of one arm, the work one worker process holds at a time):

- posteriors: ``tasks x classes x 8`` bytes, about four copies alive during an EM refresh
  (posterior, the E-step's new one, the warm start, the policy's read-only copy);
- labels (:data:`LABEL_BYTES`, 48 a label; labels = ``budget.edges``, or what ``budget.money``
  pays for when that is fewer): the compact label log (int32 task and worker, int8 class: 9),
  its incidence matrix (int32 index and float64 value: 12; the values are shared in a big log
  when the C extension is built), the refresh's merged copy of the indices (4), and room for
  the int64 copies of the labels (24) or a transposed matrix that some estimators make (a
  warm-started one-coin fit makes neither). Measured (docs/explanation/performance/memory.md,
  issue #30): the 10-million-label one-coin market (``scenarios/large_market_10x.toml``) peaks
  at 454-466 MiB for the whole process, interpreter and world included, where this estimate
  says 815 MiB;
- worker parameters: ``workers x classes^2 x 8`` (confusion matrices) twice;
- the networkx task-worker graph when ``output.graph`` is true: about 500 bytes per edge and
  300 per node (measured with networkx 3: 450 bytes per edge, node overhead included, for a
  20,000-task, 100,000-edge graph).

Each worker process also carries the interpreter with numpy, scipy and scikit-learn loaded
(:data:`PROCESS_BASE`). ``jobs`` processes run at once (never more than there are units).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from marketsim.errors import InputError
from marketsim.scenario.outline import StudyOutline

GIB = 1024**3
#: Resident memory of one worker process before it simulates anything (Python, numpy, scipy,
#: scikit-learn, simpy, networkx imported).
PROCESS_BASE = 200 * 1024**2
#: Bytes per edge and per node of the networkx graph (measured, rounded up).
GRAPH_EDGE_BYTES = 500
GRAPH_NODE_BYTES = 300
#: Copies of the (tasks, classes) posterior alive during an EM refresh.
POSTERIOR_COPIES = 4
#: Bytes a label at a unit's peak: log 9, incidence 12, merge 4, wide copies or a transpose 24
#: (rounded down: the values shared in big logs save 8).
LABEL_BYTES = 48


def estimate_unit_memory(study: StudyOutline) -> int:
    """Bytes one simulated unit (replicate x arm) of ``study`` needs at its peak."""
    n, k, m, edges = study.tasks, study.classes, study.workers, study.labels
    posteriors = POSTERIOR_COPIES * n * k * 8
    labels = edges * LABEL_BYTES
    pointers = 2 * (n + m * k + 2) * 8  # a matrix's and its transpose's row pointers
    workers = 2 * m * k * k * 8
    graph = 0
    if study.graph:
        graph = edges * GRAPH_EDGE_BYTES + (n + m) * GRAPH_NODE_BYTES
    return int(posteriors + labels + pointers + workers + graph)


def estimate_run_memory(studies: Sequence[StudyOutline], jobs: int = 1) -> int:
    """Bytes the whole run of ``studies`` (a sweep's points, run one after the other) needs:
    ``jobs`` worker processes, each holding one unit at a time (sweeps: the largest point)."""
    per_unit = max(estimate_unit_memory(study) for study in studies)
    units = max(study.units for study in studies)
    processes = max(1, min(int(jobs), units))
    return processes * (PROCESS_BASE + per_unit)


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


#: The most worker processes a calibration starts unless told (``calibrate --jobs``): its widest
#: steps fit four pairs of one-matrix worlds and six mixtures side by side, and every process
#: holds the labels (a 1,000,000-label file: about 0.4 GiB each).
MAX_FIT_JOBS = 4


def fit_jobs(requested: int | None, cpus: int | None = None) -> int:
    """Worker processes for a calibration's independent fits: ``requested``, else the CPUs
    available up to :data:`MAX_FIT_JOBS` (the results do not depend on it)."""
    if requested is not None:
        return requested
    return max(1, min(available_cpus() if cpus is None else cpus, MAX_FIT_JOBS))


def capped_jobs(requested: int, units: int, cpus: int | None = None) -> tuple[int, str | None]:
    """``requested`` worker processes capped to the ``units`` to run and the CPUs available,
    with a note saying why when capped (more processes than either only cost memory)."""
    cpus = available_cpus() if cpus is None else cpus
    jobs = max(1, min(requested, units, cpus))
    if jobs == requested:
        return jobs, None
    why = (f"the {units} unit{'s' * (units != 1)} to run" if units <= cpus
           else f"the {cpus} CPU{'s' * (cpus != 1)} available")
    return jobs, f"--jobs {requested} capped to {jobs} ({why})"


def default_jobs(studies: Sequence[StudyOutline], cpus: int | None = None,
                 available: int | None = None) -> int:
    """``--jobs`` when not given: the CPUs available, capped to the units of the largest study
    (sweep point) and to the processes that fit in ``available`` bytes of memory (default: what
    the machine has now); at least 1. Results do not depend on it (see ``study/backends.py``)."""
    units = max(study.units for study in studies)
    jobs = max(1, min(available_cpus() if cpus is None else cpus, units))
    have = available_memory() if available is None else available
    while jobs > 1 and have is not None and estimate_run_memory(studies, jobs) > have:
        jobs -= 1
    return jobs


def available_memory() -> int | None:
    """Bytes of memory available to a new process (``MemAvailable`` of /proc/meminfo, else
    the free physical pages), or None when the platform does not say."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def check_memory(studies: Sequence[StudyOutline], jobs: int = 1,
                 available: int | None = None) -> int:
    """Raise :class:`InputError` when the run of ``studies`` cannot fit in ``available`` bytes
    (default: what the machine has now); return the estimate."""
    need = estimate_run_memory(studies, jobs)
    have = available_memory() if available is None else available
    if have is not None and need > have:
        hints = ["tasks.count or budget.edges (or budget.money)"]
        if any(study.graph for study in studies):
            hints.append("set output.graph = false (the graph costs ~500 bytes per label)")
        if jobs > 1:
            hints.append(f"use fewer --jobs (now {jobs})")
        raise InputError(
            f"scenario needs about {need / GIB:.1f} GiB, this machine has {have / GIB:.1f} GiB "
            f"available; reduce {'; or '.join(hints)}",
            source=studies[0].source,
        )
    return need
