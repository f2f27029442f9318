"""Faults of issue 22 found after the fault suite (security and integrity half), each against real processes:
a key given only as OPENAI_API_KEY that an endpoint echoes, `chatmem inspect` answering a rebound Host name,
failed LLM segments ending a run `succeeded`, and a JSONL conversation split across two dumps.

The LLM is the scripted HTTP server on 127.0.0.1 (tests/llm_server.py); `chatmem` runs as its own process
with a PREFECT_HOME of this module's (tests/fault_support.py).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from concept_support import conversation, open_dbs, write_archive
from fault_support import ROOT, process_env, run, start, wait_for
from stage_support import stage_extract, stage_segment

from contracts.errors import StageError
from tests import llm_guard, llm_server
from tests.llm_server import FakeLLMServer, Reply, quoting_responder

fake_llm = llm_server.fake_llm
no_real_model_requests = llm_guard.no_real_model_requests
pytestmark = pytest.mark.slow

ENV_KEY = "sk-only-in-the-environment-5d1c7a9e"  # never configured as CHATMEM_*: only OPENAI_API_KEY


@pytest.fixture(scope="module")
def prefect_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("prefect-found")


def _chats(path: Path, conversations: dict[str, list[str]]) -> Path:
    lines = [
        json.dumps({"conversation_id": c, "id": f"{c}-{i}", "role": "user" if i % 2 == 0 else "assistant", "text": t})
        for c, texts in conversations.items()
        for i, t in enumerate(texts)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


CHATS = {
    "garden": ["I want to grow a vegetable garden this spring.", "Start with compost and sun."],
    "trip": ["We are planning a trip to Lisbon in May.", "Take tram 28 early in the morning."],
    "piano": ["I practise piano every evening after dinner.", "Scales first, then the pieces."],
}


def _llm_env(prefect_home: Path, fake: FakeLLMServer, **extra: str) -> dict[str, str]:
    """The LLM extractor and the embeddings endpoint on the fake server; the key only as OPENAI_API_KEY."""
    env = process_env(
        prefect_home,
        CHATMEM_EXTRACT__LLM__BASE_URL=fake.base_url,
        CHATMEM_EXTRACT__LLM__MODEL="test-model",
        CHATMEM_EXTRACT__LLM__MAX_RETRIES="0",
        CHATMEM_EXTRACT__LLM__MAX_CONCURRENCY="1",
        CHATMEM_EMBED__BACKEND="endpoint",
        CHATMEM_EMBED__ENDPOINT__BASE_URL=fake.base_url,
        CHATMEM_EMBED__ENDPOINT__MODEL="tiny-embed",
        **extra,
    )
    for name in [n for n in env if n.endswith("__API_KEY")]:
        del env[name]
    return env


def _every_byte(*roots: Path) -> str:
    """Every file under the roots (databases and their WAL files included), as text, each line naming its file."""
    parts = []
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            parts.append(f"{path}: {path.read_bytes().decode('utf-8', errors='replace')}")
    return "\n".join(parts)


# ---------------------------------------------------------------- a key given only as OPENAI_API_KEY


def test_a_key_only_in_openai_api_key_that_the_endpoint_echoes_is_masked_in_every_writer(
    fake_llm: FakeLLMServer, prefect_home: Path, tmp_path: Path
) -> None:
    """Every extraction is refused with a 401 that quotes `Bearer <key>`; the key reaches no table, no WAL, no
    Prefect database, not the -v stderr, and no csv/jsonl/parquet export (even of a row written in clear
    by an older version)."""
    fake_llm.responder = lambda body: Reply.echoing(401)
    data = tmp_path / "data"
    env = _llm_env(prefect_home, fake_llm, OPENAI_API_KEY=ENV_KEY)
    result = run(data, "-v", "run", _chats(tmp_path / "chats.jsonl", CHATS), "--to", "extract", env=env)
    assert result.returncode == 1, result.stderr[-3000:]
    [request, *_] = fake_llm.model_requests()
    assert request.headers["authorization"] == f"Bearer {ENV_KEY}"  # the key really was sent, and echoed
    assert any(r.headers.get("authorization") == f"Bearer {ENV_KEY}" for r in fake_llm.embedding_requests())
    with sqlite3.connect(data / "staging.db") as conn:
        errors = [row[0] for row in conn.execute("SELECT error FROM llm_calls WHERE status = 'error'")]
    assert errors and all("invalid credentials '***'" in e for e in errors), errors
    said = result.stdout + result.stderr
    assert "invalid credentials '***'" in said  # -v shows the refusal, masked
    written = _every_byte(data, prefect_home) + "\n" + said
    assert ENV_KEY not in written, [line[:200] for line in written.splitlines() if ENV_KEY in line]

    with sqlite3.connect(data / "staging.db") as conn:  # a row an older version wrote in clear
        conn.execute("UPDATE llm_calls SET error = ? WHERE id = (SELECT MIN(id) FROM llm_calls)", (f"key {ENV_KEY}",))
    exports = tmp_path / "exports"
    for table in ("llm_calls", "extractions", "stage_runs"):
        for fmt in ("csv", "jsonl", "parquet"):
            out = exports / f"{table}.{fmt}"
            done = run(data, "staging", "export", table, "--format", fmt, "--out", out, env=env)
            assert done.returncode == 0, done.stderr
        assert ENV_KEY not in str(pl.read_parquet(exports / f"{table}.parquet").to_dicts())  # compressed: read
    assert "key ***" in (exports / "llm_calls.csv").read_text(encoding="utf-8")
    assert ENV_KEY not in _every_byte(exports)


def test_url_credentials_and_no_key_are_sent_as_basic_auth(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """A base URL with user:password@ and no API key: the request carries Basic auth with them (a proxy that
    takes only Basic auth works), and a server that quotes them finds the password masked in llm_calls."""
    fake_llm.reply_with(Reply.echoing(401))
    fake_llm.responder = quoting_responder()
    url = fake_llm.base_url.replace("http://", "http://proxyuser:proxy-pass-91f0@")
    dbs = open_dbs(tmp_path, extract={"llm": {"base_url": url, "model": "m", "max_retries": 0}})
    write_archive(dbs.archive, [conversation(name, [("user", texts[0])]) for name, texts in CHATS.items()])
    run_id = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    with pytest.raises(StageError, match="1 segment failed"):
        stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    basic = "Basic " + base64.b64encode(b"proxyuser:proxy-pass-91f0").decode()
    assert {r.headers["authorization"] for r in fake_llm.model_requests()} == {basic}
    [error] = [row[0] for row in dbs.staging.execute("SELECT error FROM llm_calls WHERE status = 'error'")]
    assert "invalid credentials '***'" in error
    stored = "\n".join(dbs.staging.iterdump())
    assert "proxy-pass-91f0" not in stored
    assert basic.split()[1] not in stored


# ---------------------------------------------------------------- inspect and DNS rebinding


def _get(port: int, path: str, host: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers={"Host": host})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_inspect_refuses_a_host_name_other_than_loopback(prefect_home: Path, tmp_path: Path) -> None:
    """`chatmem inspect` answers 421 to `Host: attacker.example:PORT` (a page that rebinds its name to
    127.0.0.1), for the messages and for `?sql=`; 127.0.0.1, localhost and [::1] are answered."""
    from clients.graph_server import free_port

    data = tmp_path / "data"
    env = process_env(prefect_home)
    assert run(data, "run", _chats(tmp_path / "c.jsonl", CHATS), "--only", "ingest", env=env).returncode == 0
    port = free_port()
    server = start(data, "inspect", "--port", str(port), env=env)
    try:
        wait_for("inspect to listen", lambda: _answers(port), 60, server)
        for path in ("/archive/messages.json", "/archive.json?sql=select+text+from+messages", "/"):
            status, body = _get(port, path, f"attacker.example:{port}")
            assert status == 421 and b"Lisbon" not in body, (path, status)
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "localhost"):
            status, body = _get(port, "/archive/messages.json", host)
            assert status == 200 and b"Lisbon" in body, host
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.communicate(timeout=30)


def _answers(port: int) -> bool:
    try:
        return _get(port, "/", "127.0.0.1")[0] == 200
    except OSError:
        return False


# ---------------------------------------------------------------- failed LLM segments


def test_failed_segments_fail_the_run_and_the_next_run_retries_them(
    fake_llm: FakeLLMServer, prefect_home: Path, tmp_path: Path
) -> None:
    """3 of 3 segments fail (400, bad JSON, 401: last, since after a refused key no other segment is sent): exit 1
    saying "3 segments failed"; once the endpoint works, a plain `chatmem run` does not skip extract as
    unchanged: it retries those 3 and ends succeeded."""
    fake_llm.reply_with(Reply.fail(400), Reply.raw(b"{not json"), Reply.fail(401))
    data = tmp_path / "data"
    export = _chats(tmp_path / "chats.jsonl", CHATS)
    env = _llm_env(prefect_home, fake_llm, OPENAI_API_KEY="sk-placeholder-for-the-fake-server")
    first = run(data, "run", export, "--to", "extract", env=env)
    assert first.returncode == 1, first.stderr[-2000:]
    assert "3 segments failed" in first.stderr and "Traceback" not in first.stderr
    fake_llm.responder = quoting_responder()
    calls = len(fake_llm.model_requests())
    second = run(data, "run", export, "--to", "extract", env=env)
    assert second.returncode == 0, second.stderr[-2000:]
    assert len(fake_llm.model_requests()) - calls == 3  # the three failed ones, retried
    with sqlite3.connect(data / "staging.db") as conn:
        statuses = conn.execute("SELECT stage, status FROM stage_runs WHERE stage = 'extract' ORDER BY id").fetchall()
        assert statuses == [("extract", "failed"), ("extract", "succeeded")]
        assert conn.execute("SELECT COUNT(*) FROM extractions WHERE status = 'ok'").fetchone()[0] == 3
        counts = json.loads(conn.execute("SELECT counts FROM stage_runs WHERE stage = 'extract'").fetchone()[0])
        assert counts["failed"] == 3  # the failed stage run keeps its counts


# ---------------------------------------------------------------- a JSONL conversation split across dumps


def test_a_jsonl_conversation_split_across_two_dumps_keeps_one_active_path(prefect_home: Path, tmp_path: Path) -> None:
    """Ids 1-3 in one dump, 4-5 (4 with parent_id "3") in the next: 1-5 are the active path in order, 4's parent
    is 3, nothing is retired."""

    def dump(name: str, ids: range, parent: int | None) -> Path:
        lines = []
        for n in ids:
            record = {"conversation_id": "split", "id": str(n), "role": "user" if n % 2 else "assistant"}
            record |= {"text": f"message {n} about the sourdough starter", "created_at": f"2024-05-01T10:0{n}:00Z"}
            if n == ids.start and parent is not None:
                record["parent_id"] = str(parent)
            lines.append(json.dumps(record))
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    data = tmp_path / "data"
    env = process_env(prefect_home)
    assert run(data, "run", dump("one.jsonl", range(1, 4), None), "--only", "ingest", env=env).returncode == 0
    second = run(data, "run", dump("two.jsonl", range(4, 6), 3), "--only", "ingest", env=env)
    assert second.returncode == 0, second.stderr
    with sqlite3.connect(data / "archive.db") as conn:
        rows = conn.execute(
            "SELECT uuid, parent_id, is_active, seq FROM messages WHERE conversation_id = 'split' ORDER BY seq"
        ).fetchall()
    assert rows == [
        ("split:1", None, 1, 0),
        ("split:2", "split:1", 1, 1),
        ("split:3", "split:2", 1, 2),
        ("split:4", "split:3", 1, 3),
        ("split:5", "split:4", 1, 4),
    ]


# ---------------------------------------------------------------- a load killed while the graph server starts

STARTER = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from clients.graph_server import LocalServer
LocalServer(Path(sys.argv[1]), heap="512m", start_timeout_s=300).start()
"""


def _servers_of(directory: Path) -> list[int]:
    """Live processes started from the directory's java.args (what holds its database)."""
    import psutil

    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            line = " ".join(process.info["cmdline"] or [])
            if str(directory / "java.args") in line and process.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(process.pid)
        except psutil.Error:
            continue
    return found


def _kill_while_starting(graph_dir: Path, tmp_path: Path) -> int:
    """Start the local server from a process and SIGKILL that process before the server answers: the Java
    process lives on (parent 1), server.json is never written. Returns the Java pid."""
    script = tmp_path / "starter.py"
    script.write_text(STARTER.format(root=str(ROOT)), encoding="utf-8")
    starter = subprocess.Popen([sys.executable, str(script), str(graph_dir)], start_new_session=True)
    pid_file = graph_dir / "server.pid"  # written as soon as Java is started (`graph down` removes it)
    assert not pid_file.exists()
    wait_for("the server to be started", lambda: pid_file.exists() and pid_file.read_text().strip(), 120, starter)
    os.kill(starter.pid, signal.SIGKILL)
    starter.wait(timeout=30)
    assert not (graph_dir / "server.json").exists(), "the server answered before the kill: kill earlier"
    java = int((graph_dir / "server.pid").read_text().split()[0])
    found = _servers_of(graph_dir)
    assert found == [java], found
    return java


def test_a_server_left_by_a_load_killed_while_it_started_is_found_and_stopped(
    prefect_home: Path, tmp_path: Path
) -> None:
    """SIGKILL while the local graph server starts leaves Java holding the database with no server.json:
    `graph status` names it, `graph down` stops it, and `graph up` stops such a one and starts a server that
    answers (before the fix: "Database 'chatmem' is locked by another process")."""
    data = tmp_path / "data"
    graph_dir = data / "graph"
    env = process_env(prefect_home, CHATMEM_LOAD__LOCAL_HEAP="512m", CHATMEM_LOAD__LOCAL_START_TIMEOUT_S="300")
    try:
        stray = _kill_while_starting(graph_dir, tmp_path)
        status = run(data, "graph", "status", env=env)
        assert f"{stray}" in status.stdout and "never announced" in status.stdout, status.stdout
        down = run(data, "graph", "down", "--json", env=env)
        assert down.returncode == 0 and json.loads(down.stdout)["status"] == "stopped", down.stderr
        assert _servers_of(graph_dir) == []

        stray = _kill_while_starting(graph_dir, tmp_path)
        up = run(data, "graph", "up", "--json", env=env, timeout=400)
        assert up.returncode == 0, up.stderr[-2000:]
        started = json.loads(up.stdout)
        assert started["status"] == "started" and started["pid"] != stray
        assert _servers_of(graph_dir) == [started["pid"]]
        stats = run(data, "graph", "status", "--json", env=env)
        assert json.loads(stats.stdout)["local_server"]["running"] is True
    finally:
        run(data, "graph", "down", env=env)
    assert _servers_of(graph_dir) == []


# ---------------------------------------------------------------- a dead run whose pid was reused


def test_a_dead_run_whose_pid_now_belongs_to_another_process_shows_interrupted(
    prefect_home: Path, tmp_path: Path
) -> None:
    """A run recorded `running` by a process that is gone, its pid since given to another live process (here a
    `sleep`): `staging runs` compares the recorded start time too and shows it interrupted; the row of a live
    process with its own start time still shows running."""
    from staging.ledger import StageRun, open_run, open_staging
    from staging.liveness import process_start

    data = tmp_path / "data"
    data.mkdir()
    other = subprocess.Popen(["sleep", "300"])
    try:
        staging = open_staging(data / "staging.db")
        dead = open_run(staging, stages=["ingest"], exports=[], settings={}, code_version="test")
        StageRun(staging, run_id=dead, stage="ingest", input_fingerprint="x", settings={}, code_version="test")
        live = open_run(staging, stages=["ingest"], exports=[], settings={}, code_version="test")
        with staging:  # the dead run's pid, now the sleep's; its start time stays that of the process that ran it
            staging.execute("UPDATE runs SET pid = ? WHERE id = ?", (other.pid, dead))
            staging.execute("UPDATE stage_runs SET pid = ? WHERE run_id = ?", (other.pid, dead))
            staging.execute(
                "UPDATE runs SET pid = ?, pid_start = ? WHERE id = ?", (other.pid, process_start(other.pid), live)
            )
        staging.close()
        shown = run(data, "staging", "runs", "--json", env=process_env(prefect_home))
        assert shown.returncode == 0, shown.stderr
        status = {r["id"]: (r["status"], r.get("stage_status")) for r in json.loads(shown.stdout)}
        assert status[dead] == ("interrupted", {"ingest": "interrupted"})
        assert status[live][0] == "running"
    finally:
        other.kill()
        other.wait()
