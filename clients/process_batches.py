"""`clients.batches.MapBatches` on a pool of local worker processes: the CPU-bound batches of a stage (offline
extraction, tokenising and the static model) on every core of this machine, not one.

    with process_batches(workers=2) as map_batches:         # flows/stage_runner.py, around stage.run
        for result in map_batches(job, batches): ...         # in the stage: results in batch order

A call submits every batch at once and returns at once; results are read back in batch order, so a stage that
asks for its next batches before it writes the current one keeps the workers busy while it writes, and still
writes what a single-process run writes. Only the stage's own process touches the databases: a worker gets a
job and a batch and sends back the job's result.

Why it is built this way:
- `spawn`, not `fork`: the stage process has threads (Prefect's, SQLite's connections in use); a forked child
  of a threaded process can inherit a held lock and hang. A spawned worker imports what the job needs once.
- A job is pickled once per call, into a file the workers read once (cached by that file's name), not once
  per batch: the extract job carries every known concept name (hundreds of thousands at 1M messages), and a
  worker would otherwise unpickle, and fold, them again for every batch.
- A worker whose parent dies (kill -9 of a run) exits within a second on its own (`watch_parent`), so no
  orphan keeps computing; the run's writes are the parent's, so re-run safety is the single process's.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from clients.batches import MapBatches, map_in_process

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

PARENT_POLL_S = 0.5  # how often a worker checks that the stage process is still there


def worker_count(setting: int) -> int:
    """Workers for a `runner.local_workers` setting: 0 means one per core of this machine."""
    return setting if setting > 0 else os.cpu_count() or 1


class ProcessBatches:
    """`MapBatches` over a pool of spawned worker processes; see the module docstring."""

    def __init__(self, workers: int, scratch: Path) -> None:
        self.workers = workers
        self._scratch = scratch
        self._pool = ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=watch_parent,
            initargs=(os.getpid(),),
        )
        self._shipped: dict[int, tuple[Any, str]] = {}  # id(job) -> (job, its file): the job kept alive

    def __call__(self, job: Callable[[T], R], batches: Sequence[T]) -> Iterator[R]:
        if len(batches) < 2:  # nothing to share: no worker is started (nor the job shipped) for a small run
            return map_in_process(job, batches)
        path = self._ship(job)
        futures = [self._pool.submit(_run, path, batch) for batch in batches]
        return _in_order(futures)

    def _ship(self, job: Callable[[Any], Any]) -> str:
        known = self._shipped.get(id(job))
        if known is not None and known[0] is job:
            return known[1]
        path = self._scratch / f"job-{len(self._shipped)}.pickle"
        with open(path, "wb") as handle:
            pickle.dump(job, handle, protocol=pickle.HIGHEST_PROTOCOL)
        self._shipped[id(job)] = (job, str(path))
        return str(path)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _in_order(futures: list[Future[R]]) -> Iterator[R]:
    try:
        for future in futures:
            yield future.result()  # a batch's error is raised here, in the stage, as it would be in-process
    finally:
        for future in futures:  # the stage stopped reading (an error): do not compute what nobody will write
            future.cancel()


@contextmanager
def process_batches(workers: int) -> Iterator[MapBatches]:
    """A MapBatches for one stage run: a pool of `workers` processes, or the stage's own process when 1."""
    if workers <= 1:
        yield map_in_process
        return
    scratch = Path(tempfile.mkdtemp(prefix="chatmem-jobs-"))
    pool = ProcessBatches(workers, scratch)
    log.info("batches run on %d local worker processes", workers)
    try:
        yield pool
    finally:
        pool.close()
        shutil.rmtree(scratch, ignore_errors=True)


# --- in the worker ---------------------------------------------------------------------------------------

_JOB: tuple[str, Callable[[Any], Any]] | None = None  # the last job read: its file and itself


def _run(path: str, batch: Any) -> Any:
    global _JOB
    if _JOB is None or _JOB[0] != path:
        with open(path, "rb") as handle:
            _JOB = (path, pickle.load(handle))
    return _JOB[1](batch)


def watch_parent(parent: int) -> None:
    """Exit this worker as soon as the process that started it is gone (killed, or crashed). Ctrl-C reaches the
    whole process group: it is the stage process's to handle (flows/interrupt.py), which then shuts the pool
    down; a worker that died of it would only add a traceback per worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="chatmem-parent-watch", daemon=True).start()
