"""Keep the server busy: read ahead in one thread, write the ledger behind in another.

While the server writes batch n (the driver waits on a socket, the GIL is free), `Prefetch` reads, diffs and
hashes batch n+1 and `WriteBehind` records batch n-1 as done in staging.db. Each thread opens its own SQLite
connection (connections may not cross threads). A failure in either is raised in the stage's thread.
Write-behind is safe for resuming because the order stays: a batch is marked done only after the graph committed
it, and its manifest rows go in the same staging transaction; a crash can only leave a committed batch unmarked,
and that one is sent again (idempotently) by the next load.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass
class _Failure:
    error: BaseException


class _Done:
    pass


class Prefetch(Generic[T]):
    """Iterate `produce()` run in a daemon thread, at most `depth` items ahead of the consumer."""

    def __init__(self, produce: Callable[[], Iterator[T]], depth: int = 2) -> None:
        self._queue: queue.Queue[T | _Failure | _Done] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, args=(produce,), name="chatmem-load-reader", daemon=True)
        self._thread.start()

    def _put(self, item: T | _Failure | _Done) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _work(self, produce: Callable[[], Iterator[T]]) -> None:
        items = produce()
        try:
            for item in items:
                if not self._put(item):
                    return
            self._put(_Done())
        except BaseException as exc:  # handed to the consumer, raised there
            self._put(_Failure(exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()  # a generator's `with` blocks (its connections) end here, in this thread

    def __iter__(self) -> Iterator[T]:
        try:
            while True:
                item = self._queue.get()
                if isinstance(item, _Done):
                    return
                if isinstance(item, _Failure):
                    raise item.error
                yield item
        finally:
            self.close()

    def close(self) -> None:
        self._stop.set()
        while True:  # unblock a producer waiting on a full queue
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._thread.join()


class WriteBehind(Generic[T]):
    """Run submitted jobs one after another, in order, in a thread with a resource of its own (a connection)."""

    def __init__(self, open_resource: Callable[[], T], close_resource: Callable[[T], None], depth: int = 4) -> None:
        self._jobs: queue.Queue[Callable[[T], None] | None] = queue.Queue(maxsize=depth)
        self._failure: BaseException | None = None
        self._thread = threading.Thread(
            target=self._work, args=(open_resource, close_resource), name="chatmem-load-ledger", daemon=True
        )
        self._thread.start()

    def _work(self, open_resource: Callable[[], T], close_resource: Callable[[T], None]) -> None:
        try:
            resource = open_resource()
        except BaseException as exc:  # no resource, no jobs: drain them so that submit() never blocks forever
            self._failure = exc
            while self._jobs.get() is not None:
                pass
            return
        try:
            while (job := self._jobs.get()) is not None:
                if self._failure is None:  # after a failure, later jobs are dropped: the stage is failing
                    try:
                        job(resource)
                    except BaseException as exc:
                        self._failure = exc
        finally:
            close_resource(resource)

    def submit(self, job: Callable[[T], None]) -> None:
        """Queue a job (blocks while `depth` jobs wait); raises the failure of an earlier one."""
        self._raise()
        self._jobs.put(job)

    def close(self) -> None:
        """Wait for every queued job; raise the first failure."""
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join()
        self._raise()

    def _raise(self) -> None:
        if self._failure is not None:
            raise self._failure
