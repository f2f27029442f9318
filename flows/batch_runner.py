"""The Dask side of `clients.batches.MapBatches`: each batch of a stage is one Prefect task on a Dask cluster.

    with dask_batches(settings.runner, "embed") as map_batches:     # flows/stage_runner.py, around stage.run
        for result in map_batches(job, batches): ...                # in the stage: results in batch order

Every batch is submitted at once to Prefect's `DaskTaskRunner` (prefect-dask), pointed at the scheduler in
`runner.dask_address` or at a `distributed.LocalCluster` of `runner.dask_workers` workers started for the
stage; the results are then read back in batch order, so the stage writes exactly what it writes when it
runs the batches itself. A batch that fails fails the stage (its error re-raised here), like in one process.

What a task carries: the job (a picklable callable that drops any secret when pickled, clients.batches), the
batch, the stage name and the batch's index. Prefect records the task runs (named `<stage>-batch-<i>`) but
not their parameter values; results are not persisted (NO_CACHE, persist_result=False): they go straight
back to the stage's process, which writes them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from flows.prefect_env import ensure_no_outbound

ensure_no_outbound()

from prefect import task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect_dask.task_runners import DaskTaskRunner  # noqa: E402

from clients.batches import MapBatches  # noqa: E402
from contracts.redact import redact_uri  # noqa: E402
from contracts.settings import RunnerSettings  # noqa: E402

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


@task(name="chatmem-batch", task_run_name="{stage}-batch-{index}", cache_policy=NO_CACHE, persist_result=False)
def run_batch(job: Callable[[Any], Any], batch: Any, stage: str, index: int) -> Any:
    """One batch of one stage, on a Dask worker."""
    return job(batch)


class DaskBatches:
    """`MapBatches` over a started DaskTaskRunner."""

    def __init__(self, runner: DaskTaskRunner, stage: str) -> None:
        self.runner, self.stage = runner, stage

    def __call__(self, job: Callable[[T], R], batches: Sequence[T]) -> Iterator[R]:
        futures = [
            self.runner.submit(run_batch, {"job": job, "batch": batch, "stage": self.stage, "index": i})
            for i, batch in enumerate(batches)
        ]
        log.info("%s - %d batch(es) submitted to Dask", self.stage, len(futures))
        for future in futures:  # batch order, whatever order they finish in
            yield future.result()


def task_runner(settings: RunnerSettings) -> DaskTaskRunner:
    """Prefect's Dask task runner for these settings: the given scheduler, or a LocalCluster."""
    if settings.dask_address is not None:
        return DaskTaskRunner(address=settings.dask_address)
    return DaskTaskRunner(
        cluster_class="distributed.LocalCluster",
        cluster_kwargs={
            "n_workers": settings.dask_workers,
            "threads_per_worker": 1,  # a batch is already as parallel as its work allows (onnxruntime, a pool)
            "processes": settings.dask_processes,
            "dashboard_address": None,  # no listening dashboard nobody asked for
            # loopback only: nothing outside this machine can reach it, and Dask does not probe a public
            # address to find its own (in-process workers' inproc:// transport does)
            "protocol": "tcp://",
            "host": "127.0.0.1",
        },
    )


@contextmanager
def dask_batches(settings: RunnerSettings, stage: str) -> Iterator[MapBatches]:
    """A MapBatches on Dask for the duration of one stage run; the LocalCluster (if any) closes with it."""
    where = redact_uri(settings.dask_address) if settings.dask_address else f"a LocalCluster of {settings.dask_workers}"
    log.info("%s - batches run on Dask: %s", stage, where)
    with task_runner(settings) as runner:
        yield DaskBatches(runner, stage)
