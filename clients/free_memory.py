"""Give the heap's free pages back to the operating system between stages.

A stage that held a large working set frees it when it ends, but glibc keeps the freed pages in its heaps: small
allocations (SQLite's page cache allocates page by page, Python objects arena by arena) leave the heap fragmented,
so the process keeps the memory as resident although nothing uses it. Measured on staging.db at 250k messages: a
scan through the memory prune's 1 GiB page cache left 450 MiB resident after the connection closed, and the whole
cues stage 1.5 GiB; the load and the recall index, built on a thread beside it, then came on top of that (the 1M
first build's 7.46 GiB peak). `malloc_trim(0)` returns every free page (13 MiB left in that scan).

Elsewhere than glibc (macOS, musl) there is no such call and nothing is done.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from functools import cache


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim  # the C library this process already runs on (no ldconfig lookup)
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def give_back() -> bool:
    """Return the heaps' free pages to the OS; False where the C library cannot (nothing done)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
