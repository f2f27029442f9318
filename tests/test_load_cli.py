"""`chatmem graph ...` and the load stage inside `chatmem run`, in-process, against the session's real server."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
import pytest
from click.testing import CliRunner, Result

from clients.graph_server import left_as_found
from flows.cli import cli
from tests.graph_helpers import BoltServer, GraphEnv, write_branchy_jsonl

pytest_plugins = ["tests.graph_fixtures"]


def chatmem(*args: str | Path, data_dir: Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], catch_exceptions=False)


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.prefect
def test_run_loads_the_graph_and_stats_json_matches_what_staging_expects(
    graph: GraphEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With NEO4J_* set, `chatmem run` loads that graph; `graph stats --json` has the documented shape."""
    graph.env(monkeypatch)
    data_dir, export = tmp_path / "data", write_branchy_jsonl(tmp_path / "a.jsonl")
    assert chatmem("run", export, "--only", "ingest", data_dir=data_dir).exit_code == 0
    loaded = chatmem("run", export, "--only", "load", data_dir=data_dir)
    assert loaded.exit_code == 0, loaded.output
    assert "load: succeeded" in loaded.stdout and graph.password not in loaded.output
    stats = as_json(chatmem("graph", "stats", "--json", data_dir=data_dir))
    assert set(stats) == {"nodes", "edges", "expected"}
    # Every stage's tables exist from the first open (staging migrations), so later layers expect 0 rows.
    assert {kind: {k: n for k, n in counts.items() if n} for kind, counts in stats["expected"].items()} == {
        "nodes": {"Conversation": 3, "Message": 24},
        "edges": {"HAS_MESSAGE": 24, "NEXT": 15, "BRANCH": 6},
    }
    assert all(stats["nodes"].get(k, 0) == n for k, n in stats["expected"]["nodes"].items())
    assert all(stats["edges"].get(k, 0) == n for k, n in stats["expected"]["edges"].items())
    assert set(stats["edges"]) <= set(stats["expected"]["edges"])
    text = chatmem("graph", "stats", data_dir=data_dir).stdout
    assert graph.uri in text and "HAS_MESSAGE" in text


@pytest.mark.prefect
def test_a_wrong_password_exits_1_with_one_error_line(
    graph: GraphEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph.env(monkeypatch, NEO4J_PASSWORD="definitely-wrong")
    data_dir, export = tmp_path / "data", write_branchy_jsonl(tmp_path / "a.jsonl", conversations=1)
    assert chatmem("run", export, "--only", "ingest", data_dir=data_dir).exit_code == 0
    result = chatmem("run", export, "--only", "load", data_dir=data_dir)
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    [error] = errors
    assert graph.uri in error and "authentication failed" in error
    assert f"chatmem --data-dir {data_dir} stage load --run-id" in error
    assert "definitely-wrong" not in result.output
    stats = chatmem("graph", "stats", data_dir=data_dir)
    assert stats.exit_code == 1 and "authentication failed" in stats.stderr


@pytest.mark.prefect
def test_without_a_graph_the_load_stage_is_skipped_and_says_why(tmp_path: Path) -> None:
    """The test session turns the local server off (conftest): no NEO4J_URI means no graph, exit 0."""
    data_dir, export = tmp_path / "data", write_branchy_jsonl(tmp_path / "a.jsonl", conversations=1)
    result = chatmem("run", export, "--only", "ingest", data_dir=data_dir)
    result = chatmem("run", export, "--only", "load", data_dir=data_dir)
    assert result.exit_code == 0, result.output
    assert "load: skipped" in result.stdout and "no NEO4J_URI is set" in result.stdout
    stats = chatmem("graph", "stats", data_dir=data_dir)
    assert stats.exit_code == 1 and "not loaded" in stats.stderr


@pytest.mark.prefect
@pytest.mark.slow
def test_graph_up_down_status_and_run_starting_the_local_server(
    bolt_server: BoltServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session server's directory as the local server: down, status, `run` starts it (announced once) and stops
    it as it ends (a batch run leaves no Java server behind), up; a server the user started keeps running."""
    monkeypatch.setenv("CHATMEM_LOAD__LOCAL_SERVER", "true")
    monkeypatch.setenv("CHATMEM_LOAD__LOCAL_DIR", str(bolt_server.server.directory))
    monkeypatch.setenv("CHATMEM_LOAD__LOCAL_HEAP", "1g")
    data_dir, export = tmp_path / "data", write_branchy_jsonl(tmp_path / "a.jsonl", conversations=2)
    data_dir.mkdir()  # the graph commands answer for a data dir that exists (a missing one: one error line)
    before = bolt_server.ensure_up()
    status = as_json(chatmem("graph", "status", "--json", data_dir=data_dir))
    assert status["local_server"]["running"] and status["local_server"]["uri"] == before.uri
    assert as_json(chatmem("graph", "down", "--json", data_dir=data_dir))["status"] == "stopped"
    assert not as_json(chatmem("graph", "status", "--json", data_dir=data_dir))["local_server"]["running"]
    assert "not running" in chatmem("graph", "status", data_dir=data_dir).stdout

    assert chatmem("run", export, "--only", "ingest", data_dir=data_dir).exit_code == 0
    loaded = chatmem("run", export, "--only", "load", data_dir=data_dir)
    assert loaded.exit_code == 0, loaded.output
    assert loaded.stdout.count("graph: started the local ArcadeDB server for this run (stopped when it ends") == 1
    assert not as_json(chatmem("graph", "status", "--json", data_dir=data_dir))["local_server"]["running"]
    assert bolt_server.server.strays() == []  # no Java process of that directory left at all
    up_result = chatmem("graph", "up", "--json", data_dir=data_dir)
    up = as_json(up_result)
    assert up["status"] == "started" and up["uri"] == before.uri  # the same ports after a restart
    stats = as_json(chatmem("graph", "stats", "--json", data_dir=data_dir))
    assert {k: n for k, n in stats["expected"]["nodes"].items() if n} == {"Conversation": 2, "Message": 16}
    again = chatmem("run", export, "--only", "load", "--force", data_dir=data_dir)
    assert again.exit_code == 0 and "graph: using the local ArcadeDB server (running before" in again.stdout
    assert as_json(chatmem("graph", "status", "--json", data_dir=data_dir))["local_server"]["pid"] == up["pid"]

    password = bolt_server.server.password()
    directory = bolt_server.server.directory
    for private in (directory / "password", directory / "java.args"):
        assert private.stat().st_mode & 0o777 == 0o600
    process = psutil.Process(up["pid"])
    assert password not in " ".join(process.cmdline())
    listening = [c.laddr for c in process.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
    assert listening and all(addr.ip in ("127.0.0.1", "::ffff:127.0.0.1") for addr in listening), listening
    for result in (loaded, up_result):
        assert password not in result.output
    assert password not in (directory / "server.log").read_text(errors="replace")


@pytest.mark.slow
def test_a_run_starts_the_local_server_as_its_cues_stage_begins_and_stops_it_as_it_ends(
    bolt_server: BoltServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forced run (or one with work before its cues stage) starts the local server on a thread as cues begins,
    before the load stage starts; the load takes that server, and the run stops it as it ends, leaving no Java
    process."""
    monkeypatch.setenv("CHATMEM_LOAD__LOCAL_SERVER", "true")
    monkeypatch.setenv("CHATMEM_LOAD__LOCAL_DIR", str(bolt_server.server.directory))
    monkeypatch.setenv("CHATMEM_LOAD__LOCAL_HEAP", "1g")
    data_dir, export = tmp_path / "data", write_branchy_jsonl(tmp_path / "a.jsonl", conversations=3)
    bolt_server.ensure_up()
    assert as_json(chatmem("graph", "down", "--json", data_dir=data_dir))["status"] == "stopped"
    assert chatmem("run", export, "--to", "cluster", data_dir=data_dir).exit_code == 0
    result = chatmem("run", export, "--from", "cluster", "--force", "--json", data_dir=data_dir)
    run = as_json(result)
    assert run["status"] == "succeeded" and [s["stage"] for s in run["stages"]] == ["cluster", "cues", "load"]
    assert not as_json(chatmem("graph", "status", "--json", data_dir=data_dir))["local_server"]["running"]
    assert bolt_server.server.strays() == []
    started = json.loads((bolt_server.server.directory / "server.json").read_text())["started_at"]
    with sqlite3.connect(data_dir / "staging.db") as staging:
        stage_times = {
            stage: (datetime.fromisoformat(begun), datetime.fromisoformat(ended))
            for stage, begun, ended in staging.execute(
                "SELECT stage, started_at, finished_at FROM stage_runs WHERE run_id = ?", (run["run_id"],)
            )
        }
    assert stage_times["cluster"][1] <= datetime.fromisoformat(started) < stage_times["load"][0]


@pytest.mark.slow
def test_a_server_started_ahead_of_a_load_that_never_comes_is_stopped_with_the_run(bolt_server: BoltServer) -> None:
    """A run that fails between the background start and its load (here: nothing takes the start) leaves no Java
    process: `left_as_found` waits for the start to end, then stops the server the block started."""
    server = bolt_server.server
    bolt_server.ensure_up()
    server.stop()
    with left_as_found(server):
        server.start_in_background()
    assert server.status() is None and server.strays() == []
    info, started = server.start()  # nothing of the old start is left to take: a start of its own
    assert started and server.status() == info
