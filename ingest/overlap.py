"""Parse in a background thread while the stage writes: both cores busy, nothing new to pickle.

SQLite releases the GIL while it steps a statement (B-tree inserts, FTS5 tokenising, page writes), and the
parser is pure Python: run the parser in a thread that hands finished batches over a short queue, and the
writer's time in SQLite overlaps the next batch's parsing. The connection never leaves the stage's thread.
(A worker process was measured and left out: pickling ~1.2 KB rows cost nearly what it saved, see
ingest/batches.py.)

Order and failure are those of the plain loop: batches arrive in order, and an error the parser raised
(a truncated file, bad UTF-8) is raised to the consumer after every batch parsed before it. When the consumer
stops early (a write failed, Ctrl-C), the thread is told to stop and its generator is closed there, which
closes the export file.
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TypeVar

from ingest.timestamps import counting_dropped

T = TypeVar("T")

_DONE = object()
_POLL_S = 0.1  # how often a blocked producer looks whether the consumer has gone


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def prefetched(produce: Callable[[], Iterator[T]], *, depth: int = 2) -> Iterator[tuple[T, Counter[str]]]:
    """Yield `(item, timestamps dropped while parsing it)` from `produce()`, run in a background thread.

    At most `depth` items wait in the queue, so memory stays bounded by a few batches. The dropped-timestamp
    counts travel with each item: `counting_dropped` is per thread, so it is opened in the producer's.
    """
    handoff: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: object) -> bool:
        while not stop.is_set():
            try:
                handoff.put(entry, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        items = produce()
        try:
            with counting_dropped() as dropped:
                for item in items:
                    counts = Counter(dropped)
                    dropped.clear()
                    if not put((item, counts)):
                        return
            put(_DONE)
        except BaseException as exc:  # handed to the consumer, raised there in order
            put(_Failed(exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=work, name="chatmem-ingest-parse", daemon=True)
    thread.start()
    try:
        while True:
            entry = handoff.get()
            if entry is _DONE:
                return
            if isinstance(entry, _Failed):
                raise entry.error
            yield entry  # type: ignore[misc]
    finally:
        stop.set()
        thread.join()
