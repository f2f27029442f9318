"""One writer per data dir: an advisory lock (flock) on `<data_dir>/chatmem.lock`, holding the run id and pid.

    with data_dir_lock(data_dir, run_id, wait_s=0): ...    write; BusyError if another run holds it
    with serve_lock(data_dir, wait_s=0): ...                one `chatmem serve --watch` per data dir

A second `chatmem run` (or `stage`, or a watch-folder run) on the same data dir waits up to `wait_s` seconds
for the holder and then refuses in one line that names the run holding it and its pid. The kernel drops the
lock when its process dies, however it dies (SIGKILL included), so a stale lock file never blocks anyone: its
text is only a description of the last holder. Read-only commands (`staging runs`, `archive stats`,
`concepts`, ...) never take the lock: SQLite's WAL lets them read while a run writes.

`chatmem serve --watch` holds a second lock, `<data_dir>/serve.lock`, for as long as it serves: two servers on
one data dir would start two Prefect servers that migrate one database at once (a 190-line "duplicate column
name" traceback) and schedule the same dumps twice. The second waits `wait_s` and then refuses in one line
naming the first, as a second run does. Its watch runs still take the write lock, run by run.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from contracts.errors import BusyError, StateError

LOCK_NAME = "chatmem.lock"
SERVE_LOCK_NAME = "serve.lock"
_POLL_S = 0.2


def lock_path(data_dir: Path, name: str = LOCK_NAME) -> Path:
    return data_dir / name


def holder(data_dir: Path, name: str = LOCK_NAME) -> dict[str, object] | None:
    """What the lock file says about its last holder (run id, pid, host, since), or None."""
    try:
        return dict(json.loads(lock_path(data_dir, name).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def describe_holder(info: dict[str, object] | None) -> str:
    if not info:
        return "another process"
    who = f"run {info['run_id']}" if info.get("run_id") else f"`chatmem {info.get('command') or 'run'}`"
    return f"{who} (pid {info.get('pid')} on {info.get('host')}, since {info.get('since')})"


def _busy_message(data_dir: Path) -> str:
    return (
        f"{data_dir} is in use by {describe_holder(holder(data_dir))}: one run writes to a data dir"
        f" at a time; wait for it (or set CHATMEM_PIPELINE__LOCK_WAIT_S to wait), then re-run"
    )


# Write locks this process holds for a whole command (`hold_for_command`), by lock path, with the command: its
# runs' own `data_dir_lock` re-enters them instead of asking again (an flock asked again on a second file
# description would refuse the process that holds it), and gives the command back its description after the run
_HELD: dict[Path, str] = {}


@contextmanager
def hold_for_command(data_dir: Path, command: str, *, wait_s: float = 0.0) -> Iterator[None]:
    """Hold the write lock for a whole command, from before it starts Prefect's API server on the data dir's
    database (flows/early_api.py) to its end; BusyError after `wait_s` as `data_dir_lock` raises it. A second
    `chatmem run` started while the first imported used to start its own server on the same prefect/ database
    and refuse only later, at its run's lock: its server's migration, racing the first's, broke the first's
    server ("No such constraint: 'fk_flow_run__deployment_id__deployment'") and the first run waited 240 s
    and ingested nothing. The runs inside re-enter the lock (`data_dir_lock`) and name themselves in it."""
    path = lock_path(data_dir).absolute()
    if path in _HELD:
        yield
        return
    with _flock(data_dir, LOCK_NAME, {"run_id": None, "command": command}, wait_s, lambda: _busy_message(data_dir)):
        _HELD[path] = command
        try:
            yield
        finally:
            _HELD.pop(path, None)


@contextmanager
def data_dir_lock(data_dir: Path, run_id: str, *, wait_s: float = 0.0) -> Iterator[None]:
    """Hold the data dir's write lock for the block; wait up to `wait_s` for it, then raise BusyError. Inside
    `hold_for_command` on the same data dir the lock is held already: the block names its run in it."""
    path = lock_path(data_dir).absolute()
    if path in _HELD:
        _describe(path, {"run_id": run_id})
        try:
            yield
        finally:
            _describe(path, {"run_id": None, "command": _HELD.get(path, "run")})
        return
    with _flock(data_dir, LOCK_NAME, {"run_id": run_id}, wait_s, lambda: _busy_message(data_dir)):
        yield


def _describe(path: Path, about: dict[str, object]) -> None:
    """Rewrite the lock file's description of its holder (this process), keeping the lock."""
    info = {
        **about,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        finally:
            os.close(fd)
    except OSError:
        pass  # only the description is missing


@contextmanager
def serve_lock(data_dir: Path, *, wait_s: float = 0.0) -> Iterator[None]:
    """Hold the data dir's serve lock while `chatmem serve --watch` serves; BusyError after `wait_s`."""

    def busy() -> str:
        info = holder(data_dir, SERVE_LOCK_NAME) or {}
        who = f"pid {info.get('pid')} on {info.get('host')}, since {info.get('since')}" if info else "another process"
        return (
            f"{data_dir} is already served by `chatmem serve` ({who}): one server per data dir; stop it first"
            f" (or set CHATMEM_PIPELINE__LOCK_WAIT_S to wait for it)"
        )

    with _flock(data_dir, SERVE_LOCK_NAME, {"run_id": "serve"}, wait_s, busy):
        yield


@contextmanager
def _flock(
    data_dir: Path, name: str, about: dict[str, object], wait_s: float, busy: Callable[[], str]
) -> Iterator[None]:
    """flock `data_dir/name` (waiting up to `wait_s`, then BusyError(busy())) and describe the holder in it."""
    path = lock_path(data_dir, name)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StateError(f"{path}: cannot create the lock file ({exc.strerror})") from None
    try:
        deadline = time.monotonic() + max(wait_s, 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise BusyError(busy()) from None
            # Waited outside the except block: a signal handler that sees an exception being handled takes itself
            # for a stop already unwinding (flows/interrupt.py) and would ignore a Ctrl-C delivered again here
            time.sleep(_POLL_S)
        info = {
            **about,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        except OSError:
            pass  # a full disk: the lock still holds; only its description is missing
        yield
    finally:
        os.close(fd)  # releases the flock
