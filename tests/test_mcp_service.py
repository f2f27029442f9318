"""memory/mcp_server.MemoryService: the memory (its recall index) is opened once per process and reopened only
for a newer run; the concept catalog is cached the same way; every connection it hands out is read-only."""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive
from mcp.server.mcpserver.exceptions import ToolError
from stage_support import cues_stage as cues
from stage_support import stage_concepts, stage_extract, stage_segment

from contracts.errors import ChatmemError
from contracts.mcp import ConceptSearchRequest, TimelineRequest
from contracts.memory import RecallRequest
from contracts.settings import Settings
from flows.cli_memory import parse_time
from memory.mcp_server import MemoryService, build_server

TRIP = [("user", "We are planning a trip to Lisbon in May."), ("assistant", "Lisbon in May: take tram 28 early.")]
GARDEN = [("user", "The tomatoes in the garden need compost."), ("assistant", "Compost and sun help tomatoes.")]


@pytest.fixture
def built(tmp_path: Path) -> Dbs:
    """segment -> extract -> concepts -> cues on two conversations (keys embedded by the default embedder)."""
    dbs = open_dbs(tmp_path, memory={"key_embedder": "embed"})
    write_archive(dbs.archive, [conversation("trip", TRIP), conversation("garden", GARDEN)])
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts, cues):
        stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    return dbs


def test_the_index_is_loaded_once_and_reloaded_for_a_newer_run(built: Dbs) -> None:
    """Two recalls share one index; after a new cues run the next call loads that run's index."""
    service = MemoryService(built.settings)
    first = service.recall(RecallRequest(query="Lisbon tram"))
    assert min(first.pieces, key=lambda p: p.rank).conversation_id == "trip"
    with service.databases() as (_, staging):
        memory = service.memory(staging)
        assert service.memory(staging) is memory
    time.sleep(1.1)  # run ids sort by their second, then a random suffix: the next one must sort after
    newer = built.run_id()
    cues.run(built.archive, built.staging, run_id=newer, settings=built.settings)
    with service.databases() as (_, staging):
        reloaded = service.memory(staging)
    assert reloaded is not memory and reloaded.index.run_id == newer and memory.index.run_id != newer


def test_the_connections_it_hands_out_cannot_write(built: Dbs) -> None:
    """archive.db and staging.db are opened read-only: a write is refused by SQLite itself."""
    service = MemoryService(built.settings)
    with service.databases() as (archive, staging):
        for conn in (archive, staging):
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                conn.execute("CREATE TABLE intruder (x)")


def test_a_data_dir_without_databases_is_refused_before_serving(tmp_path: Path) -> None:
    """check() names the missing file and the command that makes it."""
    service = MemoryService(Settings(data_dir=tmp_path / "none"))
    with pytest.raises(ChatmemError, match=r"archive\.db does not exist.*chatmem run"):
        service.check()


def test_the_concept_catalog_is_reused_until_the_concept_store_changes(built: Dbs) -> None:
    """search_concepts scores one cached catalog; a concepts run that adds concepts makes the next search rebuild it."""
    service = MemoryService(built.settings)
    with service.databases() as (_, staging):
        catalog = service.catalog(staging)
        assert service.catalog(staging) is catalog and "Sourdough starter" not in {r.title for r in catalog.rows}
    time.sleep(1.1)  # stage runs are told apart by their finish time
    bread = [("user", "My sourdough starter smells of acetone. The sourdough starter is hungry.")]
    write_archive(built.archive, [conversation("bread", bread)], tag="b")
    run_id = built.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts):
        stage.run(built.archive, built.staging, run_id=run_id, settings=built.settings)
    with service.databases() as (_, staging):
        rebuilt = service.catalog(staging)
        found = service.search_concepts(ConceptSearchRequest(query="sourdough starter"))
    assert rebuilt is not catalog and found.concepts and found.concepts[0].title == "Sourdough starter"


def call_tool(service: MemoryService, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call through the SDK's own argument handling (the server in-process, no transport)."""
    server = build_server(service)
    result = anyio.run(server.call_tool, name, arguments)
    assert not result.is_error and isinstance(result.structured_content, dict), result
    return result.structured_content


def tool_error(service: MemoryService, name: str, arguments: dict[str, Any]) -> str:
    with pytest.raises(ToolError) as caught:
        call_tool(service, name, arguments)
    return str(caught.value)


def test_mcp_reads_a_plain_date_as_the_cli_does(built: Dbs) -> None:
    """at/until "2024-03-01" mean the end of that day and since its start, exactly as the CLI's --at / --scope."""
    service = MemoryService(built.settings)
    day = "2024-03-01"  # the messages were written at 09:00 that day
    at_day = call_tool(service, "recall", {"query": "Lisbon tram", "at": day})
    assert "trip" in {p["conversation_id"] for p in at_day["pieces"]} and at_day["at"].startswith(day + "T23:59:59")
    one_day = call_tool(service, "recall", {"query": "Lisbon tram", "scope": {"since": day, "until": day}})
    assert one_day["empty_reason"] is None and "trip" in {p["conversation_id"] for p in one_day["pieces"]}
    request = RecallRequest.model_validate({"query": "x", "at": day, "scope": {"since": day, "until": day}})
    assert request.at == parse_time(day, "--at", end_of_day=True)
    assert request.scope.until == parse_time(day, "until:", end_of_day=True)
    assert request.scope.since == parse_time(day, "since:") == datetime(2024, 3, 1, tzinfo=UTC)
    timeline = TimelineRequest.model_validate({"concept": "x", "since": day, "until": day})
    assert (timeline.since, timeline.until) == (request.scope.since, request.scope.until)
    schema = {tool.name: tool.input_schema for tool in anyio.run(build_server(service).list_tools)}
    assert "end of that day" in schema["recall"]["properties"]["at"]["description"]
    assert "end of that day" in json.dumps(schema["timeline"]["properties"]["until"])


def test_timeline_with_since_after_until_is_a_one_line_error(built: Dbs) -> None:
    """timeline rejects since > until with one line, like recall's scope, instead of answering total 0."""
    service = MemoryService(built.settings)
    text = tool_error(service, "timeline", {"concept": "Lisbon", "since": "2024-06-01", "until": "2024-01-01"})
    assert "is after until" in text and "\n" not in text
    recall = tool_error(service, "recall", {"query": "x", "scope": {"since": "2024-06-01", "until": "2024-01-01"}})
    assert "is after until" in recall


def test_unknown_top_level_arguments_are_rejected_on_every_tool(built: Dbs) -> None:
    """An argument a tool does not take is a one-line error naming it, as an unknown key inside scope is."""
    service = MemoryService(built.settings)
    calls = {
        "recall": {"query": "tram"},
        "search_concepts": {"query": "tram"},
        "get_conversation": {"conversation_id": "trip"},
        "timeline": {"concept": "Lisbon"},
        "topics": {},
    }
    for name, arguments in calls.items():
        text = tool_error(service, name, {**arguments, "extra_arg": 1})
        assert text.startswith(f"invalid arguments to {name}: extra_arg: extra inputs are not permitted"), text
        assert "\n" not in text
    nested = tool_error(service, "recall", {"query": "tram", "scope": {"extra_arg": 1}})
    assert nested.startswith("invalid arguments to recall: scope.extra_arg: extra inputs are not permitted"), nested
