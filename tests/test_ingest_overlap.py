"""Parsing in a background thread (ingest/overlap.py): same order, same errors, nothing left open."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from contracts.errors import MalformedExportError
from ingest.overlap import prefetched
from ingest.timestamps import to_utc


def test_items_arrive_in_order_with_the_timestamps_dropped_while_each_was_parsed() -> None:
    """Each item comes with the drops counted in the parser's thread while it was made, not mixed up."""

    def produce() -> Iterator[int]:
        for index in range(50):
            for _ in range(index % 3):
                to_utc(float("nan"))  # dropped: counted for this item only
            yield index

    received = list(prefetched(produce, depth=2))
    assert [item for item, _ in received] == list(range(50))
    assert [sum(dropped.values()) for _, dropped in received] == [index % 3 for index in range(50)]


def test_a_parse_error_is_raised_after_every_item_made_before_it() -> None:
    """A truncated file: the items before the bad spot are handed over first, then the parser's own error."""

    def produce() -> Iterator[int]:
        yield 1
        yield 2
        raise MalformedExportError("export.json", "truncated")

    received: list[int] = []
    with pytest.raises(MalformedExportError, match="truncated"):
        for item, _ in prefetched(produce):
            received.append(item)
    assert received == [1, 2]


def test_a_consumer_that_stops_early_closes_the_parser_and_its_thread() -> None:
    """A write that fails part-way (or Ctrl-C): the parser's generator is closed (its file with it), no thread left."""
    closed = threading.Event()

    def produce() -> Iterator[int]:
        try:
            yield from range(1_000_000)
        finally:
            closed.set()

    consumer = prefetched(produce, depth=1)
    with pytest.raises(RuntimeError):
        for item, _ in consumer:
            if item == 3:
                raise RuntimeError("disk full")
    consumer.close()
    assert closed.is_set()
    assert not [t for t in threading.enumerate() if t.name == "chatmem-ingest-parse"]
