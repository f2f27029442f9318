"""Faults against the real Bolt server: a killed server, wrong credentials, no server, no database, no Java."""

from __future__ import annotations

import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from neo4j.exceptions import (
    AuthError,
    ConstraintError,
    CypherSyntaxError,
    IncompleteCommit,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from clients.graph import is_transient
from clients.graph_server import free_port
from contracts.errors import StageError
from tests.graph_helpers import GraphEnv, expected, ingest, load, write_branchy_jsonl

pytest_plugins = ["tests.graph_fixtures"]


def _ledger(staging_path: Path, sql: str, *args: object) -> list[sqlite3.Row]:
    conn = sqlite3.connect(staging_path)
    conn.row_factory = sqlite3.Row
    rows = conn.execute(sql, args).fetchall()
    conn.close()
    return rows


def test_only_transient_errors_are_retried() -> None:
    """The predicate: lost connections and Neo.TransientError.* yes; auth, constraints, syntax no."""
    deadlock = Neo4jError._hydrate_neo4j(code="Neo.TransientError.Transaction.DeadlockDetected", message="x")
    transient = (ServiceUnavailable("down"), SessionExpired("gone"), IncompleteCommit("?"), TransientError(), deadlock)
    for error in transient:
        assert is_transient(error), error
    for error in (AuthError(), ConstraintError(), CypherSyntaxError(), ValueError("not a driver error")):
        assert not is_transient(error), error


@pytest.mark.slow
def test_a_server_killed_mid_load_then_restarted_ends_like_a_clean_load(graph: GraphEnv, tmp_path: Path) -> None:
    """kill -9 of the Java process after two Message batches; restart; the re-run resumes at the failed batch."""
    settings = graph.settings(tmp_path / "data", batch_size=20, retries=1, retry_backoff_s=0.05)
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=10, turns=12))
    done: list[str] = []

    @contextmanager
    def kill_after_three_batches(label: str, total: int) -> Iterator[Callable[[int], object]]:
        def advance(rows: int) -> None:
            done.append(label)
            if len(done) == 3:  # Conversation batch 1, Message batches 1 and 2
                graph.bolt.kill()

        yield advance

    with pytest.raises(StageError) as caught:
        load(settings, run_id, progress=kill_after_three_batches)
    cause = caught.value.cause
    assert "\n" not in str(caught.value) and graph.uri in cause and "unavailable" in cause
    batches = _ledger(settings.staging_path, "SELECT * FROM load_batches WHERE run_id = ? ORDER BY rowid", run_id)
    assert [(b["layer"], b["batch_no"], b["status"]) for b in batches] == [
        ("Conversation", 1, "done"),
        ("Message", 1, "done"),
        ("Message", 2, "done"),
        ("Message", 3, "failed"),
    ]
    assert batches[-1]["attempts"] == 2  # one retry, on a transient error
    manifest = _ledger(settings.staging_path, "SELECT layer, COUNT(*) AS n FROM load_manifest GROUP BY layer")
    assert {r["layer"]: r["n"] for r in manifest} == {"Conversation": 10, "Message": 40}  # the failed batch is not

    graph.bolt.ensure_up()  # the same ports, so the same URI; ArcadeDB recovers the database from its WAL
    result = load(settings, run_id)
    assert result.status == "succeeded" and result.counts["batches_resumed"] == 3
    message_batches = _ledger(
        settings.staging_path,
        "SELECT batch_no, status, attempts FROM load_batches WHERE run_id = ? AND layer = 'Message' ORDER BY batch_no",
        run_id,
    )
    assert [tuple(b) for b in message_batches][:4] == [(1, "done", 1), (2, "done", 1), (3, "done", 3), (4, "done", 1)]
    assert graph.counts() == expected(settings)
    duplicates = graph.query("MATCH (m:Message) WITH m.id AS id, count(*) AS n WHERE n > 1 RETURN count(id) AS d")
    assert duplicates == [{"d": 0}]


def _assert_failed_cleanly(settings_path: Path, run_id: str) -> None:
    """The stage run is failed with its re-run hint; no batch and no manifest row claims anything was written."""
    [stage] = _ledger(settings_path, "SELECT * FROM stage_runs WHERE run_id = ? AND stage = 'load'", run_id)
    assert stage["status"] == "failed" and stage["rerun_hint"] == f"chatmem stage load --run-id {run_id}"
    assert _ledger(settings_path, "SELECT * FROM load_batches WHERE status = 'done'") == []
    assert _ledger(settings_path, "SELECT * FROM load_manifest") == []


def test_a_wrong_password_is_one_line_naming_the_uri(graph: GraphEnv, tmp_path: Path) -> None:
    settings = graph.settings(tmp_path / "data", password="not-the-password")
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=1))
    with pytest.raises(StageError) as caught:
        load(settings, run_id)
    message = str(caught.value)
    assert "\n" not in message and graph.uri in message and "authentication failed" in message
    assert "not-the-password" not in message and caught.value.exit_code == 1
    _assert_failed_cleanly(settings.staging_path, run_id)


def test_no_server_at_the_uri_is_one_line_and_fails_fast(graph: GraphEnv, tmp_path: Path) -> None:
    uri = f"bolt://127.0.0.1:{free_port()}"
    settings = graph.settings(tmp_path / "data", uri=uri)
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=1))
    failed: list[BaseException] = []

    def attempt() -> None:
        try:
            load(settings, run_id)
        except BaseException as exc:  # the StageError, checked below
            failed.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=60)  # a bounded wait on the failure itself: no retry loop against a refused port
    assert not worker.is_alive(), "the load kept trying a URI where nothing listens"
    with pytest.raises(StageError) as caught:
        raise failed[0]
    assert "\n" not in str(caught.value) and uri in caught.value.cause and "server unavailable" in caught.value.cause
    _assert_failed_cleanly(settings.staging_path, run_id)


def test_a_missing_database_is_one_line_naming_it(graph: GraphEnv, tmp_path: Path) -> None:
    settings = graph.settings(tmp_path / "data", database="no_such_db")
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=1))
    with pytest.raises(StageError) as caught:
        load(settings, run_id)
    cause = caught.value.cause
    assert "\n" not in cause and graph.uri in cause and "no_such_db" in cause and "no such database" in cause
    _assert_failed_cleanly(settings.staging_path, run_id)


def test_a_local_server_whose_java_cannot_start_fails_the_stage_clearly(tmp_path: Path) -> None:
    """No NEO4J_URI, and the JVM exits at once: the stage fails with the exit code and the log, no hang."""
    from contracts.settings import Settings

    settings = Settings(data_dir=tmp_path / "data", load={"local_server": True, "java": "/bin/false"})
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=1))
    with pytest.raises(StageError) as caught:
        load(settings, run_id)
    assert "local graph server exited with code 1 while starting" in caught.value.cause
    _assert_failed_cleanly(settings.staging_path, run_id)


def test_a_local_server_that_never_answers_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    from clients.graph_target import local_server
    from contracts.settings import Settings

    hang = tmp_path / "java"
    hang.write_text("#!/bin/sh\nexec sleep 600\n")
    hang.chmod(hang.stat().st_mode | stat.S_IXUSR)
    settings = Settings(
        data_dir=tmp_path / "data", load={"local_server": True, "java": str(hang), "local_start_timeout_s": 1.5}
    )
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=1))
    with pytest.raises(StageError) as caught:
        load(settings, run_id)
    assert "did not answer at bolt://127.0.0.1:" in caught.value.cause and "within 2 s" in caught.value.cause
    # Never announced (server.json is written once a query succeeds), and killed and reaped, not left behind.
    assert not (settings.graph_dir / "server.json").exists() and local_server(settings).status() is None
    assert [c for c in psutil.Process().children(recursive=True) if _cmdline(c) == "sleep 600"] == []


def _cmdline(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:  # gone, or a zombie another test left unreaped: not our sleeping server
        return ""
