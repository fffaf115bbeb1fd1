"""Big arrays in their own memory mappings, so freeing one gives its memory back (issue #30).

glibc's ``malloc`` serves a request of at least its mmap threshold from a fresh mapping, which
``free`` returns to the operating system; smaller ones come from the heap, where freed memory
is kept for reuse and fragments. The threshold starts at 128 KiB but rises to the size of each
mapped block freed (up to 32 MiB), so after a few big temporaries a market's per-task and
per-label arrays (megabytes each) all live on the heap: in the 10-million-label market of
``benchmarks/market_memory.py`` the heap then held about 110 MiB more at the peak than the
arrays alive. Fixing the threshold (``mallopt(M_MMAP_THRESHOLD, ...)``, which also turns off
its rise) keeps every array of :data:`MAPPED_FROM` bytes or more in its own mapping. Only the
C library's bookkeeping changes: no number a simulation computes does.

Only a big market asks for it (:func:`is_big_market`): every array ``free`` gives back is
mapped afresh, zero-filled page by page, by the next one, and a small market, whose arrays are
a few megabytes at most, would pay that in system time at every refit (the 30-workers study's
system time doubled) to save memory it does not hold.
"""

from __future__ import annotations

import ctypes
import sys

#: ``M_MMAP_THRESHOLD`` in glibc's ``malloc.h``.
_M_MMAP_THRESHOLD = -3

#: Allocations of this many bytes or more get their own mapping (a 131,072-double array):
#: small markets' arrays stay on the heap, as before.
MAPPED_FROM = 1 << 20


#: Labels a market buys from which it is big enough to map its big arrays (9 MiB of label
#: log; the markets of issue #30 buy millions).
BIG_MARKET_LABELS = 1 << 20


def is_big_market(labels: int) -> bool:
    """Whether a market buying ``labels`` labels should map its big arrays."""
    return labels >= BIG_MARKET_LABELS


def map_big_arrays() -> bool:
    """Fix glibc's mmap threshold at :data:`MAPPED_FROM` for this process; whether it was set
    (``False`` off Linux or without glibc's ``mallopt``: nothing changes there)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MAPPED_FROM))
