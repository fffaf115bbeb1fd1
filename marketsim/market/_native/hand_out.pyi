"""Type stub of the C extension ``hand_out.c``: the requester's rule over a block of arrivals."""

from typing import Any

def walk(
    order: Any,
    given: Any,
    workers: Any,
    tasks_out: Any,
    filter: Any,
    bits: int,
    exact: int,
    n_workers: int,
    indptr: Any,
    indices: Any,
    n_classes: int,
    recent: Any,
    stamp: Any,
    state: Any,
    /,
) -> int:
    """Hand tasks to the arriving ``workers``; the number of arrivals consumed."""

def first_new(
    order: Any, given: Any, cursor: int, filter: Any, n_workers: int, worker: int, /
) -> tuple[int, int]:
    """The event engine's scan for one worker: ``(cursor, position)``, -1 when none is left."""
