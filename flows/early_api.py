"""Prefect's ephemeral API for one command, started before prefect is imported (`chatmem run`, `serve --once`).

With no PREFECT_API_URL, Prefect starts its ephemeral API server (a uvicorn subprocess) when the first flow
asks for a client, and only then: the command waited for the server's start (~4-5 CPU-s: it imports Prefect's
whole server and opens its database) after its own imports, and imported Prefect's server module itself too,
only to find the class that starts it (~2-3 CPU-s more). Here the command starts the same server, with the same
arguments and environment as Prefect's (`SubprocessASGIServer`), as soon as the data dir is known, before
importing prefect or chatmem's stages, and points PREFECT_API_URL at it: the server starts on the second core
while the command imports, and the command never imports the server module. `wait_ready` (before the first
flow) waits for it to answer.

The server is started through flows/server_guard.py as Prefect's would be: in a session of its own (a terminal's
Ctrl-C reaches the command only, which stops it in order) and ending when the command does, however it dies.
PREFECT_API_URL is set only while prefect is imported (Prefect reads its settings then) and removed after
(`imported`): a process chatmem starts does not inherit it, and the rest of chatmem still sees no API of the
user's own (the defaults line, Prefect history pruning). `serve` without --once starts a real server instead (the
ephemeral API has no scheduler), a PREFECT_API_URL of the user's own is used as it is, and in a process that
imported prefect already (tests) Prefect's own ephemeral start is left to do its work.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from flows import local_api, server_guard

TIMEOUT_SETTING = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
# The words of Prefect's own start-up timeout, which flows/cli.py turns into one line naming the setting
TIMEOUT_MESSAGE = "Timed out while attempting to connect to ephemeral Prefect API server"

_SERVER: list[subprocess.Popen[Any]] = []
_URL: list[str] = []


def active() -> bool:
    """This process's flows talk to a server started here (so Prefect starts none of its own)."""
    return bool(_SERVER)


def start() -> None:
    """Start the ephemeral API server on a free loopback port and set PREFECT_API_URL to it, unless a URL is set
    already (the user's server, or this command started one). Call before prefect is imported."""
    if os.environ.get("PREFECT_API_URL") or _SERVER or "prefect" in sys.modules:
        return
    spec = importlib.util.find_spec("prefect")
    if spec is None or spec.origin is None:
        return  # no prefect: the import that follows says so
    port = local_api.free_port()
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "--app-dir",
        str(Path(spec.origin).parent.parent),
        "--factory",
        "prefect.server.api.server:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "error",
        "--lifespan",
        "on",
    ]
    # What Prefect's SubprocessASGIServer sets: no UI, the ephemeral app (no background services)
    env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
    process = subprocess.Popen(server_guard.guarded(command), env=env, start_new_session=True)
    server_guard.adopt(process)
    _SERVER.append(process)
    url = f"http://127.0.0.1:{port}/api"
    os.environ["PREFECT_API_URL"] = url
    _URL.append(url)
    atexit.register(stop)


def imported() -> None:
    """Prefect is imported and holds the URL: take it out of the environment again (see the module's docstring)."""
    if _URL and os.environ.get("PREFECT_API_URL") == _URL[0]:
        del os.environ["PREFECT_API_URL"]


def wait_ready() -> None:
    """Wait until the early server answers its health check (no early server: return at once). RuntimeError with
    Prefect's own words when it does not within PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS."""
    if not _SERVER:
        return
    process, url = _SERVER[0], _URL[0]
    timeout_s = float(os.environ.get(TIMEOUT_SETTING) or 240)
    try:
        local_api.wait_healthy(process, url, timeout_s, poll_s=0.05)
    except local_api.NotReady as failure:
        if failure.returncode is not None:
            raise RuntimeError(f"{TIMEOUT_MESSAGE}: it exited with code {failure.returncode}") from None
        raise RuntimeError(f"{TIMEOUT_MESSAGE} ({failure})") from None


def stop() -> None:
    """Stop the early server (at exit; SIGTERM: uvicorn closes cleanly, SIGKILL after 5 s)."""
    while _SERVER:
        process = _SERVER.pop()
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
