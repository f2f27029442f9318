"""Who stops the local graph server (clients/graph_server.py): the run that started it, however that run ends, or
the next run when it was killed; never a server the user started. Real ArcadeDB servers in tmp dirs, real runs'
processes killed with real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_support import ROOT

from clients.graph_server import LocalServer, left_as_found
from staging.liveness import process_alive, process_start

# A run's process as far as the graph server goes: the block `chatmem run` opens around the pipeline, the load's
# start inside it, then work that goes on until the process is killed ("kill") or stopped by Ctrl-C through the
# run's own handler ("ctrl-c": a stage that does not stop at the first Ctrl-C, as one in native code).
RUN = """
import sys, time
from contextlib import nullcontext
from pathlib import Path
sys.path.insert(0, {root!r})
from clients.graph_server import LocalServer, left_as_found
from contracts.settings import Settings
from flows.interrupt import interruptible

server = LocalServer(Path(sys.argv[1]), heap="512m", start_timeout_s=300)
handler = interruptible(Settings(data_dir=Path(sys.argv[3])), "r-test", ["load"]) if sys.argv[2] == "ctrl-c" else None
with left_as_found(server), handler or nullcontext():
    server.start()
    ready = False
    while True:
        try:  # "ready" inside: a Ctrl-C sent as soon as it is read must land here
            if not ready:
                print("ready", flush=True)
                ready = True
            time.sleep(60)
        except KeyboardInterrupt:
            print("first", flush=True)
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LocalServer]:
    local = LocalServer(tmp_path / "graph", heap="512m", start_timeout_s=300)
    try:
        yield local
    finally:
        local.stop()


def a_run(server: LocalServer, how: str, tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """Start a run's process that starts the server; returns it and the server's pid once the server answers."""
    script = tmp_path / "run.py"
    script.write_text(RUN.format(root=str(ROOT)), encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, str(script), str(server.directory), how, str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    info = server.status()
    assert info is not None
    return process, info.pid


def gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not process_alive(pid)


def test_a_server_a_killed_run_left_is_stopped_by_the_next_run_but_never_the_users(
    server: LocalServer, tmp_path: Path
) -> None:
    """SIGKILL of a run after it started the server: the server lives on; the next run takes it as found (no start)
    and stops it as it ends, as its own. A server the user started (`graph up`: a start outside any run), or the
    orphan once the user took it with `graph up`, keeps running after a run."""
    killed, orphan = a_run(server, "kill", tmp_path)
    killed.kill()
    killed.wait()
    assert server.status() is not None and server.stops_with_the_run()
    with left_as_found(server):
        info, started = server.start()
        assert info.pid == orphan and not started
    assert gone(orphan) and server.status() is None

    users, started = server.start()  # `chatmem graph up`
    assert started
    with left_as_found(server):
        assert server.start() == (users, False)
    assert server.status() == users

    server.stop()
    killed, orphan = a_run(server, "kill", tmp_path)
    killed.kill()
    killed.wait()
    assert server.start()[0].pid == orphan  # `chatmem graph up` of the orphan: the user's from now on
    with left_as_found(server):
        server.start()
    kept = server.status()
    assert kept is not None and kept.pid == orphan


def test_a_run_still_running_keeps_its_server_and_a_reused_pid_is_not_taken_for_it(
    server: LocalServer, tmp_path: Path
) -> None:
    """The server of a run that is still running is not an orphan; a live process that has that run's pid since
    (another start time) is not that run."""
    killed, orphan = a_run(server, "kill", tmp_path)
    killed.kill()
    killed.wait()
    owner_path = server.directory / "server.owner"
    owner = json.loads(owner_path.read_text())
    assert owner["by"] == "run" and owner["pid"] == orphan and owner["pid_start"] == process_start(orphan)
    with subprocess.Popen(["sleep", "60"]) as other:
        try:
            live = {"starter": other.pid, "starter_start": process_start(other.pid)}
            owner_path.write_text(json.dumps({**owner, **live}))
            assert not server.stops_with_the_run()  # a run that runs: its own end stops it
            owner_path.write_text(json.dumps({**owner, "starter": other.pid, "starter_start": 1}))
            assert server.stops_with_the_run()  # the pid, not the process: the recorded run is gone
        finally:
            other.kill()


def test_a_run_stopped_at_once_by_a_second_ctrl_c_stops_the_server_it_started(
    server: LocalServer, tmp_path: Path
) -> None:
    """A second Ctrl-C (or the grace period's end) leaves through os._exit, where no `finally` runs: the server the
    run started is stopped all the same, like Prefect's."""
    run, pid = a_run(server, "ctrl-c", tmp_path)
    assert run.stdout is not None
    os.kill(run.pid, signal.SIGINT)
    assert run.stdout.readline().strip() == "first"
    os.kill(run.pid, signal.SIGINT)
    assert run.wait(30) == 130
    assert gone(pid) and server.status() is None
