"""Ctrl-C (or SIGTERM) during a run: stop within seconds, say in one line where and how to resume, leave no
process behind.

    with interruptible(settings, run_id): ...     around one pipeline run, in the main thread

The first SIGINT raises KeyboardInterrupt in the main thread, as Python does: every stage records it in the
ledger (as `interrupted`) on its way out, at whatever statement it was on; SQLite rolls back a half-written
batch, and batches are idempotent upserts, so the resume re-does at most one batch. Prefect's API server is
out of the signal's reach (flows/server_guard.py), so the flow engine reports the crash at once instead of
retrying a dead server. The block then ends with `RunInterrupted`: "interrupted in stage X of run R; resume
with: ...", exit code 130.

Before that block (the checks before Prefect, Prefect's import, the wait for another run's lock) nothing is
recorded yet: `before_the_run` turns Ctrl-C or SIGTERM there into the same kind of line ("interrupted by Ctrl-C
before the run started: nothing was run; ...") and the same exit codes, rather than click's "Aborted!" and exit 1.
A library can swallow that KeyboardInterrupt (Prefect's import does, at some statements): the signal is then
delivered again each REDELIVER_S or two until the block ends, so that one `kill -INT` still stops the command.

SIGTERM (`kill PID`, systemd, `docker stop`) takes the same way, with exit code 143 and "interrupted by
SIGTERM" in the line. While a flow runs, Prefect's engine puts a SIGTERM handler of its own in place (it
raises TerminationSignal, which every stage would record as a failure, and then re-kills the process with the
default action: exit -15, nothing said); `_take_sigterm` points that swap at this module's handler. In a
deployment run of `chatmem serve` SIGTERM stays Prefect's: it is the runner's cancel; in `serve --once`, whose
flow runs in the user's process, it is ours.

A stage can sit in native code (an ONNX session, a numba kernel) where the KeyboardInterrupt waits for it.
A watchdog thread, woken by the signal itself through `signal.set_wakeup_fd`, gives the orderly way GRACE_S
seconds; then it records the interruption with a connection of its own, prints the line, stops the Prefect
server and the local graph server the run started (clients/graph_server.py `stop_for_exit`) and leaves with
`os._exit(130)`. A second Ctrl-C does that at once.
"""

from __future__ import annotations

import _thread
import contextlib
import importlib
import logging
import os
import select
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from contracts.errors import ChatmemError
from contracts.settings import Settings
from flows.hints import chosen_data_dir, with_data_dir
from flows.server_guard import stop_servers
from staging.liveness import current_stage, mark_interrupted, resume_command, run_format, unfinished_stages

GRACE_S = 5.0
REDELIVER_S = 1.0  # before the run: a signal no handler saw end the block in this time is sent again
EXIT_CODE = 130  # 128 + SIGINT, what shells report for a job stopped by Ctrl-C
EXIT_CODES: dict[int, int] = {signal.SIGINT: EXIT_CODE, signal.SIGTERM: 128 + signal.SIGTERM}  # SIGTERM: 143
FLOW_RUN_ID = "PREFECT__FLOW_RUN_ID"  # in the environment of a flow-run process that Prefect's runner started
# The line for a run stopped before anything of it was recorded (flows/cli.py's _no_prefect_left keys on it)
NOT_STARTED = "interrupted {by} before the run started: nothing was run or recorded"
REARM = 0xFF  # a byte no signal number takes, written to the wakeup pipe to re-deliver a swallowed Ctrl-C


class RunInterrupted(ChatmemError):
    """The run was stopped by Ctrl-C or SIGTERM; the message says where and how to resume."""

    exit_code = EXIT_CODE

    def __init__(self, message: str, exit_code: int = EXIT_CODE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class _Interruption:
    def __init__(self, settings: Settings, run_id: str, stages: list[str]) -> None:
        self.settings = settings
        self.run_id = run_id
        self.stages = stages
        # the --data-dir the resume command says: read now, in click's thread (the watchdog's forced line is not)
        self.data_dir = chosen_data_dir()
        self.signals = 0
        self.signum: int = signal.SIGINT  # the first signal: SIGINT (Ctrl-C) or SIGTERM
        self.watched = {signal.SIGINT}  # and SIGTERM when this run handles it (see _take_sigterm)
        self.signalled_at: str | None = None  # when the first Ctrl-C came (ledger time format)
        self.finished = threading.Event()
        self.hard_exit = threading.Lock()  # one thread does the hard exit
        self.rearmed = False
        self.previous_hook = sys.unraisablehook
        self.write_fd = -1

    def on_unraisable(self, unraisable: Any) -> None:
        """The KeyboardInterrupt landed where Python cannot raise it (a weakref callback, a __del__): Python
        would print "Exception ignored ..." and drop it. Deliver it again instead, where it can propagate."""
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and self.signals == 1:
            self.rearmed = True
            # The watchdog re-delivers it: from its thread it trips on the main thread's next instruction, not
            # inside this hook (and writing one byte to a pipe never waits, unlike starting a thread).
            with contextlib.suppress(OSError):
                os.write(self.write_fd, bytes([REARM]))
            return
        self.previous_hook(unraisable)

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        """SIGINT and SIGTERM alike: the first raises KeyboardInterrupt, the second exits at once."""
        if self.rearmed:  # the first Ctrl-C again, after a place that swallowed it (see on_unraisable)
            self.rearmed = False
            raise KeyboardInterrupt(self.reason())
        self.signals += 1
        if self.signals == 1:
            self.signum = signum
            self.signalled_at = datetime.now(UTC).isoformat()
        # From here on the run says one line: libraries that log the exception as it passes (Optuna logs a
        # failed trial with its traceback) would bury it.
        logging.disable(logging.CRITICAL)
        if self.signals == 1:
            # with its reason: every stage records `KeyboardInterrupt: <message>` in the ledger on its way out
            raise KeyboardInterrupt(self.reason())
        self.exit_now()

    def watch(self, read_fd: int) -> None:
        """Watchdog: woken by the signal byte; gives the orderly exit GRACE_S seconds, then exits itself.
        A REARM byte asks it to deliver the swallowed first Ctrl-C again (on_unraisable)."""
        deadline: float | None = None
        while not self.finished.is_set():
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                ready, _, _ = select.select([read_fd], [], [], timeout)
                data = os.read(read_fd, 64) if ready else b""
            except (OSError, ValueError):
                return
            if self.finished.is_set():
                return
            if not ready:  # the grace period is over and the run has not stopped
                self.exit_now(f"forced: the stage did not stop within {GRACE_S:.0f} s")
                return
            if not data:  # the pipe was closed: the run ended
                return
            first = next((byte for byte in data if byte in self.watched), None)
            if first is not None and deadline is None:
                deadline = time.monotonic() + GRACE_S
                if self.signals == 0:  # the handler has not run (the main thread sits in native code holding
                    self.signum = first  # the GIL): the byte says which signal, for the line and the exit code
            if REARM in data:
                time.sleep(0.05)
                _thread.interrupt_main(signal.SIGINT)

    def message(self) -> str:
        """The one line: where the run stopped and the command that resumes it (read from the ledger). A run the
        ledger does not hold (stopped in Prefect's start-up, before the flow recorded it; staging.db may not even
        exist) has nothing to resume: the line says so, as before the run started."""
        stage, status, left, recorded, fmt = None, None, list(self.stages), False, None
        with contextlib.suppress(sqlite3.Error, OSError, ChatmemError):
            conn = sqlite3.connect(f"file:{self.settings.staging_path}?mode=ro", uri=True, timeout=2.0)
            try:
                recorded = conn.execute("SELECT 1 FROM runs WHERE id = ?", (self.run_id,)).fetchone() is not None
                fmt = run_format(conn, self.run_id) if recorded else None
                stage = current_stage(conn, self.run_id)
                if stage is not None:
                    row = conn.execute(
                        "SELECT status FROM stage_runs WHERE run_id = ? ORDER BY id DESC LIMIT 1", (self.run_id,)
                    ).fetchone()
                    status = None if row is None else str(row[0])
                left = unfinished_stages(conn, self.run_id) or left
            finally:
                conn.close()
        if not recorded and stage is None:
            return f"{NOT_STARTED.format(by=self.by())}; run the same command again"
        if stage and status in ("succeeded", "skipped"):  # it finished; the signal came before the next began
            where = f"between stage {stage} and {left[0]} " if left and left[0] != stage else f"after stage {stage} "
        else:
            where = f"in stage {stage} " if stage else "before its first stage "
        how = f"interrupted {self.by()} " if self.signum == signal.SIGTERM else "interrupted "
        resume = with_data_dir(resume_command(self.run_id, left, self.stages, fmt), self.data_dir)
        return f"{how}{where}of run {self.run_id}; resume with: {resume}"

    def by(self) -> str:
        return "by SIGTERM" if self.signum == signal.SIGTERM else "by Ctrl-C"

    def reason(self) -> str:
        return f"stopped {self.by()}"

    def record(self, after_failure: bool = False) -> None:
        """Mark what this process left `running` as interrupted (the stages record themselves when they can);
        `after_failure`: also the rows a library's failure after the Ctrl-C marked failed since the signal."""
        with contextlib.suppress(sqlite3.Error, OSError):
            # mode=rw: never create staging.db here (a run stopped before it existed left a 0-byte file that every
            # later command, the printed resume command included, refused)
            path = self.settings.staging_path
            conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=2.0, isolation_level=None)
            try:
                since = self.signalled_at if after_failure else None
                stage = current_stage(conn, self.run_id)
                mark_interrupted(conn, self.run_id, stage, failed_since=since, by=self.by().removeprefix("by "))
            finally:
                conn.close()

    def exit_now(self, how: str = "stopped at once") -> None:
        """The hard way out: record, say where, stop Prefect's server and the run's graph server, exit. `how`
        ends the line: "stopped at once" for a second signal; after the grace period, that it was forced."""
        if not self.hard_exit.acquire(blocking=False):
            return
        stage_processes = sys.modules.get("flows.stage_process")  # no import here: the main thread may hold its lock
        if stage_processes is not None:
            with contextlib.suppress(Exception):
                stage_processes.kill_stage_processes()  # nothing of a stage is written after the record
        # with the rows failed since the first signal: a library's failure it caused (the neo4j driver's BufferError)
        # is recorded before the orderly way turns it into the interruption, and the second signal can come between
        self.record(after_failure=True)
        with contextlib.suppress(Exception):
            sys.stderr.write(f"error: {self.message()} ({how})\n")
            sys.stderr.flush()
        with contextlib.suppress(Exception):
            stop_servers(timeout_s=2.0)
        graph_servers = sys.modules.get("clients.graph_server")  # no import here either (see above)
        if graph_servers is not None:
            with contextlib.suppress(Exception):  # the local graph server the run started: no `finally` stops it now
                graph_servers.stop_for_exit(timeout_s=3.0)
        os._exit(EXIT_CODES.get(self.signum, EXIT_CODE))


@contextmanager
def interruptible(settings: Settings, run_id: str, stages: list[str]) -> Iterator[None]:
    """Handle Ctrl-C for one run (see the module docstring). Outside the main thread it does nothing: signals
    are delivered there only (a scheduled run of `chatmem serve` is stopped with its server)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    state = _Interruption(settings, run_id, stages)
    read_fd, write_fd = os.pipe()
    state.write_fd = write_fd
    os.set_blocking(write_fd, False)
    old_wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    handler = state.on_signal  # one bound method: Prefect compares handlers by identity
    old_handler = signal.signal(signal.SIGINT, handler)
    untake = _take_sigterm(handler, state)
    sys.unraisablehook = state.on_unraisable
    watchdog = threading.Thread(target=state.watch, args=(read_fd,), name="chatmem-interrupt", daemon=True)
    watchdog.start()
    pending = _take_over()  # a Ctrl-C before the run that a library swallowed: the run stops at once, recorded
    try:
        if pending is not None:
            handler(pending, None)
        yield
    except KeyboardInterrupt:
        state.finished.set()
        state.record()
        raise RunInterrupted(state.message(), EXIT_CODES[state.signum]) from None
    except Exception:
        if not state.signals:
            raise
        # The KeyboardInterrupt surfaced inside a library that then failed on its own cleanup (the neo4j driver
        # interrupted in a socket read raises BufferError as it resets): the run was still stopped by Ctrl-C.
        state.finished.set()
        state.record(after_failure=True)
        raise RunInterrupted(state.message(), EXIT_CODES[state.signum]) from None
    finally:
        state.finished.set()
        logging.disable(logging.NOTSET)
        sys.unraisablehook = state.previous_hook
        untake()
        signal.signal(signal.SIGINT, old_handler)
        signal.set_wakeup_fd(old_wakeup)
        os.close(write_fd)  # wakes the watchdog, which then ends
        watchdog.join(1.0)
        os.close(read_fd)


def take_sigint() -> None:
    """A process started with SIGINT ignored (a background job of a non-interactive shell: `chatmem run ... &` in
    a script) would ignore `kill -INT PID` too: `run` and `serve` put Python's default handler back, so that one
    SIGINT stops them as docs/faults.md says ("Faults"). A handler someone installed on purpose is left alone."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@dataclass(slots=True)
class _PreRun:
    """The main thread's open `before_the_run` block: the signals it took, and whether a run's `interruptible` has
    taken over since (from then on a signal is that handler's to act on, and none is sent again)."""

    got: list[int] = field(default_factory=list)
    taken_over: threading.Event = field(default_factory=threading.Event)


_PRE_RUN: list[_PreRun] = []  # at most one: the main thread's


def _take_over() -> int | None:
    """Called by `interruptible` as it takes over: marks the open `before_the_run` block as taken over and returns
    the signal it took that did not stop it (a library swallowed the KeyboardInterrupt), for the run to act on."""
    if not _PRE_RUN:
        return None
    pre_run = _PRE_RUN[-1]
    pending = pre_run.got[0] if pre_run.got and not pre_run.taken_over.is_set() else None
    pre_run.taken_over.set()
    return pending


@contextmanager
def before_the_run() -> Iterator[None]:
    """Ctrl-C or SIGTERM before `interruptible` takes over (see the module docstring): RunInterrupted, exit 130 or
    143, "nothing was run". Inside the block a run's own `interruptible` handles both and restores this one.

    A library may swallow the KeyboardInterrupt here: Prefect's import lands in pydantic's class set-up, which
    wraps it in a RuntimeError that Prefect's plugin start-up catches, and the command then waited for another
    run's lock as if no signal had come. A thread delivers the signal again (`_redeliver`) until the block
    ends; a KeyboardInterrupt a library turned into an error of its own ends the block the same way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pre_run = _PreRun()
    got = pre_run.got  # the signals taken, the first first
    ended = threading.Event()
    disabled = logging.root.manager.disable

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if ended.is_set():  # a signal delivered again just as the block ended: it is stopping already
            return
        if (got or pre_run.taken_over.is_set()) and sys.exc_info()[1] is not None:
            # sent again while the first one's stop is unwinding, this block's or the run's (its handler took the
            # first and is gone: its line is on the way out, the graph server it started being stopped): let it finish
            return
        got.append(signum)
        logging.disable(logging.CRITICAL)  # one line, not the traceback of a library that logs what it caught
        raise KeyboardInterrupt("stopped by SIGTERM" if signum == signal.SIGTERM else "stopped by Ctrl-C")

    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, on_signal)}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # a handler of someone's own is left alone
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, on_signal)
    # started here, not in the handler: starting a thread takes locks the interrupted main thread may hold
    watcher = threading.Thread(
        target=_redeliver, args=(pre_run, ended, on_signal), name="chatmem-before-run", daemon=True
    )
    _PRE_RUN.append(pre_run)
    watcher.start()
    try:
        yield
    except BaseException as exc:
        ended.set()
        # the KeyboardInterrupt itself, or one a library wrapped in an error of its own (pydantic: RuntimeError,
        # PydanticSerializationError) before any run took over; chatmem's own errors say what they say
        if isinstance(exc, KeyboardInterrupt) and pre_run.taken_over.is_set():  # the run's handler had ended
            by = "SIGTERM" if got and got[-1] == signal.SIGTERM else "Ctrl-C"
            raise RunInterrupted(
                f"interrupted by {by} after the run ended: what it did is recorded (chatmem staging runs)",
                EXIT_CODES[signal.SIGTERM if by == "SIGTERM" else signal.SIGINT],
            ) from None
        if isinstance(exc, KeyboardInterrupt) or (got and not pre_run.taken_over.is_set() and _foreign(exc)):
            signum = got[0] if got else signal.SIGINT
            by = "SIGTERM" if signum == signal.SIGTERM else "Ctrl-C"
            raise RunInterrupted(
                f"{NOT_STARTED.format(by='by ' + by)}; run the same command again",
                EXIT_CODES[signum],
            ) from None
        raise
    finally:
        ended.set()
        _PRE_RUN.remove(pre_run)
        watcher.join()  # no signal is sent after this; one sent before finds `ended` set (on_signal)
        logging.disable(disabled)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _foreign(exc: BaseException) -> bool:
    """An error not of chatmem's own making (nor SystemExit): what a library may have made of a KeyboardInterrupt."""
    return isinstance(exc, Exception) and not isinstance(exc, ChatmemError)


def _redeliver(pre_run: _PreRun, ended: threading.Event, ours: Callable[[int, FrameType | None], None]) -> None:
    """Until `ended`: when a signal came and no other reached the handler for a whole REDELIVER_S since, send the
    first again to the main thread (a real signal: it also wakes a sleep there). Unswallowed, the block ends well
    within that time, or its stop is still unwinding (the handler then lets it finish); swallowed, the run would
    otherwise go on as if none had come. Only while `before_the_run`'s handler is in place and no run has taken
    over: a run's `interruptible` acts on a swallowed signal itself as it starts (`_take_over`), and a second
    signal sent to it would be its "stop at once"."""
    main = threading.main_thread().ident
    got = pre_run.got
    seen = 0
    while not ended.wait(REDELIVER_S):
        if pre_run.taken_over.is_set():
            return
        if got and len(got) == seen and main is not None and signal.getsignal(got[0]) is ours:
            signal.pthread_kill(main, got[0])
        seen = len(got)


def _take_sigterm(handler: Callable[[int, FrameType | None], None], state: _Interruption) -> Callable[[], None]:
    """SIGTERM to `handler` for the run, and Prefect's own swap pointed at it too: while a flow runs, its engine
    installs `prefect.utilities.engine._prefect_sigterm_handler` for SIGTERM (restoring the previous handler
    after), and that name is made ours for the run. Not in a deployment run of `chatmem serve` (a process the
    runner started for one flow run): there SIGTERM is the runner's cancel, which Prefect's engine handles. A
    flow that runs this run in the user's own process (`serve --once`) is no such run: SIGTERM is ours there.
    Returns the undo."""
    engine = importlib.import_module("prefect.utilities.engine") if "prefect" in sys.modules else None
    bridge = getattr(engine, "_prefect_sigterm_handler", None)
    deployment_run = bool(os.environ.get(FLOW_RUN_ID))  # set by Prefect's runner in a flow-run process only
    if bridge is not None and signal.getsignal(signal.SIGTERM) is bridge and deployment_run:
        return lambda: None
    previous = signal.signal(signal.SIGTERM, handler)
    state.watched.add(signal.SIGTERM)
    if bridge is not None:
        engine._prefect_sigterm_handler = handler  # type: ignore[union-attr]

    def undo() -> None:
        if bridge is not None:
            engine._prefect_sigterm_handler = bridge  # type: ignore[union-attr]
        signal.signal(signal.SIGTERM, previous)

    return undo
