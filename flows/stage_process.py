"""A stage run in a process of its own: what it held is given back to the system when it ends.

    outcome = run_in_own_process(stage, ctx, settings)   # flows/stage_runner.py, for a stage declared own_process,
                                                         # when its run is large (flows/stage_size.py)

Why: a stage's working set does not all leave the process when the stage returns. The cluster stage's numba
kernels, LLVM's compiled code and the blocks UMAP and HDBSCAN allocated stay mapped (at 250k messages 1.4 GiB is
still resident after the stage, of which ~0.5 GiB is numba and the imports, and malloc_trim returns none of it);
the cues stage's heap ends fragmented likewise. In one process, the load and the recall index built beside it
come on top of that (the 1M first build's peak: 7.4 GiB, of which ~3.9 GiB was left by the stages before).

How: the stage's `run(ctx)` is called in a spawned child (not forked: the runner's process has threads), with
connections of its own to the same two databases; the runner keeps the ledger in its own process, as before.
The child sends back the stage's Outcome, or its exception (a chatmem error keeps its class, so the CLI's line
and exit code are the same as in one process). What crosses: the settings, the run's ids and the progress
factory (module functions), never a connection.
- Ctrl-C reaches the whole process group: the child ignores it, the runner's process handles it
  (flows/interrupt.py) and stops the child on its way out; the child's open transaction is rolled back by
  SQLite, as an interrupted stage's is in one process.
- A runner killed outright (kill -9) takes the child with it within a second (`watch_parent`): no orphan goes
  on writing a run that is being resumed.
- A child that dies without a word (the kernel's OOM killer) is a StageError naming its exit status.
- Logging is set up in the child as the CLI set up the runner (flows/log_setup.py), secrets redacted alike; its
  records do not reach Prefect's UI (the stage's summary line is the runner's and does).
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Any

from clients.process_batches import watch_parent
from clients.stage import Outcome, StageContext
from contracts.errors import StageError
from contracts.redact import install_log_redaction, known_secrets, remember_secret
from contracts.settings import Settings

EXIT_WAIT_S = 10.0  # how long a child that sent its result gets to exit before it is killed (its writes are done)
HELD = {signal.SIGINT, signal.SIGTERM}  # the runner's to handle; blocked in the child until it ignores them
_LIVE: set[Any] = set()  # the stage processes running now (kill_stage_processes)


class StageProcessDied(StageError):
    """The stage's process ended without sending its outcome (killed, out of memory): a StageError like any stage
    failure (recorded with its cause, the CLI's line with the re-run command, `serve --watch` carries on)."""


def run_in_own_process(entry: str, ctx: StageContext, settings: Settings) -> Outcome:
    """`entry`'s run(ctx) in a spawned child; `ctx` without its connections and with undeclared sections hidden
    again there (`settings` is the run's whole Settings: what pickles)."""
    from flows.log_setup import verbose_now

    spawn = multiprocessing.get_context("spawn")
    receive, send = spawn.Pipe(duplex=False)
    fields = {name: getattr(ctx, name) for name in _SHIPPED}
    child = spawn.Process(
        target=_child,
        args=(send, os.getpid(), entry, fields, settings, verbose_now(), known_secrets()),
        name=f"chatmem-stage-{ctx.stage}",
    )
    try:
        with _signals_held():  # the child starts with them blocked: a Ctrl-C during its start-up is not its own
            child.start()
        _LIVE.add(child)
        send.close()  # ours is the child's: a child that dies closes the pipe, and recv() says so
        try:
            kind, payload = receive.recv()
        except EOFError:
            child.join()
            raise StageProcessDied(
                ctx.stage,
                ctx.run_id,
                f"its process ended without a result (exit status {child.exitcode}"
                f"{', killed by the system: out of memory?' if child.exitcode == -signal.SIGKILL else ''})",
            ) from None
        child.join(EXIT_WAIT_S)  # what it wrote is committed and its connections closed: it need not linger
    finally:
        _stop(child, bars=ctx.progress is not None)
        _LIVE.discard(child)
        send.close()
        receive.close()
    if kind == "error":
        error, where = payload
        raise error from ChildTraceback(where)
    outcome: Outcome = payload
    return outcome


_SHIPPED = ("stage", "run_id", "stage_run_id", "progress", "exports", "force_format", "force", "finish")


def _stop(child: Any, bars: bool = False) -> None:
    """A child still running when the runner leaves (Ctrl-C, SIGTERM, an error here): killed, then reaped. SIGKILL
    because it ignores SIGTERM; what it had not committed SQLite rolls back, as for any killed writer. With `bars`,
    the line its progress bar was drawn on is cleared: a killed child cannot clear it, and the runner's next line
    would be written after the half-drawn bar."""
    if child.is_alive():
        child.kill()
        child.join()
        if bars:
            _clear_bar_line(sys.stderr)


def _clear_bar_line(stream: Any) -> None:
    try:
        if stream.isatty():
            stream.write("\r\x1b[K")  # back to the line's start, erase to its end
            stream.flush()
    except (OSError, ValueError):  # a closed or detached stream: nothing to clear
        pass


def kill_stage_processes() -> None:
    """Kill every stage process now, unreaped: the runner's hard way out (flows/interrupt.py's os._exit) leaves no
    child writing on for the second its `watch_parent` takes to notice."""
    for child in list(_LIVE):
        child.kill()


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM blocked in this thread while it starts a child, which inherits the mask: one that comes
    while the child imports is held there, and dropped once it ignores them (in the runner it is handled as ever,
    by another thread or right after)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


# --- in the child ----------------------------------------------------------------------------------------


def _child(
    send: Connection,
    parent: int,
    entry: str,
    fields: dict[str, Any],
    settings: Settings,
    verbose: bool | None,
    secrets: list[str],
) -> None:
    # Ctrl-C and SIGTERM to the process group are the runner's (it stops this process); blocked since the start
    # (_signals_held), ignored from here: one that came meanwhile is dropped
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)
    watch_parent(parent)  # exits when the runner is gone
    # The secrets the runner knows: an unpickled Settings ran none of the validators that remember them
    for secret in secrets:
        remember_secret(secret)
    install_log_redaction()
    if verbose is not None:
        from flows.log_setup import setup_logging

        setup_logging(verbose)
    from clients.stage import declared_only
    from flows.progress import bars_lock_threads
    from flows.registry import spec
    from staging.archive import open_archive
    from staging.ledger import open_staging

    bars_lock_threads()  # a library's tqdm (UMAP's) would make a semaphore that the kill on Ctrl-C leaves behind
    stage = spec(fields["stage"])
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        ctx = StageContext(
            settings=declared_only(settings, stage.name, stage.settings_sections),
            archive=archive,
            staging=staging,
            **fields,
        )
        module = importlib.import_module(entry)
        outcome = module.run(ctx)
        reply: tuple[str, Any] = ("ok", outcome)
    except BaseException as exc:  # every failure goes back to the runner, which records it
        reply = ("error", (_portable(exc), "".join(traceback.format_exception(exc))))
    finally:
        archive.close()
        staging.close()
    send.send(reply)
    send.close()


class ChildTraceback(Exception):
    """The stage's traceback in its own process, as the cause of the exception the runner raises (a bug's
    traceback then shows where it happened, as concurrent.futures does for its workers)."""


def _portable(exc: BaseException) -> BaseException:
    """The exception itself when it survives pickling (a chatmem error, sqlite3's, OSError), else a RuntimeError
    that names its class and says what it said (the runner records it as a failure like any other). Its cause
    does not cross: the runner raises it from the child's traceback instead."""
    copy: BaseException = RuntimeError(f"{type(exc).__name__}: {exc}")
    try:
        back = pickle.loads(pickle.dumps(exc))
        if isinstance(back, BaseException) and str(back) == str(exc):
            copy = back
    except Exception:  # anything that does not round-trip is described instead
        pass
    return copy
