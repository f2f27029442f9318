"""The Prefect pipeline: one flow per stage (made from the stage registry, flows/registry.py), run as subflows
of `pipeline`, in STAGE_ORDER.

Flows are wiring only (kedro's pipeline.py vs nodes.py): each stage flow hands its stage to the one runner
(flows/stage_runner.py), which skips it when nothing it reads has changed or calls the stage's `run(...)`; the
parent records the run in the ledger. A flow's only parameters are the run id (and, for the parent, the stage
names): settings hold secrets and stay in this process. Results are not persisted by Prefect: stage outputs
live in staging.db.

`run_pipeline` is the plain-Python entry point the CLI and the watch flow call.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from flows.prefect_env import ensure_no_outbound

ensure_no_outbound()  # before prefect is imported, even when this module is imported on its own

from prefect import flow, get_run_logger  # noqa: E402
from prefect.settings import temporary_settings  # noqa: E402

from contracts.errors import ChatmemError, ConfigError  # noqa: E402
from contracts.results import StageResult  # noqa: E402
from contracts.settings import Settings  # noqa: E402
from contracts.version import code_version  # noqa: E402
from flows import early_api, server_guard  # noqa: E402
from flows.export_paths import absolute  # noqa: E402
from flows.interrupt import EXIT_CODES, RunInterrupted, interruptible  # noqa: E402
from flows.prefect_history import prune_quietly  # noqa: E402
from flows.progress import bars_wanted  # noqa: E402
from flows.registry import STAGE_ORDER, STAGES, StageSpec, check_stages  # noqa: E402
from flows.stage_runner import (  # noqa: E402
    RunContext,
    active_run,
    record_nothing_to_build,
    run_context,
    run_stage,
)
from staging.db import connect_readonly  # noqa: E402
from staging.ledger import close_run, new_run_id, open_run, open_staging  # noqa: E402
from staging.liveness import FORMAT_KEY, interrupt_error  # noqa: E402
from staging.lock import data_dir_lock  # noqa: E402

if TYPE_CHECKING:
    from clients.graph_server import LocalServer

log = logging.getLogger(__name__)

# Every flow here: persist_result=False (stage outputs live in staging.db, not in Prefect's result store)
# and validate_parameters=False (parameters come from typed code, and re-validating a Settings object would
# re-read the environment under the caller's feet).


def stage_flow(stage: StageSpec) -> Callable[[str], StageResult]:
    """The Prefect flow of one stage: named after it, its runs named `<stage>-<run id>`, its one parameter the
    run id (the settings and export paths stay in this process: see flows/stage_runner.py)."""

    @flow(
        name=stage.name,
        flow_run_name=f"{stage.name}-{{run_id}}",
        description=stage.description,
        persist_result=False,
        validate_parameters=False,
    )
    def run_one_stage(run_id: str) -> StageResult:
        return run_stage(stage, run_id)

    return run_one_stage


STAGE_FLOWS: dict[str, Callable[[str], StageResult]] = {stage.name: stage_flow(stage) for stage in STAGES}
STAGE_BY_NAME = {stage.name: stage for stage in STAGES}


NOTHING_TO_BUILD = "the archive holds no conversation: nothing to build; the later stages were not run"


def _archive_empty(settings: Settings) -> bool:
    """The archive holds no conversation after the ingest (an empty export into an empty data dir): the later
    stages would only start their heavy parts (the graph server, the cluster's imports) to find nothing, and
    say "no current segments: run the segment stage first", advice that does not apply."""
    if not settings.archive_path.exists():
        return True  # the ingest stored nothing
    try:
        archive = connect_readonly(settings.archive_path)
    except (sqlite3.Error, OSError):
        return False  # the stages meet it and say so in their own words
    try:
        return archive.execute("SELECT 1 FROM conversations LIMIT 1").fetchone() is None
    except sqlite3.Error:
        return False
    finally:
        archive.close()


@flow(
    name="chatmem-pipeline",
    flow_run_name="pipeline-{run_id}",
    persist_result=False,
    validate_parameters=False,
)
def pipeline(run_id: str, stages: list[str]) -> list[StageResult]:
    """Open the run in the ledger, run each stage's flow in order, close the run with success or the error."""
    logger = get_run_logger()
    context = run_context(run_id)
    settings = context.settings
    staging = open_staging(settings.staging_path)
    try:
        open_run(
            staging,
            stages=stages,
            exports=context.exports,
            # the run's --format: the command that resumes it says it again (staging.liveness.resume_command)
            settings=settings.public_dump() | ({FORMAT_KEY: context.force_format} if context.force_format else {}),
            code_version=code_version(),
            run_id=run_id,
            order=STAGE_ORDER,
        )
        results: list[StageResult] = []
        stage = ""
        try:
            for stage in stages:
                if context.before_stage:
                    context.before_stage(stage, results)
                results.append(STAGE_FLOWS[stage](run_id))
                if stage == "ingest" and len(stages) > 1 and _archive_empty(settings):
                    results[-1].notes.append(NOTHING_TO_BUILD)
                    logger.info("run %s: %s", run_id, NOTHING_TO_BUILD)
                    for later in stages[1:]:
                        record_nothing_to_build(staging, STAGE_BY_NAME[later], run_id, settings)
                    break
                if stage == "cues" and results[-1].status == "succeeded" and context.on_memory_ready:
                    context.on_memory_ready()  # the recall index is stored while the load writes the graph
        except BaseException as exc:  # a KeyboardInterrupt too: the ledger must not say 'running' forever
            message = str(exc) if isinstance(exc, ChatmemError) else f"{type(exc).__name__}: {str(exc) or 'stopped'}"
            if isinstance(exc, KeyboardInterrupt):  # as the watchdog words it: "interrupted: stopped by SIGTERM in ..."
                message = f"{interrupt_error(exc)} in stage {stage}"
            with contextlib.suppress(sqlite3.Error):  # a full disk: the run shows as interrupted once we exit
                close_run(staging, run_id, error=message)
            logger.error("run %s failed: %s", run_id, message)
            raise
        close_run(staging, run_id)
        return results
    finally:
        staging.close()


def run_pipeline(
    settings: Settings,
    exports: Sequence[Path | str],
    stages: Sequence[str] = STAGE_ORDER,
    run_id: str | None = None,
    force_format: str | None = None,
    quiet: bool = False,
    force: bool = False,
    graph: LocalServer | None = None,
) -> tuple[str, list[StageResult]]:
    """Run `stages` (a slice of STAGE_ORDER) as one pipeline run. Returns the run id and the stage results.

    A stage whose inputs, settings and code are unchanged since its last successful run is skipped with a note
    (flows/fingerprint.py); `force` runs every selected stage regardless.

    `graph`: the local graph server the load stage will use, which the caller stops as the run ends if the run
    started it (clients.graph_server.left_as_found). It is started on a thread as the cues stage begins, when the
    load follows and an earlier stage of this run did work: the JVM's few seconds of start then overlap the
    cues stage instead of opening the load.

    Raises ConfigError for bad arguments before anything starts, and the stage's StageError when a stage
    fails (the run is then recorded as failed, with the error, in staging.db).
    """
    selected = check_stages(stages)
    if "ingest" in selected and not exports:
        raise ConfigError("the ingest stage needs at least one export file")
    # Absolute paths: the ledger must name the same files whatever directory a re-run starts from.
    paths = [str(absolute(p)) for p in exports]
    run_id = run_id or new_run_id()
    recall_index = RecallIndexBuild(settings)
    context = RunContext(
        settings=settings,
        exports=paths,
        force_format=force_format,
        force=force,
        show_progress=bars_wanted(quiet or settings.pipeline.quiet),
        stage_lines=not (quiet or settings.pipeline.quiet or bars_wanted(False)),
        start_lines=not (quiet or settings.pipeline.quiet),
        on_memory_ready=recall_index.start,
        before_stage=_graph_ahead(graph, selected, force),
    )
    if not early_api.active():  # a server started early (flows/early_api.py) runs guarded already
        server_guard.install()  # faults (issue 13): Ctrl-C must not reach Prefect's server, nor SIGKILL orphan it
    with (
        data_dir_lock(settings.data_dir, run_id, wait_s=settings.pipeline.lock_wait_s),  # one writer per data dir
        interruptible(settings, run_id, selected),  # Ctrl-C: one line, the ledger says interrupted, exit 130
        without_heartbeats(),
        active_run(run_id, context),
    ):
        try:
            early_api.wait_ready()  # the ephemeral API started as the command began (flows/early_api.py)
            results = pipeline(run_id=run_id, stages=selected)
            if not recall_index.started and {"cues", "load"} & set(selected):
                recall_index.start_unless_stored()  # the memory of a run killed before it stored its index
        except Exception:  # not a Ctrl-C (a BaseException): that stops the build's daemon thread with the process
            recall_index.wait()  # the memory is complete even when the load failed: its index is worth keeping
            raise
    try:
        recall_index.wait()
    except KeyboardInterrupt as exc:  # the run is complete and recorded: say so, not "nothing was run"
        by = "SIGTERM" if "SIGTERM" in str(exc) else "Ctrl-C"
        raise RunInterrupted(
            f"interrupted by {by} after run {run_id} finished, while storing its recall index: the run is"
            " complete; the first chatmem recall builds the index",
            EXIT_CODES[signal.SIGTERM if by == "SIGTERM" else signal.SIGINT],
        ) from None
    prune_quietly(settings.pipeline.prefect_history_days)  # Prefect's database grows with the runs otherwise
    return run_id, list(results)


def _graph_ahead(
    graph: LocalServer | None, stages: Sequence[str], force: bool
) -> Callable[[str, list[StageResult]], None] | None:
    """`run_pipeline`'s hook that starts the local graph server in the background as the cues stage begins, when
    the run will load something: it is forced, or an earlier stage did work (a run that changes nothing skips its
    load, and a JVM started for it would only cost its start and stop)."""
    if graph is None or "load" not in stages:
        return None

    def before(stage: str, done: list[StageResult]) -> None:
        if stage == "cues" and (force or any(r.status == "succeeded" for r in done)):
            graph.start_in_background()

    return before


class RecallIndexBuild:
    """The new memory's recall index, stored on a thread from the moment the cues stage succeeds, so that it is
    built while the load stage writes the graph (which waits on the graph server most of the time): at 250k
    messages the index takes ~17 CPU-s and the load ~20 s of wall, one after the other before this.

    Nothing they share is written by both: the index reads the memory's rows (staging.db, read-only, WAL) and
    writes DATA_DIR/recall-index through a temporary directory renamed into place (memory/index_store.py)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.thread: threading.Thread | None = None
        self.failure: BaseException | None = None

    @property
    def started(self) -> bool:
        return self.thread is not None

    def start(self) -> None:
        if self.thread is None:  # daemon: a Ctrl-C does not wait for it
            self.thread = threading.Thread(target=self._build, name="chatmem-recall-index", daemon=True)
            self.thread.start()

    def start_unless_stored(self) -> None:
        """`start` when the latest memory has no stored index: a run killed after its cues stage and before its index
        was stored (in the load, say) leaves it without one, and the re-run skips the cues stage as unchanged, which
        would leave the build to the first `chatmem recall` (minutes at 1M messages). A look at run ids only (the
        memory's latest run, the index folder's names): nothing is built or loaded when the index is there."""
        from memory.index_store import stored_runs  # the recall path's modules, as in prepare_recall
        from staging.memory import latest_run

        try:
            staging = connect_readonly(self.settings.staging_path)
            try:
                latest = latest_run(staging)
            finally:
                staging.close()
        except (ChatmemError, OSError, sqlite3.Error) as exc:  # the first recall says what is wrong, if anything is
            log.warning("the recall index was not checked after the run: %s", exc)
            return
        if latest is not None and latest not in stored_runs(self.settings.data_dir):
            log.info("storing the recall index of run %s: an earlier run stopped before it stored it", latest)
            self.start()

    def _build(self) -> None:
        try:
            prepare_recall(self.settings)
        except BaseException as exc:  # a bug, not a data problem (prepare_recall logs those): raised by wait()
            self.failure = exc

    def wait(self) -> None:
        if self.thread is not None:
            self.thread.join()
        if self.failure is not None:
            raise self.failure


def prepare_recall(settings: Settings) -> None:
    """Store the new memory's recall index now (memory/index_store.py), so that the first `chatmem recall` after
    a run opens it instead of building it (seconds on the demo, minutes at 1M messages). Outside every stage: the
    index depends on recall settings too, which no stage's fingerprint holds. A failure here costs nothing but
    time: the first recall builds the index then, and says why if it cannot."""
    from memory.service import Memory  # the recall path's modules: only a run that built a memory pays for them

    try:
        Memory.store(settings)  # stored, not queried: neither mapped back in nor given the garden's facts
    except (ChatmemError, OSError, sqlite3.Error, ValueError) as exc:
        log.warning("the recall index was not stored after the run (the first recall builds it): %s", exc)


@contextmanager
def without_heartbeats() -> Iterator[None]:
    """Turn off flow-run heartbeats, unless the user set their frequency.

    Heartbeats let a Prefect server notice a crashed run; their thread sleeps in 1 s steps and every flow
    waits for it when it ends, which costs about 1 s per flow: most of a run that has nothing to do. A run
    that dies is visible without them: the ledger keeps it as 'running' with no finish time.
    """
    if any(os.environ.get(f"PREFECT_{kind}_HEARTBEAT_FREQUENCY") for kind in ("FLOWS", "RUNNER")):
        yield
        return
    with temporary_settings(updates={"flows.heartbeat_frequency": None}):
        yield
