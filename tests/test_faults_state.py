"""Faults of issue 13 in the state chatmem keeps and the servers it talks to, cases 6, 7 and 8: an LLM reply that
is not JSON, credentials in a base URL, a lost graph password, the graph server announced before it answers,
damaged databases and a full disk (a real 2 MiB tmpfs mounted by the test; see `full_disk`).
"""

from __future__ import annotations

import json
import resource
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from concept_support import conversation, open_dbs, write_archive
from fault_support import chatmem_command, process_env, said_lines, write_chats
from stage_support import stage_extract, stage_segment

from clients.graph_server import LocalServer
from contracts.errors import StageError
from flows.cli import cli
from staging import llm_calls
from tests import llm_guard, llm_server
from tests.llm_cases import SECRET, answer_for, extract_one, make_segment
from tests.llm_server import FakeLLMServer, Reply, quoting_responder

fake_llm = llm_server.fake_llm
no_real_model_requests = llm_guard.no_real_model_requests


def chatmem(*args: str | Path, data_dir: Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], catch_exceptions=False)


def one_error_line(result: Result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


# ---------------------------------------------------------------- case 6: the LLM


CHATS = {
    "garden": [("user", "I want to grow a vegetable garden this spring."), ("assistant", "Start with compost.")],
    "trip": [("user", "We are planning a trip to Lisbon in May."), ("assistant", "Take tram 28 early.")],
    "piano": [("user", "I practise piano every evening after dinner."), ("assistant", "Scales first, then pieces.")],
}


def test_a_200_reply_that_is_not_json_fails_that_segment_only(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """A gateway's HTML page with status 200: that segment fails, recorded in llm_calls with the body; the
    other segments are extracted and written, and the stage ends failed saying one segment failed (so that the
    next run retries it)."""
    fake_llm.responder = quoting_responder()
    fake_llm.reply_with(Reply.raw(b"<html><body>502 from the gateway</body></html>"))
    llm = {"base_url": fake_llm.base_url, "model": "m", "api_key": SECRET, "max_concurrency": 1, "max_retries": 0}
    dbs = open_dbs(tmp_path, extract={"llm": llm})
    write_archive(dbs.archive, [conversation(name, turns) for name, turns in CHATS.items()])
    run_id = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    with pytest.raises(StageError, match="1 segment failed of 3"):
        stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    [counts] = [json.loads(r[0]) for r in dbs.staging.execute("SELECT counts FROM stage_runs WHERE stage = 'extract'")]
    assert counts["failed"] == 1 and counts["hypotheses_kept"] == 2
    calls = llm_calls.calls(dbs.staging, run_id)
    [bad] = [c for c in calls if c["status"] != "ok"]
    assert (
        "HTTP 200 but the body is not the API's JSON" in bad["error"] and "502 from the gateway" in bad["raw_response"]
    )


def test_the_configured_key_is_sent_when_the_base_url_carries_credentials(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    """user:password@ in the base URL is not sent as Basic auth in place of the key: the server sees the key."""
    fake_llm.responder = quoting_responder()
    url = fake_llm.base_url.replace("http://", "http://someone:url-password@")
    dbs = open_dbs(tmp_path, extract={"llm": {"base_url": url, "model": "m", "api_key": SECRET}})
    write_archive(dbs.archive, [conversation("garden", CHATS["garden"])])
    run_id = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    [request] = fake_llm.model_requests()
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert "url-password" not in "\n".join(dbs.staging.iterdump())


def test_an_llm_title_with_escape_sequences_is_shown_without_them(fake_llm: FakeLLMServer) -> None:
    """A model that copies terminal escapes from the chat into a title: the concept's title is the text only."""
    answer = answer_for(make_segment())
    hypothesis = answer.hypotheses[0].model_copy(update={"title": "\x1b[1;31mKitchen renovation\x1b[0m\u202e"})
    result, _ = extract_one(fake_llm, Reply.valid(answer.model_copy(update={"hypotheses": [hypothesis]})))
    assert [h.title for h in result.hypotheses] == ["Kitchen renovation"]


# ---------------------------------------------------------------- case 7: the local graph server


@pytest.mark.slow
def test_a_lost_graph_password_is_refused_and_reset_keeps_the_graph(tmp_path: Path) -> None:
    """Without graph/password the server is not started with a silent new one: one line naming the file and
    `chatmem graph reset-password`, which sets a new password and keeps the data."""
    from neo4j import GraphDatabase

    data_dir = tmp_path / "data"
    server = LocalServer(data_dir / "graph", heap="512m", start_timeout_s=120)
    info, _ = server.start()
    try:
        with GraphDatabase.driver(info.uri, auth=("root", server.password())) as driver:
            driver.execute_query("CREATE (:Kept {name: 'still here'})", database_=info.database)
    finally:
        server.stop()
    server.password_path.unlink()
    refused = chatmem("graph", "up", data_dir=data_dir)
    line = one_error_line(refused)
    assert refused.exit_code == 1 and "password is missing" in line
    assert f"chatmem --data-dir {data_dir} graph reset-password" in line
    assert not server.password_path.exists()  # nothing generated behind the user's back
    try:
        reset = chatmem("graph", "reset-password", "--json", data_dir=data_dir)
        assert reset.exit_code == 0, reset.output
        info = server.status()
        assert info is not None
        with GraphDatabase.driver(info.uri, auth=("root", server.password())) as driver:
            records, _, _ = driver.execute_query("MATCH (n:Kept) RETURN n.name AS name", database_=info.database)
        assert [r["name"] for r in records] == ["still here"]
    finally:
        server.stop()


@pytest.mark.slow
def test_the_graph_server_is_announced_only_once_it_answers(tmp_path: Path) -> None:
    """server.json appears only when a query already succeeds: a reader never finds a server still starting."""
    from neo4j import GraphDatabase

    server = LocalServer(tmp_path / "graph", heap="512m", start_timeout_s=120)
    starter = threading.Thread(target=server.start)
    starter.start()
    info_path = tmp_path / "graph" / "server.json"
    try:
        deadline = time.monotonic() + 150
        while not info_path.exists() and starter.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        info = json.loads(info_path.read_text(encoding="utf-8"))
        with GraphDatabase.driver(f"bolt://127.0.0.1:{info['bolt_port']}", auth=("root", server.password())) as driver:
            records, _, _ = driver.execute_query("RETURN 1 AS one", database_=info["database"])
        assert records[0]["one"] == 1
    finally:
        starter.join()
        server.stop()


# ---------------------------------------------------------------- case 8: damaged state, a full disk


@pytest.fixture
def ingested(tmp_path: Path, jsonl_export: Path) -> Path:
    data_dir = tmp_path / "data"
    assert chatmem("run", jsonl_export, "--only", "ingest", data_dir=data_dir).exit_code == 0
    return data_dir


def test_an_empty_archive_is_refused_never_recreated(ingested: Path, jsonl_export: Path) -> None:
    """A 0-byte archive.db: `archive stats` and `run` say so in one line naming it; it stays 0 bytes."""
    archive = ingested / "archive.db"
    archive.write_bytes(b"")
    for args in (("archive", "stats"), ("run", jsonl_export, "--only", "ingest")):
        result = chatmem(*args, data_dir=ingested)
        line = one_error_line(result)
        assert result.exit_code == 1 and f"{archive}: the file is empty (0 bytes)" in line and "restore" in line
    assert archive.stat().st_size == 0


def test_an_empty_archive_given_to_run_is_refused_before_anything_is_written(
    tmp_path: Path, jsonl_export: Path
) -> None:
    """A data dir holding only a 0-byte archive.db: `run` refuses in one line and writes nothing (no staging.db,
    no Prefect state, no run row whose resume hint would fail again)."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "archive.db").write_bytes(b"")
    process = subprocess.run(
        [*chatmem_command(), "--data-dir", str(data_dir), "run", str(jsonl_export)],
        capture_output=True,
        text=True,
        env={k: v for k, v in process_env(tmp_path).items() if k != "PREFECT_HOME"},  # its default: DATA/prefect
        timeout=240,
    )
    lines = [line for line in process.stderr.splitlines() if line.strip()]
    assert process.returncode == 1 and len(lines) == 1 and "the file is empty (0 bytes)" in lines[0], process.stderr
    assert sorted(p.name for p in data_dir.iterdir()) == ["archive.db"]


@pytest.mark.parametrize("name", ["archive.db", "staging.db"])
def test_a_truncated_database_is_named_in_one_line(ingested: Path, jsonl_export: Path, name: str) -> None:
    """Half a database: inspection and `run` both answer with one line naming the file and what to do."""
    path = ingested / name
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    inspect = ("archive", "stats") if name == "archive.db" else ("staging", "runs")
    for args in (inspect, ("run", jsonl_export, "--only", "ingest")):
        result = chatmem(*args, data_dir=ingested)
        line = one_error_line(result)
        assert result.exit_code == 1 and f"{path}: truncated" in line and "move it away" in line
    assert len(path.read_bytes()) == len(data) // 2


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A real full filesystem: a 2 MiB tmpfs mounted for the test (root only). Where mounting is not allowed, the
    same ingest runs under RLIMIT_FSIZE (a real write limit, reported by the kernel as EFBIG) instead."""
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)], capture_output=True)
    try:
        yield mount_point, "tmpfs" if mounted.returncode == 0 else "rlimit"
    finally:
        if mounted.returncode == 0:
            subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1_500_000, 1_500_000))


@pytest.mark.slow
def test_a_full_disk_during_ingest_is_one_line_naming_the_file(full_disk: tuple[Path, str], tmp_path: Path) -> None:
    """Ingest that fills the disk: exit 1, one line naming archive.db (the file that could not be written), the
    full disk and the re-run command;
    the run shows as interrupted afterwards; `archive stats` still answers (or says why in one line)."""
    mount_point, kind = full_disk
    data_dir = mount_point / "data"
    export = write_chats(tmp_path / "big.jsonl", 1500)
    env = process_env(tmp_path / "prefect")
    limit = _limit_file_size if kind == "rlimit" else None
    command = [*chatmem_command(), "--data-dir", str(data_dir), "run", str(export), "--only", "ingest"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240, preexec_fn=limit)
    assert result.returncode == 1, result.stderr[-2000:]
    lines = said_lines(result.stderr)  # the run's progress lines aside
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    # the file that could not be written, not the data dir and both files
    assert f"{data_dir / 'archive.db'}: " in lines[0]
    assert f"re-run: chatmem --data-dir {data_dir} stage ingest --run-id" in lines[0]
    assert "staging.db" not in lines[0]
    if kind == "tmpfs":
        assert "the disk is full" in lines[0] and shutil.disk_usage(mount_point).free < 64 * 1024
    runs = subprocess.run(
        [*chatmem_command(), "--data-dir", str(data_dir), "staging", "runs", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert json.loads(runs.stdout)[0]["status"] in ("interrupted", "failed")
    stats = subprocess.run(
        [*chatmem_command(), "--data-dir", str(data_dir), "archive", "stats", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert "Traceback" not in stats.stderr
    assert stats.returncode == 0 or (stats.returncode == 1 and str(data_dir) in stats.stderr)


# ---------------------------------------------------------------- case 3: the data-dir lock, in-process


def test_a_held_data_dir_refuses_run_and_skips_a_scheduled_look(tmp_path: Path, jsonl_export: Path) -> None:
    """While another writer holds the lock, `run` refuses in one line naming it and the watch flow skips this
    look with the same reason (the next one retries); read-only commands still answer."""
    from staging.lock import data_dir_lock

    data_dir, watch = tmp_path / "data", tmp_path / "watch"
    assert chatmem("run", jsonl_export, "--only", "ingest", data_dir=data_dir).exit_code == 0
    watch.mkdir()
    write_chats(watch / "more.jsonl", 2)
    with data_dir_lock(data_dir, "r-manual"):
        refused = chatmem("run", jsonl_export, "--only", "ingest", data_dir=data_dir)
        assert refused.exit_code == 1 and "in use by run r-manual (pid" in one_error_line(refused)
        looked = chatmem("serve", "--once", "--watch", watch, "--json", data_dir=data_dir)
        assert looked.exit_code == 1 and "in use by run r-manual" in json.loads(looked.stdout)["error"]
        assert chatmem("archive", "stats", data_dir=data_dir).exit_code == 0
    assert chatmem("serve", "--once", "--watch", watch, data_dir=data_dir).exit_code == 0


def test_a_failure_a_ctrl_c_caused_is_recorded_as_the_interruption(tmp_path: Path) -> None:
    """Ctrl-C in a library's socket read can surface as that library's own error (the neo4j driver's BufferError
    on reset): rows it marked failed after the signal become interrupted; a failure before the signal stays."""
    from datetime import UTC, datetime

    from staging.ledger import StageRun, close_run, open_run, open_staging
    from staging.liveness import mark_interrupted

    conn = open_staging(tmp_path / "staging.db")
    run_id = open_run(conn, stages=["embed", "load"], exports=[], settings={}, code_version="t")
    earlier = StageRun(conn, run_id=run_id, stage="embed", input_fingerprint="f", settings={}, code_version="t")
    earlier.fail("ValueError: before the signal", "chatmem stage embed --run-id R")
    time.sleep(0.01)
    signalled_at = datetime.now(UTC).isoformat()
    load = StageRun(conn, run_id=run_id, stage="load", input_fingerprint="f", settings={}, code_version="t")
    load.fail("BufferError: Existing exports of data: object cannot be re-sized", "chatmem stage load --run-id R")
    close_run(conn, run_id, error="BufferError: ...")
    mark_interrupted(conn, run_id, "load", failed_since=signalled_at)
    statuses = dict(conn.execute("SELECT stage, status FROM stage_runs WHERE run_id = ?", (run_id,)).fetchall())
    assert statuses == {"embed": "failed", "load": "interrupted"}
    assert conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0] == "interrupted"
    conn.close()


def test_a_truncated_database_is_refused_even_while_its_wal_holds_pages(tmp_path: Path) -> None:
    """The size check no longer steps aside when a -wal file holds pages: a file cut short is refused in one line
    naming it; the same database whole, with its WAL, passes."""
    import sqlite3

    from contracts.errors import StateError
    from staging.db import check_database

    live = tmp_path / "live.db"
    conn = sqlite3.connect(live)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE t (x TEXT)")
    conn.executemany("INSERT INTO t VALUES (?)", [("x" * 500,) for _ in range(2000)])
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.executemany("INSERT INTO t VALUES (?)", [("y" * 500,) for _ in range(200)])
    conn.commit()  # these pages stay in the WAL (no checkpoint)
    whole, cut = tmp_path / "whole" / "archive.db", tmp_path / "cut" / "archive.db"
    for target in (whole, cut):
        target.parent.mkdir()
        shutil.copy(live, target)
        shutil.copy(live.with_name("live.db-wal"), target.with_name("archive.db-wal"))
    conn.close()
    assert cut.with_name("archive.db-wal").stat().st_size > 0
    with cut.open("r+b") as handle:
        handle.truncate(cut.stat().st_size // 2)
    check_database(whole)
    with pytest.raises(StateError, match="truncated"):
        check_database(cut)


def test_a_run_stopped_before_staging_db_exists_leaves_no_empty_file(tmp_path: Path) -> None:
    """Recording an interruption never creates staging.db (a 0-byte one made every later command, the printed
    resume command included, refuse the data dir); a database chatmem creates is whole from the start."""
    from contracts.settings import Settings
    from flows.interrupt import _Interruption
    from staging.db import connect

    settings = Settings(data_dir=tmp_path / "data")
    settings.data_dir.mkdir()  # the data dir exists (the lock file is in it); staging.db does not yet
    _Interruption(settings, "r-early", ["ingest"]).record()
    assert not settings.staging_path.exists()
    conn = connect(settings.staging_path)
    conn.close()
    assert settings.staging_path.stat().st_size > 0
    assert not list(settings.staging_path.parent.glob(".staging.db.*.new"))
