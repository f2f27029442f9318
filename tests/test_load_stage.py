"""The load stage against a real Bolt server (ArcadeDB, started once per session by tests/graph_fixtures.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from contracts.errors import StageError
from flows.cli_run_summary import _load_counts
from load.layers import ARCHIVE_LAYERS, LAYERS, EdgeLayer, NodeLayer
from tests.graph_helpers import GraphEnv, expected, ingest, load, write_branchy_jsonl

pytest_plugins = ["tests.graph_fixtures"]


def _batches(settings_path: Path, run_id: str) -> list[sqlite3.Row]:
    conn = sqlite3.connect(settings_path)
    conn.row_factory = sqlite3.Row
    rows = conn.execute("SELECT * FROM load_batches WHERE run_id = ? ORDER BY rowid", (run_id,)).fetchall()
    conn.close()
    return rows


def test_a_clean_load_holds_exactly_what_staging_expects(graph: GraphEnv, tmp_path: Path) -> None:
    """Conversations, messages, HAS_MESSAGE, NEXT along active paths and BRANCH for side branches, no duplicates."""
    settings = graph.settings(tmp_path / "data")
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=3, turns=6))
    result = load(settings, run_id)
    assert result.status == "succeeded"
    want = {
        "nodes": {"Conversation": 3, "Message": 24},
        "edges": {"HAS_MESSAGE": 24, "NEXT": 15, "BRANCH": 6},
    }
    assert expected(settings) == want
    assert graph.counts() == want
    assert result.counts["nodes_upserted"] == 27 and result.counts["edges_upserted"] == 45
    distinct = graph.query("MATCH (m:Message) RETURN count(DISTINCT m.id) AS n")[0]["n"]
    assert distinct == 24
    side = graph.query(
        "MATCH (p:Message)-[:BRANCH]->(c:Message {id: 'c0:alt'}) RETURN p.id AS parent, c.is_active AS active"
    )
    assert side == [{"parent": "c0:m1", "active": False}]
    path = graph.query(
        "MATCH (c:Conversation {id: 'c1'})-[:HAS_MESSAGE]->(m:Message) WHERE NOT ()-[:NEXT]->(m) AND m.is_active"
        " MATCH p = (m)-[:NEXT*]->(leaf) WHERE NOT (leaf)-[:NEXT]->() RETURN length(p) AS hops"
    )
    assert path == [{"hops": 5}]  # one active chain of six turns


def test_every_batch_is_recorded_with_rows_status_and_duration(graph: GraphEnv, tmp_path: Path) -> None:
    settings = graph.settings(tmp_path / "data", batch_size=10)
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=3, turns=6))
    load(settings, run_id)
    batches = _batches(settings.staging_path, run_id)
    by_layer = {}
    for row in batches:
        by_layer.setdefault(row["layer"], []).append(row)
        assert row["status"] == "done" and row["attempts"] == 1 and row["duration_s"] >= 0
        assert row["kind"] == "upsert" and row["rows"] == row["written"] <= 10
    assert [r["batch_no"] for r in by_layer["Message"]] == [1, 2, 3]
    assert sum(r["rows"] for r in by_layer["Message"]) == 24
    assert {r["target"] for r in batches} == {f"{graph.uri}#{graph.database}"}


def test_a_rerun_with_nothing_new_is_skipped(graph: GraphEnv, tmp_path: Path) -> None:
    settings = graph.settings(tmp_path / "data")
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl"))
    load(settings, run_id)
    again = load(settings, run_id)
    assert again.status == "skipped" and any("up to date" in note for note in again.notes)
    assert len(_batches(settings.staging_path, run_id)) == 5  # no batch was sent the second time


def test_a_newer_dump_updates_changed_rows_and_removes_stale_edges(graph: GraphEnv, tmp_path: Path) -> None:
    """Edited text is updated in place; the old active path's NEXT edges go, the new ones and BRANCHes come."""
    settings = graph.settings(tmp_path / "data")
    load(settings, ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=2, turns=6)))
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "b.jsonl", conversations=2, turns=6, edit=True))
    result = load(settings, run_id)
    assert graph.counts() == expected(settings)
    assert graph.query("MATCH (m:Message {id: 'c0:m0'}) RETURN m.text AS t") == [{"t": "turn 0 of c0 (edited)"}]
    nexts = graph.query("MATCH (a)-[:NEXT]->(b) WHERE a.conversation_id = 'c0' RETURN a.id AS a, b.id AS b")
    assert sorted((r["a"], r["b"]) for r in nexts) == [("c0:m0", "c0:m1"), ("c0:m1", "c0:new")]
    off_path = graph.query("MATCH (:Message {id: 'c0:m1'})-[:BRANCH]->(c) RETURN c.id AS id ORDER BY id")
    assert [r["id"] for r in off_path] == ["c0:alt", "c0:m2"]
    assert graph.query("MATCH (m:Message {id: 'c0:m5'}) RETURN m.is_active AS a") == [{"a": False}]
    # Only what changed was sent: 2 new messages, 2 edited, 4 x 2 that left the active path.
    assert result.counts["edges_deleted"] == 2 * 4 and result.counts["nodes_deleted"] == 0
    assert result.counts["rows_read"] > result.counts["nodes_upserted"] + result.counts["edges_upserted"]
    # The summary says it in words: what the graph got, and how many of the rows compared needed nothing
    counts = result.counts
    unchanged = counts["rows_read"] - counts["nodes_upserted"] - counts["edges_upserted"]
    assert counts["rows_unchanged"] == unchanged > 0
    assert _load_counts(counts).startswith(
        f"{counts['nodes_upserted']} nodes and {counts['edges_upserted']} edges written (new or changed),"
        f" {unchanged} of {counts['rows_read']} rows compared unchanged, 0 nodes and 8 edges deleted, "
    )


def test_the_manifest_counts_follow_every_upsert_and_delete(graph: GraphEnv, tmp_path: Path) -> None:
    """load_manifest_counts (kept by triggers) equals the manifest's own row count per layer after a first load,
    after a dump that edits, adds and removes rows, and after a layer is forgotten."""
    from staging.load_state import forget_layer, manifest_count

    def counted(settings_path: Path) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
        with sqlite3.connect(settings_path) as conn:
            kept = {(t, layer): n for t, layer, n in conn.execute("SELECT * FROM load_manifest_counts") if n}
            walked = conn.execute("SELECT target, layer, COUNT(*) FROM load_manifest GROUP BY target, layer")
            return kept, {(t, layer): n for t, layer, n in walked}

    settings = graph.settings(tmp_path / "data")
    load(settings, ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=2, turns=6)))
    kept, walked = counted(settings.staging_path)
    assert kept == walked and sum(walked.values()) > 0
    result = load(
        settings, ingest(settings, write_branchy_jsonl(tmp_path / "b.jsonl", conversations=2, turns=6, edit=True))
    )
    assert result.counts["edges_deleted"] > 0 and result.counts["edges_upserted"] > 0  # both kinds of change
    kept, walked = counted(settings.staging_path)
    assert kept == walked
    (target, layer), rows = next(iter(walked.items()))
    with sqlite3.connect(settings.staging_path) as conn:
        assert manifest_count(conn, target, layer) == rows
        forget_layer(conn, target, layer)
        assert manifest_count(conn, target, layer) == 0
    assert counted(settings.staging_path)[0] == {k: n for k, n in walked.items() if k != (target, layer)}


def test_chat_text_goes_through_parameters_untouched(graph: GraphEnv, tmp_path: Path) -> None:
    """Quotes, backslashes, Cypher keywords, emoji and a 1 MB string arrive byte for byte."""
    nasty = [
        'it\'s "quoted" and `backticked`',
        "C:\\path\\n\\u0000 \\\\ end\\",
        "'}) MATCH (n) DETACH DELETE n //",
        "$rows {id: 1} RETURN 1; CREATE (x:Message)",
        "emoji 😀👩‍👩‍👧 and RTL \u202e text",
        "x" * 1_000_000 + "é",
    ]
    export = tmp_path / "nasty.jsonl"
    lines = [
        f'{{"conversation_id": "n", "id": "{i}", "role": "user", "text": {json.dumps(text)}}}'
        for i, text in enumerate(nasty)
    ]
    export.write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = graph.settings(tmp_path / "data")
    load(settings, ingest(settings, export))
    stored = graph.query("MATCH (m:Message) RETURN m.id AS id, m.text AS text ORDER BY m.seq")
    assert [r["text"] for r in stored] == nasty
    assert graph.counts()["nodes"] == {"Conversation": 1, "Message": len(nasty)}


def test_a_layer_is_a_registry_entry_and_missing_tables_are_skipped(graph: GraphEnv, tmp_path: Path) -> None:
    """A new label and relationship from a staging table load with no change to the loader; absent ones wait."""
    settings = graph.settings(tmp_path / "data")
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=1, turns=4))
    staging = sqlite3.connect(settings.staging_path)
    staging.executescript(
        "CREATE TABLE test_segments (segment_id TEXT PRIMARY KEY, conversation_id TEXT, size INTEGER);"
        "INSERT INTO test_segments VALUES ('s1', 'c0', 2), ('s2', 'c0', 2);"
        "CREATE TABLE test_members (segment_id TEXT, message_id TEXT, position INTEGER);"
        "INSERT INTO test_members VALUES ('s1', 'c0:m0', 0), ('s1', 'c0:m1', 1), ('s2', 'c0:m2', 0);"
    )
    staging.close()
    segment = NodeLayer(
        "Segment", "staging", ("test_segments",), "SELECT segment_id AS id, conversation_id, size FROM test_segments"
    )
    contains = EdgeLayer(
        "CONTAINS_MESSAGE",
        "Segment",
        "Message",
        "staging",
        ("test_members",),
        "SELECT segment_id AS src, message_id AS dst, position FROM test_members",
        anchor="dst",
    )
    topic = NodeLayer("Topic", "staging", ("no_such_table",), "SELECT 1 AS id FROM no_such_table")
    # Its edges wait for it: an edge layer whose end node layer is skipped is skipped too.
    belongs = EdgeLayer("BELONGS_TO", "Segment", "Topic", "staging", ("test_segments",), "SELECT 's1' AS src, 1 AS dst")
    result = load(settings, run_id, layers=(*ARCHIVE_LAYERS, segment, contains, topic, belongs))
    counts = graph.counts()
    assert counts["nodes"]["Segment"] == 2 and counts["edges"]["CONTAINS_MESSAGE"] == 3
    assert "Topic" not in counts["nodes"] and "BELONGS_TO" not in counts["edges"]
    assert result.counts["layers_missing"] == 2 and any("Segment-BELONGS_TO-Topic" in n for n in result.notes)
    rows = graph.query("MATCH (s:Segment {id: 's1'})-[r:CONTAINS_MESSAGE]->(m) RETURN m.id AS m, r.position AS p")
    assert sorted((r["m"], r["p"]) for r in rows) == [("c0:m0", 0), ("c0:m1", 1)]


def test_layers_reject_labels_and_types_outside_the_allow_list() -> None:
    with pytest.raises(ValueError, match="allow-list"):
        NodeLayer("Message) DETACH DELETE (n", "archive", ("messages",), "SELECT uuid AS id FROM messages")
    with pytest.raises(ValueError, match="allow-list"):
        EdgeLayer("KNOWS", "Message", "Message", "archive", ("messages",), "SELECT 1 AS src, 2 AS dst")


def test_a_graph_that_lost_its_nodes_is_loaded_again(graph: GraphEnv, tmp_path: Path) -> None:
    """The manifest is checked against the graph's node counts: a wiped graph gets every row again."""
    settings = graph.settings(tmp_path / "data")
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl"))
    load(settings, run_id)
    graph.query("MATCH (n) DETACH DELETE n")
    assert graph.counts() == {"nodes": {}, "edges": {}}
    again = load(settings, ingest(settings, write_branchy_jsonl(tmp_path / "b.jsonl", conversations=1)))
    assert again.status == "succeeded"
    assert graph.counts() == expected(settings)


def test_a_row_too_big_for_arcadedb_is_refused_before_it_is_sent(graph: GraphEnv, tmp_path: Path) -> None:
    settings = graph.settings(tmp_path / "data")
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=1))
    staging = sqlite3.connect(settings.staging_path)
    staging.execute("CREATE TABLE test_big (id TEXT, body TEXT)")
    staging.execute("INSERT INTO test_big VALUES ('big', ?)", ("y" * (13 * 1024 * 1024),))
    staging.commit()
    staging.close()
    big = NodeLayer("Topic", "staging", ("test_big",), "SELECT id, body FROM test_big")
    with pytest.raises(StageError) as caught:
        load(settings, run_id, layers=(*LAYERS, big))
    assert "ArcadeDB refuses Bolt messages over 16 MiB" in caught.value.cause and graph.uri in caught.value.cause
    assert "Topic" not in graph.counts()["nodes"]


def test_new_rows_already_in_the_graph_fall_back_to_merge_without_duplicates(
    graph: GraphEnv, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Staging forgot what it loaded (as after a batch committed but never recorded): CREATE meets the
    uniqueness constraint, the batch is re-sent as MERGE, and the graph ends the same."""
    settings = graph.settings(tmp_path / "data")
    export = write_branchy_jsonl(tmp_path / "a.jsonl")
    load(settings, ingest(settings, export))
    before = graph.counts()
    staging = sqlite3.connect(settings.staging_path)
    staging.executescript("DELETE FROM load_manifest; UPDATE load_targets SET watermark = NULL;")
    staging.close()
    with caplog.at_level("INFO", logger="clients.graph"):
        again = load(settings, ingest(settings, export))
    assert again.status == "succeeded" and again.counts["nodes_upserted"] == 27
    assert "sent again as MERGE" in caplog.text
    assert graph.counts() == before == expected(settings)
    duplicates = graph.query("MATCH (n) WITH n.id AS id, count(*) AS k WHERE k > 1 RETURN count(id) AS d")
    assert duplicates == [{"d": 0}]
