"""The runner every stage goes through, ingest and load included.

For stage S of run R: open the two databases; compute S's input fingerprint (flows/fingerprint.py); when the
latest run of S succeeded with the same fingerprint, record a skipped stage run that says so and stop (`--force`
recomputes); otherwise import S's module and call its `run(archive, staging, *, run_id, settings, **deps)`,
which opens its stage run, computes, validates, writes and closes it (or records the failure and raises a
StageError with the re-run command: staging/stage_run.py); then stamp that stage run with the fingerprint of
the inputs it finished with.

What a stage needs besides the databases (the settings with their secrets, the export paths, a progress bar)
comes from the run's `RunContext`, held in this process by run id. A stage declared with `batches` gets a
`map_batches` on Dask when the runner settings ask for it (flows/batch_runner.py); else, when it is declared
`local_pool`, one on runner.local_workers local processes (clients/process_batches.py; 1: none); else it runs
its batches itself. Prefect's flow parameters carry only the
run id, so nothing secret reaches Prefect's database.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import sqlite3
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clients.process_batches import process_batches, worker_count
from contracts.errors import ConfigError
from contracts.results import StageResult
from contracts.settings import Settings
from contracts.version import code_version
from flows.fingerprint import input_fingerprint, settings_section
from flows.progress import progress_factory
from flows.registry import StageSpec
from staging.archive import open_archive
from staging.ledger import Attempt, StageRun, latest_attempt, open_staging, set_input_fingerprint

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunContext:
    """Everything a run's stages need that is not a flow parameter."""

    settings: Settings = field(repr=False)
    exports: list[str] = field(default_factory=list)
    force_format: str | None = None
    force: bool = False  # recompute even when the inputs are unchanged
    show_progress: bool = False
    stage_lines: bool = False  # one line per stage on stderr: for a log file or a pipe, where bars are off


_ACTIVE: dict[str, RunContext] = {}


@contextmanager
def active_run(run_id: str, context: RunContext) -> Iterator[None]:
    """Make `context` the one `run_stage` uses for `run_id` while the block runs."""
    _ACTIVE[run_id] = context
    try:
        yield
    finally:
        _ACTIVE.pop(run_id, None)


def run_context(run_id: str) -> RunContext:
    try:
        return _ACTIVE[run_id]
    except KeyError:
        raise ConfigError(f"run {run_id} is not active in this process: start it with run_pipeline") from None


def run_stage(stage: StageSpec, run_id: str) -> StageResult:
    """Run (or skip, when nothing it reads has changed) one stage of run `run_id`."""
    context = run_context(run_id)
    settings = context.settings
    started = time.monotonic()
    archive = open_archive(settings.archive_path)
    staging = open_staging(settings.staging_path)
    try:
        before = input_fingerprint(stage, settings, archive, staging, context.exports)
        latest = latest_attempt(staging, stage.name)
        if not context.force and latest is not None and unchanged(latest, before):
            result = record_unchanged(staging, stage, run_id, settings, before, latest)
        else:
            module = importlib.import_module(stage.entry)
            with ExitStack() as stack:
                deps = _deps(stage, context, module)
                if stage.batches and settings.runner.distributed:
                    from flows.batch_runner import dask_batches  # only a Dask run loads prefect-dask

                    deps["map_batches"] = stack.enter_context(dask_batches(settings.runner, stage.name))
                elif stage.local_pool and worker_count(settings.runner.local_workers) > 1:
                    pool = process_batches(worker_count(settings.runner.local_workers))
                    deps["map_batches"] = stack.enter_context(pool)
                result = module.run(archive, staging, run_id=run_id, settings=settings, **deps)
            after = input_fingerprint(stage, settings, archive, staging, context.exports)
            if result.counts.get("not_returned") or result.counts.get("not_done"):  # left for later (a budget):
                # the stage succeeded, but the next run must not skip it as unchanged
                after += ":unfinished"
            set_input_fingerprint(staging, run_id, stage.name, after)
    finally:
        archive.close()
        staging.close()
    log.info("%s - %s: %s", stage.name, result.status, result.counts)
    if context.stage_lines:
        _line(f"{stage.name}: {result.status} in {time.monotonic() - started:.1f} s, {result.rows_out} rows written")
    return result


def _line(text: str) -> None:
    """A stage's progress as a timestamped line (a failure reaches the user as the CLI's `error:` line)."""
    print(f"{time.strftime('%H:%M:%S')} chatmem {text}", file=sys.stderr, flush=True)


def unchanged(latest: Attempt, fingerprint: str) -> bool:
    return latest.status in ("succeeded", "skipped") and latest.input_fingerprint == fingerprint


def _deps(stage: StageSpec, context: RunContext, module: Any) -> dict[str, Any]:
    deps: dict[str, Any] = {}
    if context.force and "force" in inspect.signature(module.run).parameters:
        deps["force"] = True  # --force: the stage redoes what its own caches would skip (ingest, segment)
    if stage.progress is not None:
        deps["progress"] = progress_factory(context.show_progress, stage.progress)
    if stage.exports:
        deps["exports"] = [Path(p) for p in context.exports]
        deps["force_format"] = context.force_format
    return deps


def _last_worked(staging: sqlite3.Connection, stage: str, fingerprint: str) -> str | None:
    """The run whose stage last did the work that these inputs gave (not a run that skipped it in turn)."""
    row = staging.execute(
        "SELECT run_id FROM stage_runs WHERE stage = ? AND status = 'succeeded' AND input_fingerprint = ?"
        " ORDER BY id DESC LIMIT 1",
        (stage, fingerprint),
    ).fetchone()
    return None if row is None else str(row[0])


def record_unchanged(
    staging: sqlite3.Connection,
    stage: StageSpec,
    run_id: str,
    settings: Settings,
    fingerprint: str,
    latest: Attempt,
) -> StageResult:
    """A skipped stage run: same inputs, settings and code as the latest run of the stage, which succeeded."""
    worked = _last_worked(staging, stage.name, fingerprint) or latest.run_id
    since = "this run" if worked == run_id else f"run {worked}"
    note = f"unchanged since {since} (same inputs, settings and code): skipped; --force recomputes"
    section = settings_section(settings, stage)
    ledger = StageRun(
        staging,
        run_id=run_id,
        stage=stage.name,
        input_fingerprint=fingerprint,
        settings=section if isinstance(section, dict) else {},
        code_version=code_version(),
    )
    ledger.succeed(rows_in=0, rows_out=0, counts={}, notes=[note], skipped=True)
    return StageResult(stage=stage.name, run_id=run_id, status="skipped", rows_in=0, rows_out=0, notes=[note])
