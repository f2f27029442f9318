"""memory/mcp_server.MemoryService: the memory (its recall index) is opened once per process and reopened only
for a newer run; the concept catalog is cached the same way; every connection it hands out is read-only."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive

from contracts.errors import ChatmemError
from contracts.mcp import ConceptSearchRequest
from contracts.memory import RecallRequest
from contracts.settings import Settings
from extract import stage_concepts, stage_extract, stage_segment
from memory import stage as cues
from memory.mcp_server import MemoryService

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
