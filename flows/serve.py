"""Scheduling: a `watch_folder` flow over a folder of dumps, served as a Prefect deployment on a cron.

Each run lists the dumps in the folder (export files, zips, unzipped export folders), skips those whose bytes
were already ingested completely (same sha256: the archive's `sources` row is 'complete'), and runs the
pipeline over the rest. A dump that fails (or arrives only partly: cut short) is logged once, saying that it
waits for the file to change, and listed in the flow's result; the next runs leave those same bytes alone (the
ledger's `ingest_files` row for that sha256 says failed or partial: read again, they would only fail again, one
failed run per tick), listing it as waiting. A fixed copy (new bytes) is simply new, at the next tick, as are
bytes that failed before a format was named once one is (a raised zip limit, a --format given);
`chatmem run PATH` reads the old bytes again at will.

Prefect's ephemeral API has no scheduler, so `serve_forever` starts a Prefect server on loopback (state under
PREFECT_HOME) unless PREFECT_API_URL points at one already. `--once` runs the flow once on the ephemeral API.

Stopping `serve`: Ctrl-C ends it with exit code 130 and one line, as it ends `chatmem run` (Prefect's runner
catches the KeyboardInterrupt, shuts down in order and returns as after any stop, logging that it did:
`serve_forever` notes that record and raises ServeStopped after it). SIGTERM, a service manager's stop
(`systemctl stop`, `docker stop`), is the normal end of a service: Prefect's runner shuts down gracefully and
`serve` exits 0, which service managers count as a clean stop (they would log exit 143 as a failure).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from flows.prefect_env import ensure_no_outbound

ensure_no_outbound()  # before prefect is imported

from prefect import flow, get_run_logger  # noqa: E402
from prefect.client.schemas.objects import State  # noqa: E402
from prefect.context import FlowRunContext  # noqa: E402
from prefect.states import Cancelled  # noqa: E402

from clients.graph_server import left_as_found  # noqa: E402
from clients.graph_target import local_server  # noqa: E402
from contracts.errors import BusyError, ChatmemError, ConfigError, ExportError, StageError  # noqa: E402
from contracts.settings import Settings  # noqa: E402
from flows import early_api, local_api, server_guard  # noqa: E402
from flows.export_paths import LeftOut, exports_in_folder, names_under  # noqa: E402
from flows.interrupt import EXIT_CODE, FLOW_RUN_ID, RunInterrupted  # noqa: E402
from flows.log_setup import said_by_one_flow  # noqa: E402
from flows.pipeline import run_pipeline, without_heartbeats  # noqa: E402
from flows.registry import STAGE_ORDER  # noqa: E402
from ingest.detect import detect_format  # noqa: E402
from ingest.sources import (  # noqa: E402
    OpenedExport,
    file_sha256,
    open_export,
    read_head,
)
from staging.archive import ArchiveWriter  # noqa: E402
from staging.db import connect_readonly  # noqa: E402
from staging.ingest_files import STUCK, last_outcome  # noqa: E402
from staging.inspect import run_files  # noqa: E402
from staging.lock import serve_lock  # noqa: E402

log = logging.getLogger(__name__)

DEPLOYMENT_NAME = "chatmem-watch"
SAID_FILE = "watch-left-out.json"  # in the data dir: what the watch runs said they leave out, to say it once


def list_dumps(watch_dir: Path, data_dir: Path) -> tuple[list[Path], list[LeftOut]]:
    """(the exports in `watch_dir`, what is left out there and why), as `chatmem run DIR` finds them
    (flows/export_paths.py): an export folder, a file named .json/.jsonl/.ndjson/.zip or starting as JSON or a zip,
    FOLDER_DEPTH levels of subfolders down. Left out: half-written downloads (.part, .crdownload, .download), the
    side files of an unzipped export (user.json, ...), what is not an export: ingesting them could only fail, again
    at every run."""
    if not watch_dir.is_dir():
        raise ConfigError(f"--watch {watch_dir}: not a directory")
    return exports_in_folder(watch_dir, data_dir)


def newly_left_out(data_dir: Path, left: list[LeftOut]) -> list[LeftOut]:
    """Of what a watch run leaves out, what no earlier run said (or said for another reason): each is said once,
    not at every tick. The record (SAID_FILE) holds what is left out now, so a file removed and dropped in again is
    said again; it is written only when that changes. A record that cannot be read or written says all again."""
    record = data_dir / SAID_FILE
    try:
        said = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        said = None
    said = said if isinstance(said, dict) else {}
    now = {str(item.path): item.why for item in left}
    if now != said:
        with contextlib.suppress(OSError):
            data_dir.mkdir(parents=True, exist_ok=True)
            partial = record.with_suffix(".tmp")
            partial.write_text(json.dumps(now, indent=0), encoding="utf-8")
            partial.replace(record)
    return [item for item in left if said.get(str(item.path)) != item.why]


def split_new(
    settings: Settings, dumps: list[Path], force_format: str | None = None
) -> tuple[list[Path], list[Path], list[dict[str, Any]]]:
    """(new, already ingested completely, waiting for a change). A dump that cannot even be opened counts as new
    (the ingest stage then records why it failed, in the ledger where `chatmem staging failures` finds it) until
    it failed once: waiting, as is a dump whose latest outcome was failed or partial, while its bytes stay the
    same and would be read as the same format."""
    if not settings.archive_path.exists():
        return list(dumps), [], []
    new: list[Path] = []
    done: list[Path] = []
    waiting: list[dict[str, Any]] = []
    archive = connect_readonly(settings.archive_path)
    staging = connect_readonly(settings.staging_path) if settings.staging_path.exists() else None
    try:
        writer = ArchiveWriter(archive)  # only its read method is used: the connection is read-only
        for path in dumps:
            try:
                opened = open_export(
                    path,
                    max_member_bytes=settings.ingest.max_zip_member_bytes,
                    max_ratio=settings.ingest.max_zip_ratio,
                )
                sha256: str | None = opened.sha256
            except ExportError:
                opened, sha256 = None, file_sha256(path)
            if opened is not None and writer.source_status(opened.sha256) == "complete":
                done.append(path)
                continue
            last = last_outcome(staging, sha256) if staging is not None and sha256 else None
            if (
                last is not None
                and last["status"] in STUCK
                and last["format"] == _read_as(opened, force_format)  # None: before one was named, as now
            ):
                waiting.append({**last, "path": str(path)})
            else:
                new.append(path)
    finally:
        archive.close()
        if staging is not None:
            staging.close()
    return new, done, waiting


def _read_as(opened: OpenedExport | None, force_format: str | None) -> str | None:
    """The format this tick's ingest would read the dump as (ingest/stage.py), None where it would fail before
    naming one: bytes that failed read as one format are tried again as another (a manual run's wrong --format),
    and bytes that failed before a format was named, once one is (a raised zip limit, a --format given)."""
    if opened is None or force_format is not None:
        return None if opened is None else force_format
    try:
        return detect_format(read_head(opened), name=opened.path)
    except (ExportError, OSError):
        return None


# The interruption that ended this process's last watch run (Ctrl-C or SIGTERM), for `run_once` to raise.
_INTERRUPTED: list[RunInterrupted] = []


WATCH_FLOW = "chatmem-watch"


def _a_served_tick() -> bool:
    """Whether this flow run is a run of the served deployment (in a process Prefect's runner started for it),
    not `serve --once` in the CLI's process. (The runner's flow-run process has PREFECT__DEPLOYMENT_NAME in its
    environment but, in Prefect 3.9, no PREFECT__FLOW_RUN_ID: the run's own record says it.)"""
    context = FlowRunContext.get()
    return context is not None and context.flow_run is not None and context.flow_run.deployment_id is not None


@flow(name=WATCH_FLOW, persist_result=False, validate_parameters=False)
def watch_folder(watch_dir: str, data_dir: str, force_format: str | None = None) -> Any:
    """Ingest the dumps in `watch_dir` that are not in the archive yet; report the ones that fail.

    Returns the result dict, or a Cancelled state when Ctrl-C or SIGTERM stopped the run: the ledger has it as
    interrupted, and the flow run ends with that one line rather than a RunInterrupted traceback in the log."""
    logger = get_run_logger()
    served = _a_served_tick()
    if served:  # its console says each failure once (`--once`: the CLI does)
        said_by_one_flow(WATCH_FLOW)
    # What the CLI's summary of `serve --once` says itself (a file left out, one cut short) is no warning there: the
    # raw `WARNING prefect.flow_runs: watch - ...` line came before the summary that said the same (session 38's
    # cold try). A served tick has no summary: its log is where they are said.
    tell = logger.warning if served else functools.partial(_say, logger)  # INFO past Prefect's level (its API's)
    settings = Settings(data_dir=Path(data_dir))
    dumps, left = list_dumps(Path(watch_dir), settings.data_dir)
    for item in newly_left_out(settings.data_dir, left):  # a file dropped in that is not read: why, once
        tell("watch - left out %s: %s", item.path, item.why)
    new, done, waiting = split_new(settings, dumps, force_format)
    result: dict[str, Any] = {
        "watch_dir": watch_dir,
        "run_id": None,
        "already_ingested": [str(p) for p in done],
        "ingested": [],
        "failed": [],
        # failed (or partial) before with these same bytes: said when it failed, not tried until the file changes
        "waiting": [{k: w[k] for k in ("path", "run_id", "status")} | {"error": w["detail"]} for w in waiting],
        "error": None,  # a stage failure, whether or not a particular dump is to blame
        "left_out": [{"path": str(item.path), "why": item.why} for item in left],  # every tick; logged once
    }
    unchanged = f"; {len(waiting)} failed before, unchanged since: waiting for the file to change" if waiting else ""
    if not new:
        logger.info("watch - nothing new in %s (%d dump(s) already ingested%s)", watch_dir, len(done), unchanged)
        return result
    names = names_under(new, Path(watch_dir))  # `conversations.json, 2024-05/, new.zip and 2 more`
    _say(logger, "watch - %d new dump(s) in %s, picked up: %s%s", len(new), watch_dir, names, unchanged)
    graph = local_server(settings) if settings.load.local_server and not settings.load.uri else None
    stage_failed: StageError | None = None
    try:
        with left_as_found(graph):  # the run stops a local graph server it started (clients/graph_server.py)
            run_id, _ = run_pipeline(settings, new, STAGE_ORDER, force_format=force_format, quiet=True, graph=graph)
    except StageError as exc:
        run_id, stage_failed = exc.run_id, exc
        result["error"] = str(exc)
    except RunInterrupted as exc:
        _INTERRUPTED[:] = [exc]
        (logger.warning if os.environ.get(FLOW_RUN_ID) else logger.info)("watch - %s", exc)  # --once: the CLI says it
        return Cancelled(message=str(exc))
    except BusyError as exc:  # a manual run holds the data dir: this look is skipped, the next one retries
        result["error"] = str(exc)
        logger.warning("watch - %s", exc)
        return result
    result["run_id"] = run_id
    staging = connect_readonly(settings.staging_path)
    try:
        files = run_files(staging, run_id)
    finally:
        staging.close()
    for row in files:
        if row["status"] == "failed":
            # Said once, here: the next runs leave these bytes alone (split_new) until the file changes
            logger.error("watch - %s failed: %s; %s", row["path"], row["detail"], WAITING)
            result["failed"].append({"path": row["path"], "error": row["detail"]})
        else:
            if row["status"] == "partial":
                tell("watch - %s arrived only partly: %s; %s", row["path"], row["detail"], WAITING)
            said = {"path": row["path"], "status": row["status"]}
            if row["status"] == "ingested" and row["detail"]:  # repaired on the way (invalid UTF-8 replaced with
                said["notes"] = row["detail"]  # U+FFFD): `run` notes it, and the tick said only "ingested"
            if row["quarantined"]:  # lines set aside (bad JSONL lines): `run` says so, the tick said only "ingested"
                said["quarantined"] = int(row["quarantined"])
            result["ingested"].append(said)
    if stage_failed is not None and not (stage_failed.stage == "ingest" and result["failed"]):
        logger.error("watch - %s", stage_failed)  # ingest stops only when no dump arrived: their lines say why
    elif stage_failed is None and not result["failed"]:  # the failures' own lines say how those ended
        _say(logger, "watch - run %s succeeded: %d dump(s) ingested", run_id, len(result["ingested"]))
    return result


def _say(run_logger: Any, message: str, *args: object) -> None:
    """`message` at INFO on the run's logger, past that logger's level: in a served tick Prefect's console shows the
    run's warnings only, and a dump picked up, or the run that ingested it, is news all the same. The handlers still
    decide, as for any record: Prefect's API gets it, a served tick's console shows it as the run's other lines
    ("Flow run 'name' - watch - ..."), and the CLI's handler (`serve --once`) only with --verbose, as before."""
    logger = run_logger.logger
    _, kwargs = run_logger.process(message, {})  # the flow run's name and id, as its own lines carry them
    logger.handle(logger.makeRecord(logger.name, logging.INFO, __file__, 0, message, args, None, extra=kwargs["extra"]))


WAITING = "not tried again until the file changes (a fixed copy is read at the next tick)"


def run_once(watch_dir: Path, settings: Settings, force_format: str | None = None) -> dict[str, Any]:
    """One watch run on the ephemeral API (what `chatmem serve --once` does)."""
    # Before the flow starts Prefect's ephemeral server: through the guard, so that Ctrl-C or SIGTERM cannot
    # kill it under the run and it does not outlive this process (run_pipeline would install it too late).
    if not early_api.active():  # a server started early (flows/early_api.py) runs guarded already
        server_guard.install()
    _INTERRUPTED.clear()
    early_api.wait_ready()
    with without_heartbeats():
        state: State[Any] = watch_folder(  # type: ignore[assignment]  # a sync flow: the state itself
            watch_dir=str(watch_dir.absolute()),
            data_dir=str(settings.data_dir.absolute()),
            force_format=force_format,
            return_state=True,
        )
    if state.is_cancelled() and _INTERRUPTED:
        raise _INTERRUPTED.pop()  # exit 130 or 143, with the line that says where to resume
    return dict(state.result())


def check_schedule(watch_dir: Path, cron: str) -> None:
    """ConfigError (exit 2) now for a bad --cron or --watch, rather than a failed run in 15 minutes."""
    from prefect.client.schemas.schedules import CronSchedule

    try:
        CronSchedule(cron=cron)
    except ValueError as exc:
        raise ConfigError(f"--cron {cron!r} is not a valid cron expression") from exc
    if not watch_dir.is_dir():
        raise ConfigError(f"--watch {watch_dir}: not a directory")


def serve_forever(
    watch_dir: Path,
    settings: Settings,
    cron: str,
    force_format: str | None = None,
    announce: Callable[[str], object] = print,
) -> None:
    """Serve `watch_folder` as a deployment on `cron` until interrupted (SIGINT or SIGTERM).

    `announce` receives one line once the deployment's API is up (the CLI prints it to stderr). A second
    `serve` on the same data dir waits `pipeline.lock_wait_s` seconds for the first, then refuses (BusyError).
    """
    check_schedule(watch_dir, cron)
    with serve_lock(settings.data_dir, wait_s=settings.pipeline.lock_wait_s), ctrl_c_seen() as seen:
        _serve(watch_dir, settings, cron, force_format, announce)  # one server per data dir (the lock)
    if seen:
        raise ServeStopped(
            f"serve stopped by Ctrl-C; start it again with: {_serve_command(watch_dir, settings, cron, force_format)}"
        )


def _serve_command(watch_dir: Path, settings: Settings, cron: str, force_format: str | None) -> str:
    """The command line that serves the same folder into the same data dir on the same schedule (quoted for a
    shell): a restart hint without --data-dir would serve into the default .chatmem."""
    words = ["chatmem", "--data-dir", str(settings.data_dir), "serve", "--cron", cron, "--watch", str(watch_dir)]
    return shlex.join(words + (["--format", force_format] if force_format else []))


class ServeStopped(RunInterrupted):
    """`serve` ended by Ctrl-C: exit 130, as for `chatmem run`."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_CODE)


INTERRUPT_LOG = "Received KeyboardInterrupt"  # what Prefect's Flow.serve logs (prefect.flows, INFO) as it returns


@contextlib.contextmanager
def ctrl_c_seen() -> Iterator[list[bool]]:
    """Whether Prefect's `Flow.serve` ended on Ctrl-C during the block: it catches the KeyboardInterrupt, logs
    INTERRUPT_LOG on `prefect.flows` and returns as after any stop. Its log record is the one trace left;
    replacing the SIGINT handler (asyncio's, which cancels the runner so that it shuts down in order) or setting
    a signal wakeup fd would change how the runner stops. The record is let through only where it was shown."""
    logger = logging.getLogger("prefect.flows")
    shown = logger.getEffectiveLevel()
    seen: list[bool] = []

    def note(record: logging.LogRecord) -> bool:
        if str(record.msg).startswith(INTERRUPT_LOG):
            seen.append(True)
        return record.levelno >= shown

    level = logger.level
    logger.setLevel(min(shown, logging.INFO))
    logger.addFilter(note)
    try:
        yield seen
    finally:
        logger.removeFilter(note)
        logger.setLevel(level)


def _serve(
    watch_dir: Path, settings: Settings, cron: str, force_format: str | None, announce: Callable[[str], object]
) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    server: subprocess.Popen[bytes] | None = None
    api_url = os.environ.get("PREFECT_API_URL")
    if not api_url:
        server, api_url = start_local_server()
    announce(f"serving {DEPLOYMENT_NAME}: {watch_dir} on {cron!r}, Prefect API {api_url}; stop with Ctrl-C")
    os.environ["PREFECT_API_URL"] = api_url  # the runner's flow-run subprocesses inherit it
    try:
        with temporary_settings(updates={PREFECT_API_URL: api_url}):
            watch_folder.serve(
                name=DEPLOYMENT_NAME,
                cron=cron,
                parameters={
                    "watch_dir": str(watch_dir.absolute()),
                    "data_dir": str(settings.data_dir.absolute()),
                    "force_format": force_format,
                },
                print_starting_message=False,
                limit=1,  # a long ingest must not overlap the next tick's run over the same dumps
                # The runner imports the flow by module in its subprocesses: chatmem is an installed package.
                entrypoint_type=_module_entrypoint(),
            )
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()


def _module_entrypoint() -> Any:
    from prefect.types.entrypoint import EntrypointType

    return EntrypointType.MODULE_PATH


def start_local_server(timeout_s: float = 120.0) -> tuple[subprocess.Popen[bytes], str]:
    """`prefect server start` on a free loopback port; returns the process and its API URL once healthy."""
    port = local_api.free_port()
    command = [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "PREFECT_UI_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    # Through the guard: a `chatmem serve` killed with SIGKILL does not leave its Prefect server behind. In a
    # session of its own: a terminal's Ctrl-C reaches `serve` (and its flow run), which stop in order while the
    # server still answers, and then stop the server; were it in the terminal's group, it died first, and the
    # runner's shutdown met a dead API (ConnectError tracebacks, `serve` left running).
    server = subprocess.Popen(server_guard.guarded(command), env=env, stdout=subprocess.DEVNULL, start_new_session=True)
    api_url = f"http://127.0.0.1:{port}/api"
    try:
        local_api.wait_healthy(server, api_url, timeout_s)
    except local_api.NotReady as failure:
        if failure.returncode is not None:
            raise ChatmemError(f"the local Prefect server exited with code {failure.returncode}") from None
        server.terminate()
        raise ChatmemError(f"the local Prefect server did not answer on {api_url} within {timeout_s:.0f} s") from None
    log.info("serve - Prefect server on %s", api_url)
    return server, api_url
