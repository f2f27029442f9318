"""Prefect's ephemeral API server, started so that a Ctrl-C cannot kill it and a dead chatmem cannot orphan it.

Prefect starts its ephemeral server as a child process (`python -m uvicorn ...`) in chatmem's own process
group, so the SIGINT a terminal sends on Ctrl-C reached it too: the server died first, and the flow engine
then retried the dead API for 70-150 s before the run could end. And a chatmem killed with SIGKILL left the
server running for ever (~200 MB each).

`install()` changes how that child is started, nothing else:
- in a session of its own (`start_new_session`): the terminal's Ctrl-C reaches chatmem only, which records the
  interruption and stops the server itself (Prefect's atexit hook, or `stop_servers()` on a hard exit);
- through this module's `main`, a guard that runs uvicorn in the same process and ends it when its parent
  goes away, however the parent died (it polls getppid(): a parent-death signal via prctl would fire when
  the *thread* that started the server ends, and Prefect may start it from a worker thread).

This module imports prefect only inside `install()`; `python -m flows.server_guard` imports nothing of ours.
"""

from __future__ import annotations

import os
import runpy
import signal
import subprocess
import sys
import threading
import time
from typing import Any

_POLL_S = 0.5
_STARTED: list[subprocess.Popen[Any]] = []


class _GuardedSubprocess:
    """Stands in for the `subprocess` module inside prefect.server.api.server: Popen goes through the guard."""

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    @staticmethod
    def Popen(args: list[str], **kwargs: Any) -> subprocess.Popen[Any]:
        process = subprocess.Popen(guarded(args), start_new_session=True, **kwargs)
        _STARTED.append(process)
        return process


def guarded(args: list[str]) -> list[str]:
    """`[python, -m, module, ...]` run through the guard, so that it ends when this process does."""
    if len(args) >= 3 and args[1] == "-m":
        return [args[0], "-m", __name__, str(os.getpid()), *args[1:]]
    return args


def install() -> None:
    """Route the ephemeral server's start through the guard (idempotent)."""
    from prefect.server.api import server as server_module

    if not isinstance(getattr(server_module, "subprocess", None), _GuardedSubprocess):
        server_module.subprocess = _GuardedSubprocess()  # type: ignore[assignment, attr-defined]


def adopt(process: subprocess.Popen[Any]) -> None:
    """A server started through `guarded` elsewhere (flows/early_api.py): `stop_servers` stops it too."""
    _STARTED.append(process)


def started_servers() -> list[int]:
    """Pids of the ephemeral servers this process started that still run."""
    return [p.pid for p in _STARTED if p.poll() is None]


def stop_servers(timeout_s: float = 3.0) -> None:
    """Terminate the servers this process started (for an exit that skips atexit hooks)."""
    for process in _STARTED:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + timeout_s
    for process in _STARTED:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)  # uvicorn shuts down cleanly on SIGTERM
    time.sleep(5.0)
    os._exit(1)  # it did not: go anyway


def main(argv: list[str]) -> None:
    """`python -m flows.server_guard PARENT_PID -m MODULE ARGS...`: run MODULE while PARENT_PID is our parent."""
    parent = int(argv[0])
    if os.getppid() != parent:  # the parent died before we got here
        sys.exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="parent-watch", daemon=True).start()
    module, rest = argv[2], argv[3:]
    sys.argv = [module, *rest]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
