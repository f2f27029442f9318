"""The runner every stage goes through, ingest and load included: it keeps the books, the stage does the work.

For stage S of run R: open the two databases; compute S's input fingerprint once (flows/fingerprint.py); when
the latest run of S succeeded with the same fingerprint, record a skipped stage run that says so and stop
(`--force` recomputes); otherwise open S's stage run in the ledger (staging/stage_run.py), build its context
(clients/stage.py: its declared settings sections only, the databases, the batch helpers, the progress factory)
and call its `run(ctx) -> Outcome`; then record the outcome (counts, notes, skipped or succeeded, and the
fingerprint), or the failure with the command that re-runs it (a StageError), or the interruption.

What a stage needs besides the databases (the settings with their secrets, the export paths, a progress bar)
comes from the run's `RunContext`, held in this process by run id. A stage declared with `batches` gets a
`map_batches` on Dask when the runner settings ask for it (flows/batch_runner.py); else, when it is declared
`local_pool`, one on runner.local_workers local processes (clients/process_batches.py; 1: none); else it runs
its batches itself. Prefect's flow parameters carry only the run id, so nothing secret reaches Prefect's database.

`run_stage_now` runs one stage through the same bookkeeping without the skip rule: for tests and benchmarks,
which call a stage with their own dependencies (an embedder, an extractor, a graph target).
"""

from __future__ import annotations

import importlib
import logging
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clients.batches import MapBatches
from clients.free_memory import give_back
from clients.process_batches import process_batches, worker_count
from clients.progress import ProgressFactory
from clients.stage import Outcome, StageContext, declared_only
from contracts.errors import ConfigError
from contracts.results import StageResult
from contracts.settings import Settings
from contracts.version import code_version
from flows.fingerprint import Fingerprint, fingerprint_of, settings_sections
from flows.progress import progress_factory
from flows.registry import StageSpec, spec
from flows.stage_process import run_in_own_process
from flows.stage_size import large_run
from staging.archive import open_archive
from staging.ledger import Attempt, StageRun, latest_attempt, open_staging
from staging.liveness import finish_command
from staging.stage_run import ItemsFailed, stage_run

log = logging.getLogger(__name__)

NEVER, ALWAYS, WHEN_LARGE = "never", "always", "when large"  # Helpers.own_process


@dataclass(frozen=True)
class RunContext:
    """Everything a run's stages need that is not a flow parameter."""

    settings: Settings = field(repr=False)
    exports: list[str] = field(default_factory=list)
    force_format: str | None = None
    force: bool = False  # recompute even when the inputs are unchanged
    show_progress: bool = False
    stage_lines: bool = False  # one line per stage on stderr: for a log file or a pipe, where bars are off
    # a line on stderr as a stage starts its work (not one skipped as unchanged): a person sees which stage runs
    start_lines: bool = False
    # called once the cues stage has succeeded: the memory is complete (run_pipeline stores its recall index then)
    on_memory_ready: Callable[[], None] | None = field(default=None, repr=False)
    # called before each stage with its name and the results so far (run_pipeline starts the graph server ahead)
    before_stage: Callable[[str, list[StageResult]], None] | None = field(default=None, repr=False)


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
        fingerprint = fingerprint_of(stage, settings, archive, staging, context.exports, context.force_format)
        latest = latest_attempt(staging, stage.name)
        if not context.force and latest is not None and unchanged(latest, fingerprint.digest):
            result = record_unchanged(staging, stage, run_id, settings, fingerprint.digest, latest)
        else:
            if context.start_lines:
                _line(f"{stage.name}: started")
            with ExitStack() as stack:
                map_batches = None
                if stage.batches and settings.runner.distributed:
                    from flows.batch_runner import dask_batches  # only a Dask run loads prefect-dask

                    map_batches = stack.enter_context(dask_batches(settings.runner, stage.name))
                elif stage.local_pool and worker_count(settings.runner.local_workers) > 1:
                    pool = process_batches(worker_count(settings.runner.local_workers))
                    map_batches = stack.enter_context(pool)
                helpers = Helpers(
                    progress=progress_factory(context.show_progress, stage.progress) if stage.progress else None,
                    map_batches=map_batches,
                    exports=tuple(Path(p) for p in context.exports) if stage.exports else (),
                    force_format=context.force_format if stage.exports else None,
                    force=context.force,
                    # on Dask every stage stays in the run's process
                    own_process=WHEN_LARGE
                    if stage.own_process
                    and map_batches is None
                    and settings.runner.stage_processes
                    and not settings.runner.distributed
                    else NEVER,
                )
                result = execute(stage, run_id, settings, archive, staging, fingerprint, helpers, context.exports)
    finally:
        archive.close()
        staging.close()
        give_back()  # what the stage freed leaves the process: the next stage (and the recall index) start lower
    log.info("%s - %s: %s", stage.name, result.status, result.counts)
    if context.stage_lines:
        _line(f"{stage.name}: {result.status} in {time.monotonic() - started:.1f} s, {result.rows_out} rows written")
    return result


@dataclass(frozen=True)
class Helpers:
    """What the runner hands a stage besides its settings and the databases."""

    progress: ProgressFactory | None = None
    map_batches: MapBatches | None = None
    exports: tuple[Path, ...] = ()
    force_format: str | None = None
    force: bool = False
    # a process of its own (flows/stage_process.py): NEVER, ALWAYS, or WHEN_LARGE (flows/stage_size.py decides)
    own_process: str = NEVER


def execute(
    stage: StageSpec,
    run_id: str,
    settings: Settings,
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    fingerprint: Fingerprint,
    helpers: Helpers,
    exports: list[str],
    deps: Mapping[str, Any] | None = None,
) -> StageResult:
    """Open the stage run, call the stage with its context (and `deps`, a test's or a benchmark's), record it."""
    from flows.progress import bars_lock_threads

    bars_lock_threads()  # UMAP's tqdm would make a semaphore that the hard way out (os._exit on Ctrl-C) leaves behind
    module = importlib.import_module(stage.entry)
    recorded = settings_sections(settings, stage)
    with stage_run(staging, stage=stage.name, run_id=run_id, fingerprint=fingerprint.digest, settings=recorded) as row:
        ctx = StageContext(
            stage=stage.name,
            run_id=run_id,
            settings=declared_only(settings, stage.name, stage.settings_sections),
            archive=archive,
            staging=staging,
            stage_run_id=row.id,
            progress=helpers.progress,
            map_batches=helpers.map_batches,
            exports=helpers.exports,
            force_format=helpers.force_format,
            force=helpers.force,
            finish=finish_command(staging, run_id, stage.name),
        )
        outcome: Outcome
        why = _why_own_process(stage, module, ctx, settings, helpers, bool(deps))
        if why:
            log.info("%s: in a process of its own (%s)", stage.name, why)
            outcome = run_in_own_process(stage.entry, ctx, settings)
        else:
            if helpers.own_process == WHEN_LARGE:
                log.info("%s: in the run's process (a small run: flows/stage_size.py)", stage.name)
            outcome = module.run(ctx, **(deps or {}))
        if outcome.error is not None:
            raise ItemsFailed(
                outcome.error,
                rows_in=outcome.rows_in,
                rows_out=outcome.rows_out,
                counts=outcome.counts,
                notes=outcome.notes,
                hint=outcome.hint,
            )
        after = fingerprint.after(stage, settings, archive, staging, exports)
        if outcome.unfinished:  # the stage succeeded, but the next run must not skip it as unchanged
            after += ":unfinished"
        row.succeed(
            rows_in=outcome.rows_in,
            rows_out=outcome.rows_out,
            counts=outcome.counts,
            notes=outcome.notes,
            skipped=outcome.skipped,
            input_fingerprint=after,
        )
    return StageResult(
        stage=stage.name,
        run_id=run_id,
        status="skipped" if outcome.skipped else "succeeded",
        rows_in=outcome.rows_in,
        rows_out=outcome.rows_out,
        counts=dict(outcome.counts),
        notes=list(outcome.notes),
    )


def _why_own_process(
    stage: StageSpec, module: Any, ctx: StageContext, settings: Settings, helpers: Helpers, with_deps: bool
) -> str:
    """Why the stage runs in a process of its own ('' = in this one): never with a caller's dependencies (they do
    not cross), always when asked, else when flows/stage_size.py calls the run large."""
    if with_deps or helpers.own_process == NEVER:
        return ""
    if helpers.own_process == ALWAYS:
        return "asked"
    return large_run(stage, module, ctx, settings, helpers.force)


def run_stage_now(
    name: str,
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    *,
    run_id: str,
    settings: Settings,
    progress: ProgressFactory | None = None,
    map_batches: MapBatches | None = None,
    exports: Sequence[Path | str] = (),
    force_format: str | None = None,
    force: bool = False,
    own_process: str = NEVER,
    **deps: Any,
) -> StageResult:
    """Run stage `name` now through the runner's bookkeeping (no skip rule), with `deps` passed to its `run`; in
    this process unless `own_process` is ALWAYS, or WHEN_LARGE and the run is large (flows/stage_size.py: as
    `chatmem run` runs a stage declared own_process)."""
    stage = spec(name)
    if own_process != NEVER and map_batches is not None:  # the child has no way to the caller's pool
        raise ConfigError(
            "run_stage_now: own_process and map_batches together (a stage process runs its batches itself)"
        )
    paths = [str(p) for p in exports]
    fingerprint = fingerprint_of(stage, settings, archive, staging, paths, force_format)
    helpers = Helpers(progress, map_batches, tuple(Path(p) for p in exports), force_format, force, own_process)
    return execute(stage, run_id, settings, archive, staging, fingerprint, helpers, paths, deps)


def _line(text: str) -> None:
    """A stage's progress as a timestamped line (a failure reaches the user as the CLI's `error:` line)."""
    print(f"{time.strftime('%H:%M:%S')} chatmem {text}", file=sys.stderr, flush=True)


def unchanged(latest: Attempt, fingerprint: str) -> bool:
    return latest.status in ("succeeded", "skipped") and latest.input_fingerprint == fingerprint


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
    ledger = StageRun(
        staging,
        run_id=run_id,
        stage=stage.name,
        input_fingerprint=fingerprint,
        settings=settings_sections(settings, stage),
        code_version=code_version(),
    )
    ledger.succeed(rows_in=0, rows_out=0, counts={}, notes=[note], skipped=True)
    return StageResult(stage=stage.name, run_id=run_id, status="skipped", rows_in=0, rows_out=0, notes=[note])


def record_nothing_to_build(staging: sqlite3.Connection, stage: StageSpec, run_id: str, settings: Settings) -> None:
    """A skipped stage run after an ingest that left the archive empty (flows/pipeline.py): the run is complete,
    and no fingerprint of real inputs is recorded, so the first run that brings conversations runs the stage."""
    ledger = StageRun(
        staging,
        run_id=run_id,
        stage=stage.name,
        input_fingerprint="nothing-to-build",
        settings=settings_sections(settings, stage),
        code_version=code_version(),
    )
    ledger.succeed(rows_in=0, rows_out=0, counts={}, notes=["the archive holds no conversation: not run"], skipped=True)
