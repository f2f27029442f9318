"""How the pipeline runs and where heavy batches run: never what a stage computes (in no fingerprint)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class PipelineSettings(BaseModel):
    """How the Prefect pipeline runs."""

    model_config = ConfigDict(extra="forbid")

    quiet: bool = Field(default=False, description="Hide progress bars and default announcements.")
    lock_wait_s: float = Field(
        default=0.0,
        ge=0.0,
        description="How long a run waits for another run that holds the data dir (0: refuse at once, naming it).",
    )
    prefect_history_days: float = Field(
        default=30.0,
        ge=0.0,
        description="Prefect's records of chatmem's flow runs older than this are deleted after each run (the ledger "
        "in staging.db keeps every run); not on a Prefect server of your own (PREFECT_API_URL).",
    )


class RunnerSettings(BaseModel):
    """Where the heavy batches of embed, extract and cluster's final assignment run (docs/scale.md)."""

    model_config = ConfigDict(extra="forbid")

    task_runner: Literal["local", "dask"] = Field(
        default="local",
        description="local: every batch in the stage's own process; dask: each batch a Prefect task on a Dask "
        "cluster (prefect-dask): the scheduler at dask_address, or a local cluster of dask_workers.",
    )
    dask_address: str | None = Field(
        default=None,
        description="Scheduler of an existing Dask cluster, e.g. tcp://10.0.0.5:8786 (implies task_runner=dask); "
        "null with task_runner=dask: a LocalCluster on this machine.",
    )
    dask_workers: int = Field(default=2, ge=1, description="Workers of the LocalCluster when no address is given.")
    dask_processes: bool = Field(
        default=True, description="LocalCluster workers as processes (true) or threads of this process (false)."
    )
    local_workers: int = Field(
        default=0,
        ge=0,
        description="Worker processes for the CPU-bound batches of embed and extract when task_runner is local: "
        "0 = one per core of this machine, 1 = none (every batch in the stage's own process). Output is the same "
        "row by row whatever the number.",
    )
    stage_processes: bool = Field(
        default=True,
        description="Run a large run of the concepts, cluster and cues stages (a first build, --force, a re-tune: "
        "flows/stage_size.py) each in a process of its own, so that what they held (numba's compiled kernels, "
        "fragmented heaps: gigabytes at 1M messages) is given back when they end instead of staying under the load "
        "and the recall index; a scheduled day's small runs stay in the run's process; false: every stage in the "
        "run's process (a profiler sees them). Output is the same either way.",
    )
    extract_batch: int = Field(
        default=50,
        ge=1,
        description="Segments per extract task. Embed tasks take embed.write_batch texts and cluster tasks 20,000 "
        "points: the cuts a single-process run makes, so what is computed never depends on the runner.",
    )

    @property
    def distributed(self) -> bool:
        return self.task_runner == "dask" or self.dask_address is not None
