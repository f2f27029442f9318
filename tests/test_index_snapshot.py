"""A recall index build reads its staging.db inputs (content rows, key texts, edges, facts) in many statements: it
reads them in one snapshot (staging.db.read_snapshot), so a later cues run's prune committed by another process
between two of those reads changes nothing the build sees (before: the key texts no longer followed the content
rows, and the build failed with ValueError)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import pytest
from concept_support import Dbs
from test_index_store import built_memory, same

from memory import index_store
from memory.index import MemoryIndex, key_embedder, load_index
from memory.index_store import open_index
from staging import memory as store
from staging import memory_history as history
from staging.db import Transaction, connect, connect_readonly


@pytest.fixture(autouse=True)
def every_array_in_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_store, "STORED_FROM", 1)


@pytest.fixture
def built(tmp_path: Path) -> Dbs:
    return built_memory(tmp_path)


def later_run_prunes(dbs: Dbs, run_id: str) -> None:
    """What another process's later cues run does to run `run_id`'s rows, committed: it retires some of its message
    rows (as an incremental run retires the conversations it rebuilds) and its prune, keeping only itself, deletes
    them with run `run_id`'s memory_runs row."""
    later = f"{run_id}~later"  # run ids sort by time: this one is newer
    conn = connect(dbs.settings.staging_path)
    try:
        with Transaction(conn):
            conn.execute(
                "INSERT INTO memory_runs SELECT ?, content, cues, tags, edges, hubs, merged, summary"
                " FROM memory_runs WHERE run_id = ?",
                (later, run_id),
            )
            conn.execute(
                "UPDATE memory_content SET retired_run_id = ? WHERE content_id IN (SELECT content_id"
                " FROM memory_content WHERE kind = 'message' ORDER BY content_id LIMIT 3)",
                (later,),
            )
        assert history.prune(conn, [later]) == [run_id]
        assert conn.execute("SELECT COUNT(*) FROM memory_content WHERE retired_run_id = ?", (later,)).fetchone()[0] == 0
    finally:
        conn.close()


def prune_between_reads(dbs: Dbs, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A hook: the build's first read of the key texts (after it read the content rows) lets the later run prune
    first. Returns the runs it was called for."""
    original = store.iter_key_texts
    called: list[str] = []

    def pruned_first(conn: object, run_id: str) -> Iterator[tuple[str, str]]:
        if not called:
            called.append(run_id)
            later_run_prunes(dbs, run_id)
        return original(conn, run_id)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "iter_key_texts", pruned_first)
    return called


def assert_same(found: MemoryIndex, expected: MemoryIndex) -> None:
    for f in fields(MemoryIndex):
        if f.name not in ("texts", "titles", "prepass", "coarse", "projection"):
            assert same(getattr(found, f.name), getattr(expected, f.name)), f.name


def test_a_prune_between_the_reads_of_a_build_changes_nothing_it_reads(
    built: Dbs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load_index: the later run's prune commits between the content rows and the key texts; the build is the one
    of the run as it was when the build began."""
    embedder = key_embedder(built.settings)
    expected = load_index(built.archive, built.staging, built.settings, embedder, keep_texts=False)
    called = prune_between_reads(built, monkeypatch)
    found = load_index(built.archive, built.staging, built.settings, embedder, keep_texts=False)
    assert called == [expected.run_id]
    assert_same(found, expected)
    assert not built.staging.in_transaction, "the snapshot ends with the build"
    gone = built.staging.execute("SELECT COUNT(*) FROM memory_runs WHERE run_id = ?", (expected.run_id,)).fetchone()
    assert gone[0] == 0, "the prune did commit: the build read the snapshot taken before it"


def test_the_stored_index_is_built_from_one_snapshot(built: Dbs, monkeypatch: pytest.MonkeyPatch) -> None:
    """open_index (read-only connections, as `chatmem recall` and the MCP server open them): the prune commits
    during the build; the index stored is the run's as it was when the open began."""
    embedder = key_embedder(built.settings)
    expected = load_index(built.archive, built.staging, built.settings, embedder, keep_texts=False)
    called = prune_between_reads(built, monkeypatch)
    archive, staging = connect_readonly(built.settings.archive_path), connect_readonly(built.settings.staging_path)
    try:
        found = open_index(archive, staging, built.settings, embedder)
        assert not staging.in_transaction and not archive.in_transaction
    finally:
        archive.close()
        staging.close()
    assert called == [expected.run_id]
    assert_same(found, expected)
