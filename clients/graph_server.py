"""The local graph server: ArcadeDB with its Bolt plugin, from the `arcadedb-embedded` package (which bundles a JRE).

It runs as its own Java process, detached from chatmem, under one directory (default `<data_dir>/graph`):

    graph/
      password     the root password, generated once, mode 0600 (never printed, never logged)
      java.args    the JVM's argument file, mode 0600: it holds the password, so it is not on the command line
                   where `ps` would show it to every user of the machine
      server.json  pid, ports, database and start time of the running server (written once it answers)
      server.pid   the pid of the server last started, written as soon as it is started: a process killed
                   while its server was starting leaves a Java process with no server.json, which `stop`
                   and `start` find by this file (or by its java.args in /proc) and stop
      server.owner who the server last started is for (JSON, written with server.pid): a run (the load stage, or
                   the start ahead of it), which stops it as it ends, or the user (`chatmem graph up`), whose
                   server no run ever stops; with the start time of the server's and the starter's process, so
                   that a reused pid is not taken for either (see `left_as_found`)
      server.log   the server's stdout and stderr
      arcadedb/    ArcadeDB's root: databases, config (users with hashed passwords), its own logs

Both listeners bind to 127.0.0.1 only. Ports are free ones picked at the first start (or the configured ones) and
kept for later starts while they stay free, so the URI is stable. Readiness is a real Bolt query on the database,
not an open port: ArcadeDB opens the Bolt port before it has created the database. Measured on a busy 2-core
machine: ready in ~2 s; a start after a kill recovers the database from its WAL in well under a second.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import secrets
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from clients.graph_errors import LocalServerError
from contracts.redact import remember_secret
from staging.liveness import process_start

log = logging.getLogger(__name__)

USER = "root"
DEFAULT_DATABASE = "chatmem"
MAIN_CLASS = "com.arcadedb.server.ArcadeDBServer"
BOLT_PLUGIN = "Bolt:com.arcadedb.bolt.BoltProtocolPlugin"
# What the arcadedb-embedded package itself passes to the JVM (jvm.py), minus what only the embedded mode needs.
JVM_FLAGS = (
    "--add-modules=jdk.incubator.vector",
    "--enable-native-access=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/java.nio.channels.spi=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "-Dfile.encoding=UTF8",
    "-Djava.awt.headless=true",
    "-Dpolyglot.engine.WarnInterpreterOnly=false",
)
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}  # servers this process started: reaped, never left as zombies
# Starts begun by `start_in_background` and not yet taken by a `start` (or `settle`), per server directory
_PENDING: dict[Path, Future[tuple[ServerInfo, bool]]] = {}
_PENDING_LOCK = threading.Lock()
# The servers of the `left_as_found` blocks open in this process (a run's): a server started for one of them is
# recorded as the run's, and the hard exit (`stop_for_exit`) stops them, since no `finally` runs then
_RUNS: list[LocalServer] = []
RUN, USER_STARTED = "run", "user"  # server.owner's `by`


@dataclass(frozen=True)
class ServerInfo:
    """A running local server, as recorded in server.json."""

    pid: int
    bolt_port: int
    http_port: int
    database: str
    started_at: str

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"


def package_dir() -> Path:
    """Where arcadedb-embedded keeps its jars and JRE (not imported: that would start a JVM in this process)."""
    import importlib.util

    spec = importlib.util.find_spec("arcadedb_embedded")
    if spec is None or spec.origin is None:
        raise LocalServerError("local graph server: the package arcadedb-embedded is not installed")
    return Path(spec.origin).parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _port_free(port: int) -> bool:
    """Nothing listens on the port. SO_REUSEADDR as Java's server sockets use it: connections of a killed server
    left in TIME_WAIT do not keep the port from it (nor should they make us move to another port)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class LocalServer:
    """Start, find and stop the local server that lives in `directory`."""

    def __init__(
        self,
        directory: Path,
        *,
        database: str = DEFAULT_DATABASE,
        bolt_port: int = 0,
        http_port: int = 0,
        heap: str = "2g",
        java: Path | None = None,
        start_timeout_s: float = 90.0,
    ) -> None:
        self.directory = directory.absolute()
        self.database = database
        self.bolt_port = bolt_port
        self.http_port = http_port
        self.heap = heap
        self.java = java
        self.start_timeout_s = start_timeout_s

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    @property
    def password_path(self) -> Path:
        return self.directory / "password"

    @property
    def _info_path(self) -> Path:
        return self.directory / "server.json"

    @property
    def _pid_path(self) -> Path:
        return self.directory / "server.pid"

    @property
    def _owner_path(self) -> Path:
        return self.directory / "server.owner"

    @property
    def users_path(self) -> Path:
        """ArcadeDB's user file (hashed passwords): present once the server has started here."""
        return self.directory / "arcadedb" / "config" / "server-users.jsonl"

    def password(self) -> str:
        """The root password: generated at the first start into a file only its owner can read.

        Lost after the first start (the server already holds root's hash), a new one would not open the
        graph: refused in one line that says how to recover (`chatmem graph reset-password`).
        """
        try:
            value = self.password_path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            if self.users_path.exists():
                raise LocalServerError(
                    f"local graph server: {self.password_path} is missing, and the graph in {self.directory} was"
                    " created with it; recover with `chatmem graph reset-password` (sets a new one, keeps the graph)"
                ) from None
            return self._new_password()
        remember_secret(value)  # masked wherever a server error or a log line would quote it
        return value

    def _new_password(self) -> str:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)  # it holds a secret and the chat text
        value = secrets.token_urlsafe(24)
        remember_secret(value)
        _write_private(self.password_path, value + "\n")
        return value

    def reset_password(self) -> bool:
        """A new root password for a graph whose password file was lost; the databases are kept.

        ArcadeDB keeps its users in arcadedb/config/server-users.jsonl and creates root from the
        `rootPassword` setting only when no root user is recorded; so root's line is removed (other users
        stay), a new password is written, and the next start creates root with it. Returns whether the
        server was running (it is stopped for the change and started again).
        """
        was_running = self.stop()
        if self.users_path.exists():
            lines = self.users_path.read_text(encoding="utf-8").splitlines()
            kept = [line for line in lines if line.strip() and json.loads(line).get("name") != USER]
            if kept:
                _write_private(self.users_path, "\n".join(kept) + "\n")
            else:
                self.users_path.unlink()
        self.password_path.unlink(missing_ok=True)
        self._new_password()
        return was_running

    def status(self) -> ServerInfo | None:
        """The running server, or None. server.json stays after a stop: the next start reuses its ports."""
        info = self._recorded()
        if info is None or not _alive(info.pid) or not _is_our_java(info.pid, self.directory):
            return None
        return info

    def start_in_background(self) -> None:
        """Begin `start` on a thread, so that the JVM starts while the caller works (a run starts its server as the
        stage before the load begins). The next `start` in this process waits for that one and returns its result
        (or raises its error); `settle` waits for it without taking it."""
        with _PENDING_LOCK:
            if self.directory in _PENDING:
                return
            pending: Future[tuple[ServerInfo, bool]] = Future()
            _PENDING[self.directory] = pending

        def begin() -> None:
            try:
                pending.set_result(self._start_now())
            except BaseException as exc:  # handed to whoever takes the start
                pending.set_exception(exc)

        threading.Thread(target=begin, name="graph-server-start", daemon=True).start()

    def settle(self) -> None:
        """Wait for a start begun in the background and not taken by a `start` to end, and forget it (the end of a
        run whose load never came: `left_as_found` then stops the server it started)."""
        with _PENDING_LOCK:
            pending = _PENDING.pop(self.directory, None)
        if pending is not None and pending.exception() is not None:  # waits; never raises the start's own error
            log.info("load - the graph server started ahead of the load did not start: %s", pending.exception())

    def start(self) -> tuple[ServerInfo, bool]:
        """Start the server unless it runs already; wait until it answers. Returns (info, started_now): a start
        begun in the background by this process counts as started now."""
        with _PENDING_LOCK:
            pending = _PENDING.pop(self.directory, None)
        if pending is not None:
            return pending.result()
        return self._start_now()

    def _start_now(self) -> tuple[ServerInfo, bool]:
        running = self.status()
        if running is not None:
            if not self._for_a_run():  # `chatmem graph up` of a server a run started: the user's from now on
                self._record_owner(running.pid, USER_STARTED)
            return running, False
        for stray in self.strays():  # never announced, yet it holds the database: stop it, then start afresh
            log.warning("load - stopping graph server pid %d of %s: started, never announced", stray, self.directory)
            _stop_pid(stray, 30.0)
        java = self.java or package_dir() / "jre" / "bin" / "java"
        if not java.exists():
            raise LocalServerError(f"local graph server: no Java at {java}")
        previous = self._recorded()
        bolt = self.bolt_port or _reuse(previous.bolt_port if previous else 0)
        http = self.http_port or _reuse(previous.http_port if previous else 0, avoid=bolt)
        args = self._jvm_args(bolt, http)
        _write_private(self.directory / "java.args", "\n".join(_quote_arg(a) for a in args) + "\n")
        self._rotate_log()
        with open(self.log_path, "ab") as out:
            process = subprocess.Popen(
                [str(java), f"@{self.directory / 'java.args'}"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.directory,
                start_new_session=True,  # ^C in the CLI must not take the server down with it
            )
        _CHILDREN[process.pid] = process
        # Before it answers, with who started it: a kill from here on leaves a server `strays` finds and stops.
        _write_private(self._pid_path, f"{process.pid} {os.getpid()}\n")
        self._record_owner(process.pid, RUN if self._for_a_run() else USER_STARTED)
        info = ServerInfo(process.pid, bolt, http, self.database, datetime.now(UTC).isoformat())
        log.info("load - starting the local graph server (pid %d) at %s", process.pid, info.uri)
        try:
            self._wait_ready(process, info)
        except BaseException:
            _terminate(process)  # ours, whatever it turned into: a server that never answered is no server
            raise
        # Announced only now that it answers a query: a concurrent reader of server.json never finds a server
        # that is still starting (its load would fail on a refused connection).
        _write_private(self._info_path, json.dumps(asdict(info)))
        return info, True

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop the server (SIGTERM: ArcadeDB closes its databases cleanly; SIGKILL after `timeout_s`), and any
        server of this directory that was never announced (its starter killed before it answered)."""
        info = self.status()
        pids = sorted({*([info.pid] if info is not None else []), *self.strays()})
        for pid in pids:
            _stop_pid(pid, timeout_s)
        self._pid_path.unlink(missing_ok=True)
        self._owner_path.unlink(missing_ok=True)
        return bool(pids)

    def stops_with_the_run(self) -> bool:
        """The running server is a run's to stop as it ends: server.owner says a run started this very process (pid
        and start time), and that run is this process or is gone (killed: its server was orphaned, and the next run
        stops it as its own). A server `chatmem graph up` started or claimed, or one with no owner record (started
        by an older chatmem), is the user's: never."""
        info = self.status()
        owner = self._owner()
        if info is None or owner is None or owner.get("by") != RUN or owner.get("pid") != info.pid:
            return False
        if process_start(info.pid) not in (owner.get("pid_start"), None):
            return False  # another server of this directory has the recorded pid since: not the one recorded
        starter, starter_start = owner.get("starter"), owner.get("starter_start")
        if starter == os.getpid():
            return True
        return not (isinstance(starter, int) and _alive(starter) and process_start(starter) in (starter_start, None))

    def _for_a_run(self) -> bool:
        """A `left_as_found` block of this process is open on this directory: a server started now is the run's."""
        return any(server.directory == self.directory for server in _RUNS)

    def _record_owner(self, pid: int, by: str) -> None:
        me = os.getpid()
        owner = {"by": by, "pid": pid, "pid_start": process_start(pid)}
        owner.update(starter=me, starter_start=process_start(me))
        _write_private(self._owner_path, json.dumps(owner) + "\n")

    def _owner(self) -> dict[str, object] | None:
        try:
            owner = json.loads(self._owner_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return owner if isinstance(owner, dict) else None

    def strays(self) -> list[int]:
        """Servers of this directory that server.json does not announce and whose starter is gone: started, then
        the process that started them died before they answered. Each holds the database locked ("locked by
        another process") until stopped. A server another process is still starting is not one."""
        announced = self.status()
        try:
            pid_text, _, starter_text = self._pid_path.read_text(encoding="utf-8").strip().partition(" ")
            recorded, starter = int(pid_text), int(starter_text or 0)
        except (OSError, ValueError):
            recorded, starter = 0, 0
        found: set[int] = set()
        if recorded and _alive(recorded) and _is_our_java(recorded, self.directory, trust_missing=False):
            found.add(recorded)
        needle = b"\0@" + str(self.directory / "java.args").encode() + b"\0"  # the argument `start` gives
        for entry in _proc_pids():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if needle in cmdline and _alive(entry):
                found.add(entry)
        if announced is not None:
            found.discard(announced.pid)
        if recorded in found and starter and starter != os.getpid() and _alive(starter):
            found.discard(recorded)  # still being started by a live process: its own wait decides
        return sorted(found)

    def create_database(self, name: str) -> None:
        """Create another database on the running server (ArcadeDB's HTTP API; Cypher has no CREATE DATABASE here).

        For tests and benchmarks that want a fresh graph without a fresh server.
        """
        if not name.isidentifier():
            raise ValueError(f"database names are plain identifiers, not {name!r}")
        info = self.status()
        if info is None:
            raise LocalServerError(f"local graph server ({self.directory}) is not running")
        token = base64.b64encode(f"{USER}:{self.password()}".encode()).decode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{info.http_port}/api/v1/server",
            data=json.dumps({"command": f"create database {name}"}).encode(),
            headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            raise LocalServerError(f"local graph server: cannot create database {name!r}: HTTP {exc.code}") from None

    def _jvm_args(self, bolt: int, http: int) -> list[str]:
        jars = package_dir() / "jars"
        return [
            f"-Xmx{self.heap}",
            *JVM_FLAGS,
            f"-XX:ErrorFile={self.directory / 'hs_err_pid%p.log'}",
            "-cp",
            f"{jars}/*",
            f"-Darcadedb.server.rootPath={self.directory / 'arcadedb'}",
            f"-Darcadedb.server.rootPassword={self.password()}",
            f"-Darcadedb.server.defaultDatabases={self.database}[{USER}]",
            f"-Darcadedb.server.plugins={BOLT_PLUGIN}",
            "-Darcadedb.server.httpIncomingHost=127.0.0.1",
            f"-Darcadedb.server.httpIncomingPort={http}",
            "-Darcadedb.bolt.host=127.0.0.1",
            f"-Darcadedb.bolt.port={bolt}",
            MAIN_CLASS,
        ]

    def _wait_ready(self, process: subprocess.Popen[bytes], info: ServerInfo) -> None:
        """Poll with a real query until the database answers; fail fast if the JVM exits, or at the timeout."""
        from neo4j import GraphDatabase
        from neo4j.exceptions import DriverError, Neo4jError

        deadline = time.monotonic() + self.start_timeout_s
        last = "no answer yet"
        while time.monotonic() < deadline:
            code = process.poll()
            if code is not None:
                raise LocalServerError(
                    f"local graph server exited with code {code} while starting: {self._log_tail()}"
                    f" (log: {self.log_path})"
                )
            if _listening(info.bolt_port):
                try:
                    with (
                        GraphDatabase.driver(info.uri, auth=(USER, self.password()), connection_timeout=2.0) as driver,
                        driver.session(database=info.database) as session,
                    ):
                        session.run("RETURN 1").consume()
                    return
                except (Neo4jError, DriverError, OSError) as exc:
                    last = type(exc).__name__
            time.sleep(0.2)
        raise LocalServerError(
            f"local graph server did not answer at {info.uri} within {self.start_timeout_s:.0f} s ({last});"
            f" log: {self.log_path}"
        )

    def _log_tail(self, lines: int = 3) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return "no log"
        tail = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail)[-400:] or "empty log"

    def _rotate_log(self, limit: int = 10 * 1024 * 1024) -> None:
        if self.log_path.exists() and self.log_path.stat().st_size > limit:
            self.log_path.replace(self.log_path.with_suffix(".log.1"))

    def _recorded(self) -> ServerInfo | None:
        try:
            return ServerInfo(**json.loads(self._info_path.read_text(encoding="utf-8")))
        except (FileNotFoundError, ValueError, TypeError):
            return None


@contextmanager
def left_as_found(server: LocalServer | None) -> Iterator[None]:
    """Around a run that may start `server` (None: no local server in use): a server started for the run (the load
    stage starts one when none is running) is stopped when the block ends, however it ends; so is one an earlier run
    started and left behind when it was killed (`stops_with_the_run`). One the user started (`chatmem graph up`)
    keeps running. The hard exit, which runs no `finally`, does the same through `stop_for_exit`.

    A batch run must not leave a 0.4-0.9 GB Java process behind per data dir: nothing in the read path (recall,
    MCP, inspection) needs it; a user who wants to query the graph starts it with `chatmem graph up`."""
    if server is None:
        yield
        return
    _RUNS.append(server)
    try:
        yield
    finally:
        server.settle()  # a start still under way in the background: stopped below once it has answered
        _RUNS.remove(server)
        try:
            if server.stops_with_the_run():
                server.stop()
                log.info("load - stopped the local graph server this run started (%s)", server.directory)
        except OSError as exc:  # a full disk, /proc unreadable: the next `graph down` or start stops it
            log.warning("load - could not stop the local graph server of %s: %s", server.directory, exc)


def stop_for_exit(timeout_s: float = 3.0) -> None:
    """`left_as_found`'s stop for a hard exit (flows/interrupt.py `exit_now`, then os._exit: no `finally` runs): the
    servers of this process's open run blocks that are the run's to stop, and any it is still starting, get SIGTERM
    (ArcadeDB closes its databases cleanly); waits up to `timeout_s` for them to go, never longer (the exit is meant
    to be at once; one still closing then finishes on its own). Takes no lock: the main thread may hold one."""
    pids: set[int] = set()
    for server in list(_RUNS):
        info = server.status()
        if info is not None and server.stops_with_the_run():
            pids.add(info.pid)
        announced = info.pid if info is not None else 0
        for pid, child in list(_CHILDREN.items()):  # started by this process, not answering yet: the run's start
            if pid != announced and child.poll() is None and _is_our_java(pid, server.directory, trust_missing=False):
                pids.add(pid)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + timeout_s
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def _listening(port: int) -> bool:
    """Something accepts connections on the port (a connect, never a bind: a bind could steal it)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _reuse(port: int, avoid: int = 0) -> int:
    """Last start's port while it is free (a stable URI), else a fresh free one."""
    if port and port != avoid and _port_free(port):
        return port
    while True:
        fresh = free_port()
        if fresh != avoid:
            return fresh


def _terminate(process: subprocess.Popen[bytes], timeout_s: float = 10.0) -> None:
    process.terminate()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    _CHILDREN.pop(process.pid, None)


def _alive(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None and child.poll() is not None:  # ours and exited: reap it, so it is not a zombie
        del _CHILDREN[pid]
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def _is_our_java(pid: int, directory: Path, *, trust_missing: bool = True) -> bool:
    """The pid is an ArcadeDB server started from `directory` (a recycled pid is not)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return trust_missing  # no /proc: trust server.json
    return str(directory / "java.args") in cmdline


def _proc_pids() -> list[int]:
    try:
        return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:  # no /proc: only server.pid tells
        return []


def _stop_pid(pid: int, timeout_s: float) -> None:
    """SIGTERM (ArcadeDB closes its databases cleanly), SIGKILL after `timeout_s`; returns once it is gone."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        while _alive(pid):
            time.sleep(0.05)


def _write_private(path: Path, text: str) -> None:
    """Write a file only the owner can read, created with that mode (never world-readable, even briefly)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)


def _quote_arg(arg: str) -> str:
    """One argument of a java @argfile: in double quotes, with backslashes and quotes escaped."""
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
