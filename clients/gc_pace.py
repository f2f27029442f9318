"""Fewer cyclic garbage collections while a stage makes millions of short-lived objects (extract, concepts).

The offline extractor builds a token, a tuple or a list for every word of every message, and the concepts stage a
pydantic object for every hypothesis; nearly all of them are freed by their reference count, never by the cyclic
collector. Python's default young-generation threshold (700 allocations) still runs the collector thousands of
times a minute, and each run walks the young objects alive at that moment, then again as they age; with the
stages' long-lived caches (lexicon lookups, word shapes, the concept store) in the older generations, the full
collections walk those too. `fewer_collections` raises the young threshold and freezes what is alive when the
stage starts (modules, settings: never garbage), so the collector runs about a hundredth as often. What the stage
computes is unchanged (the collector frees only unreachable cycles, and no code here relies on when); the cost is
that a cycle lives a little longer before it is freed, which is memory measured in megabytes at most.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000  # allocations between young collections (Python's default: 700)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the block with the young threshold raised and what is alive before it frozen; both put back after."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(YOUNG_THRESHOLD, before[0]), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
