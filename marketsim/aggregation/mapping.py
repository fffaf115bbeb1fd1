"""How a caller runs independent fits: in this process, one after the other, or through a
mapper it passes in (``marketsim calibrate --jobs N``: worker processes,
:func:`marketsim.study.backends.process_map`).

A mapper takes a function and a list of argument tuples and yields the results in the order
of the list, so the fits' results, and every output made of them, do not depend on how many
processes ran them (each fit is seeded by its arguments, never by its place or process)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

#: ``mapper(function, [args, ...])`` yields ``function(*args)`` for each, in order.
Mapper = Callable[[Callable[..., Any], list[tuple[Any, ...]]], Iterable[Any]]


def serial(function: Callable[..., Any], arguments: list[tuple[Any, ...]]) -> Iterator[Any]:
    """``function(*args)`` for each of ``arguments``, in this process, in order."""
    return (function(*args) for args in arguments)


def mapped(mapper: Mapper | None, function: Callable[..., Any],
           arguments: list[tuple[Any, ...]], advance: Callable[[], object] | None = None
           ) -> list[Any]:
    """The results of ``function`` on ``arguments`` by ``mapper`` (None: :func:`serial`),
    ``advance`` called as each comes in (a progress bar's)."""
    results = []
    for result in (mapper or serial)(function, arguments):
        results.append(result)
        if advance is not None:
            advance()
    return results
