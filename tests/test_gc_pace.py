"""clients/gc_pace.py: the collector paced inside the block, as it was after it; cycles are still freed."""

from __future__ import annotations

import gc
import weakref

from clients.gc_pace import YOUNG_THRESHOLD, fewer_collections


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_threshold_raised_inside_and_put_back_after() -> None:
    before = gc.get_threshold()
    with fewer_collections():
        inside = gc.get_threshold()
    assert inside[0] == max(YOUNG_THRESHOLD, before[0]) and inside[1:] == before[1:]
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0  # what was frozen for the block is collected as usual again


def test_put_back_when_the_block_raises() -> None:
    before = gc.get_threshold()
    try:
        with fewer_collections():
            raise ValueError("a stage failed")
    except ValueError:
        pass
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_cycle_made_inside_is_still_freed() -> None:
    with fewer_collections():
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a reference cycle: only the collector frees it
        ref = weakref.ref(a)
        del a, b
        gc.collect()
        assert ref() is None
