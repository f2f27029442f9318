"""The load stage's pure parts: the diff against the manifest, batching, Cypher building, settings. No server."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from clients.graph import redact
from contracts.settings import Settings
from load import cypher
from load.layers import HAS_MESSAGE, MESSAGES, NEXT, EdgeLayer
from load.overlap import Prefetch, WriteBehind
from load.plan import Change, batches, diff, ordered_sql, row_hash, source_rows


def _upsert(key: str, value: str) -> Change:
    return Change("upsert", key, row_hash([key, value]), {"id": key, "props": {"v": value}}, 10)


def test_diff_sends_new_and_changed_rows_skips_unchanged_and_deletes_vanished() -> None:
    current = [_upsert("a", "same"), _upsert("c", "new text"), _upsert("d", "brand new")]
    loaded = [("a", row_hash(["a", "same"])), ("b", 1), ("c", row_hash(["c", "old text"])), ("e", 2)]
    changes = list(diff(MESSAGES, iter(current), iter(loaded)))
    assert [(c.kind, c.key) for c in changes] == [("delete", "b"), ("upsert", "c"), ("upsert", "d"), ("delete", "e")]
    assert changes[0].params == {"id": "b"}


def test_edge_deletes_recover_both_ends_from_the_manifest_key(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "a.db")
    conn.executescript(
        "CREATE TABLE messages (uuid TEXT, conversation_id TEXT);"
        "INSERT INTO messages VALUES ('m\"1', 'c,1'), ('m2', 'c,1');"
    )
    rows = list(source_rows(conn.execute(ordered_sql(HAS_MESSAGE)), HAS_MESSAGE))
    assert [r.key for r in rows] == sorted(r.key for r in rows)  # SQLite's order is Python's: the merge-join holds
    quoted = next(r for r in rows if r.params["dst"] == 'm"1')
    assert quoted.params == {"src": "c,1", "dst": 'm"1', "props": {}}
    rest = [r for r in rows if r is not quoted]
    [gone] = [c for c in diff(HAS_MESSAGE, iter(rest), iter([(quoted.key, quoted.row_hash)])) if c.kind == "delete"]
    assert gone.kind == "delete" and gone.params == {"src": "c,1", "dst": 'm"1'}


def test_source_rows_come_in_key_order_with_booleans_and_nulls(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "a.db")
    conn.executescript(
        "CREATE TABLE messages (uuid TEXT, conversation_id TEXT, role TEXT, author TEXT, content_type TEXT,"
        " text TEXT, created_at TEXT, is_active INT, is_hidden INT, seq INT, content_hash TEXT);"
        "INSERT INTO messages VALUES ('b', 'c', 'user', NULL, 'text', 'hé', NULL, 1, 0, 0, 'h');"
        "INSERT INTO messages VALUES ('a', 'c', 'user', NULL, 'text', 'x', NULL, 0, 1, 1, 'h');"
    )
    rows = list(source_rows(conn.execute(ordered_sql(MESSAGES)), MESSAGES))
    assert [r.key for r in rows] == ["a", "b"]
    assert rows[1].params["props"]["is_active"] is True and rows[1].params["props"]["is_hidden"] is False
    assert rows[1].params["props"]["author"] is None  # SET += null removes a property that became null
    assert rows[0].row_hash != rows[1].row_hash and rows[1].nbytes > rows[0].nbytes


def test_batches_are_cut_by_rows_and_by_bytes_and_a_big_row_goes_alone() -> None:
    small = [Change("upsert", f"k{i}", 0, {}, 10) for i in range(5)]
    assert [len(b.changes) for b in batches(MESSAGES, small, batch_size=2, max_bytes=1000)] == [2, 2, 1]
    big = Change("upsert", "big", 0, {}, 5000)
    mixed = [small[0], big, small[1], Change("delete", "gone", 0, {}, 10)]
    cut = list(batches(MESSAGES, mixed, batch_size=10, max_bytes=100))
    assert [(b.kind, [c.key for c in b.changes]) for b in cut] == [
        ("upsert", ["k0"]),
        ("upsert", ["big"]),
        ("upsert", ["k1"]),
        ("delete", ["gone"]),
    ]


def test_relationship_merge_starts_from_the_sparse_end() -> None:
    """ArcadeDB checks a MERGE from the first node of the pattern: the conversation side is the dense one."""
    assert "MERGE (b)<-[r:HAS_MESSAGE]-(a)" in cypher.upsert(HAS_MESSAGE)
    assert cypher.upsert(HAS_MESSAGE).index("MATCH (b:Message") < cypher.upsert(HAS_MESSAGE).index("MATCH (a:")
    assert "MERGE (a)-[r:NEXT]->(b)" in cypher.upsert(NEXT)
    assert "$rows" in cypher.upsert(MESSAGES) and "SET n += row.props" in cypher.upsert(MESSAGES)


def test_cypher_refuses_a_label_that_is_not_allowed_even_past_the_layer_check() -> None:
    layer = EdgeLayer("NEXT", "Message", "Message", "archive", ("messages",), "SELECT 1 AS src, 2 AS dst")
    object.__setattr__(layer, "type", "NEXT]->() DETACH DELETE (")
    with pytest.raises(ValueError, match="allow-list"):
        cypher.upsert(layer)
    with pytest.raises(ValueError, match="allow-list"):
        cypher.constraint("Person")


def test_settings_read_the_standard_neo4j_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """NEO4J_URI/USER/PASSWORD/DATABASE fill `load`; CHATMEM_LOAD__* win; the password never reaches the ledger."""
    monkeypatch.setenv("NEO4J_URI", "neo4j://graph.example:7687")
    monkeypatch.setenv("NEO4J_USER", "alice")
    monkeypatch.setenv("NEO4J_PASSWORD", "s3cret")
    monkeypatch.setenv("NEO4J_DATABASE", "memory")
    monkeypatch.setenv("CHATMEM_LOAD__BATCH_SIZE", "5000")
    settings = Settings(data_dir=tmp_path)
    load = settings.load
    assert (load.uri, load.user, load.database) == ("neo4j://graph.example:7687", "alice", "memory")
    assert load.batch_size == 5000
    assert load.password is not None and load.password.get_secret_value() == "s3cret"
    assert "s3cret" not in str(settings.public_dump()) and "password" not in settings.public_dump()["load"]
    monkeypatch.setenv("CHATMEM_LOAD__URI", "bolt://other:7687")
    assert Settings(data_dir=tmp_path).load.uri == "bolt://other:7687"
    assert settings.graph_dir == tmp_path / "graph"


def test_a_password_written_into_the_uri_is_kept_out_of_staging(tmp_path: Path) -> None:
    assert redact("neo4j://bob:hunter2@db.example:7687/x") == "neo4j://db.example:7687/x"
    assert redact("bolt://127.0.0.1:7687") == "bolt://127.0.0.1:7687"
    settings = Settings(data_dir=tmp_path, load={"uri": "bolt://bob:hunter2@db.example:7687"})
    assert "hunter2" not in str(settings.public_dump())


def test_read_ahead_raises_the_readers_failure_in_the_stage_thread() -> None:
    def produce() -> Iterator[int]:
        yield 1
        raise sqlite3.OperationalError("no such column: x")

    seen = []
    with pytest.raises(sqlite3.OperationalError, match="no such column"):
        for item in Prefetch(produce):
            seen.append(item)
    assert seen == [1]


def test_write_behind_keeps_order_and_raises_a_failed_jobs_error() -> None:
    done: list[int] = []
    closed: list[bool] = []
    ledger: WriteBehind[list[int]] = WriteBehind(lambda: done, lambda _: closed.append(True))
    for i in range(5):
        ledger.submit(lambda target, i=i: target.append(i))
    ledger.close()
    assert done == [0, 1, 2, 3, 4] and closed == [True]

    def boom(_: list[int]) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    failing: WriteBehind[list[int]] = WriteBehind(list, lambda _: None)
    failing.submit(boom)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        failing.close()


def test_write_behind_whose_resource_cannot_open_raises_instead_of_hanging() -> None:
    """A ledger connection that fails to open (a disk I/O error) fails submit or close; the stage never blocks
    forever on a full queue nobody reads (measured: a 100k load hung so)."""

    def cannot_open() -> list[int]:
        raise sqlite3.OperationalError("disk I/O error")

    ledger: WriteBehind[list[int]] = WriteBehind(cannot_open, lambda _: None, depth=2)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        for i in range(10):  # more jobs than the queue holds
            ledger.submit(lambda target, i=i: target.append(i))
        ledger.close()
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        ledger.close()


def test_text_ids_stream_in_index_order_and_a_broken_order_is_refused() -> None:
    """A layer with text ids is read in its index's order, the manifest's; ids that do not sort as text raise."""
    from load.layers import NodeLayer

    conn = sqlite3.connect(":memory:")
    conn.executescript(
        "CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER); INSERT INTO t VALUES ('b', 2), ('a', 1), ('c', 3);"
    )
    layer = NodeLayer("Topic", "staging", ("t",), "SELECT id, n FROM t", text_ids=True)
    plan = " ".join(str(row) for row in conn.execute(f"EXPLAIN QUERY PLAN {ordered_sql(layer)}"))
    assert "TEMP B-TREE" not in plan  # no sort: the first row comes at once
    assert [c.key for c in source_rows(conn.execute(ordered_sql(layer)), layer)] == ["a", "b", "c"]
    numbers = NodeLayer("Topic", "staging", ("t",), "SELECT n * 5 AS id FROM t", text_ids=True)  # 5, 10, 15
    with pytest.raises(ValueError, match="not in key order"):
        list(source_rows(conn.execute(ordered_sql(numbers)), numbers))
