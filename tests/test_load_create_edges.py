"""Relationships new to the manifest go as CREATE, and only when staging can prove none of them is in the graph."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.graph_helpers import GraphEnv, expected, ingest, load, write_branchy_jsonl

pytest_plugins = ["tests.graph_fixtures"]

HAS_MESSAGE = "Conversation-HAS_MESSAGE-Message"


def _staging(path: Path, script: str) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.close()


def _duplicate_edges(graph: GraphEnv) -> int:
    found = graph.query(
        "MATCH (a)-[r]->(b) WITH a.id AS a, b.id AS b, type(r) AS t, count(*) AS k WHERE k > 1 RETURN count(*) AS d"
    )
    return int(found[0]["d"])


def test_a_fresh_load_creates_every_batch_and_holds_no_duplicate(graph: GraphEnv, tmp_path: Path) -> None:
    """On an empty graph every node and relationship batch is a CREATE; the graph is exactly what staging says."""
    settings = graph.settings(tmp_path / "data", batch_size=10)
    result = load(settings, ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=4)))
    assert result.status == "succeeded"
    assert result.counts["batches_created"] == result.counts["batches"] > 5
    assert graph.counts() == expected(settings)
    assert _duplicate_edges(graph) == 0
    # every layer's rows were read once, by readers that overlap the previous layer's writes
    assert result.counts["rows_read"] == sum(sum(kind.values()) for kind in expected(settings).values())


def test_relationships_the_manifest_does_not_list_are_merged_not_duplicated(graph: GraphEnv, tmp_path: Path) -> None:
    """The graph holds HAS_MESSAGE edges staging forgot (a graph written by someone else): the counts differ, the
    layer is MERGEd, and every edge stays single."""
    settings = graph.settings(tmp_path / "data")
    export = write_branchy_jsonl(tmp_path / "a.jsonl")
    load(settings, ingest(settings, export))
    before = graph.counts()
    _staging(
        settings.staging_path,
        f"DELETE FROM load_manifest WHERE layer = '{HAS_MESSAGE}'; UPDATE load_targets SET watermark = 'stale'",
    )  # the previous load finished: only the counts can tell
    again = load(settings, ingest(settings, export))
    assert again.status == "succeeded" and again.counts["edges_upserted"] == before["edges"]["HAS_MESSAGE"]
    assert again.counts["batches_created"] == 0
    assert graph.counts() == before == expected(settings)
    assert _duplicate_edges(graph) == 0


def test_after_an_unfinished_load_relationships_are_merged(graph: GraphEnv, tmp_path: Path) -> None:
    """A load that did not finish may have committed a batch it never recorded, even where the counts agree (one
    edge recorded but gone, one committed but unrecorded): the next load MERGEs and duplicates nothing."""
    settings = graph.settings(tmp_path / "data")
    export = write_branchy_jsonl(tmp_path / "a.jsonl")
    load(settings, ingest(settings, export))
    gone, unrecorded = [
        row["m"] for row in graph.query("MATCH (:Conversation)-[:HAS_MESSAGE]->(m:Message) RETURN m.id AS m LIMIT 2")
    ]
    graph.query("MATCH (:Conversation)-[r:HAS_MESSAGE]->(:Message {id: $m}) DELETE r", m=gone)
    _staging(
        settings.staging_path,
        f"DELETE FROM load_manifest WHERE layer = '{HAS_MESSAGE}' AND key LIKE '%\"{unrecorded}\"]';"
        " UPDATE load_targets SET watermark = NULL",  # what a killed load leaves
    )
    again = load(settings, ingest(settings, export))
    assert again.status == "succeeded" and again.counts["edges_upserted"] == 1
    assert again.counts["batches_created"] == 0
    into = graph.query("MATCH (:Conversation)-[r:HAS_MESSAGE]->(:Message {id: $m}) RETURN count(r) AS n", m=unrecorded)
    assert into == [{"n": 1}]
    assert _duplicate_edges(graph) == 0
    # once a load has finished and the counts agree again, new relationships are created again
    graph.query("MATCH (:Conversation)-[r:HAS_MESSAGE]->(:Message {id: $m}) DELETE r", m=unrecorded)
    _staging(
        settings.staging_path,
        f"DELETE FROM load_manifest WHERE layer = '{HAS_MESSAGE}' AND (key LIKE '%\"{unrecorded}\"]'"
        f" OR key LIKE '%\"{gone}\"]'); UPDATE load_targets SET watermark = 'stale'",
    )
    third = load(settings, ingest(settings, export))
    assert third.counts["batches_created"] == 1 and third.counts["edges_upserted"] == 2
    assert graph.counts() == expected(settings)
    assert _duplicate_edges(graph) == 0


def test_a_key_repeated_within_a_layer_is_never_created_twice() -> None:
    """The diff marks the second row of a repeated key as not new, so its batch is MERGEd onto the first."""
    from load.layers import HAS_MESSAGE as LAYER
    from load.plan import Change, diff

    rows = [Change("upsert", key, 1, {}, 10) for key in ("a", "b", "b", "c")]
    out = list(diff(LAYER, iter(rows), iter([("c", 1)])))
    assert [(c.key, c.new) for c in out] == [("a", True), ("b", True), ("b", False)]


def test_created_rows_carry_the_same_properties_as_merged_ones(graph: GraphEnv, tmp_path: Path) -> None:
    """A CREATE names each property in its pattern: node and relationship properties (booleans, numbers, text)
    come out as MERGE's `SET +=` writes them, and a NULL value is not stored."""
    from load.layers import ARCHIVE_LAYERS, EdgeLayer, NodeLayer

    settings = graph.settings(tmp_path / "data")
    run_id = ingest(settings, write_branchy_jsonl(tmp_path / "a.jsonl", conversations=1, turns=4))
    _staging(
        settings.staging_path,
        "CREATE TABLE test_cues (cue_id TEXT PRIMARY KEY, name TEXT, hub INTEGER, note TEXT);"
        "INSERT INTO test_cues VALUES ('k1', 'paris', 1, NULL), ('k2', 'rome', 0, 'x');"
        "CREATE TABLE test_edges (src TEXT, dst TEXT, weight REAL, why TEXT);"
        "INSERT INTO test_edges VALUES ('k1', 'c0:m0', 0.25, NULL), ('k2', 'c0:m1', 1.0, 'because');",
    )
    cues = NodeLayer(
        "Cue", "staging", ("test_cues",), "SELECT cue_id AS id, name, hub, note FROM test_cues", booleans=("hub",)
    )
    edges = EdgeLayer(
        "CUES", "Cue", "Message", "staging", ("test_edges",), "SELECT src, dst, weight, why FROM test_edges"
    )
    result = load(settings, run_id, layers=(*ARCHIVE_LAYERS, cues, edges))
    assert result.counts["batches_created"] == result.counts["batches"]
    nodes = graph.query("MATCH (c:Cue) RETURN properties(c) AS p ORDER BY c.id")
    assert [r["p"] for r in nodes] == [
        {"id": "k1", "name": "paris", "hub": True},
        {"id": "k2", "name": "rome", "hub": False, "note": "x"},
    ]
    rels = graph.query("MATCH (c:Cue)-[r:CUES]->(m:Message) RETURN c.id AS c, m.id AS m, properties(r) AS p ORDER BY c")
    assert [(r["c"], r["m"], r["p"]) for r in rels] == [
        ("k1", "c0:m0", {"weight": 0.25}),
        ("k2", "c0:m1", {"weight": 1.0, "why": "because"}),
    ]
    message = graph.query("MATCH (m:Message {id: 'c0:m0'}) RETURN properties(m) AS p")[0]["p"]
    assert message["is_active"] is True and message["text"] and message["seq"] == 0
    assert None not in message.values()


def test_a_property_name_that_is_not_an_identifier_is_refused() -> None:
    """Property names are interpolated into the CREATE: anything but a plain identifier raises before sending."""
    import pytest

    from load import cypher
    from load.layers import MESSAGES

    assert "`title`: row.props.`title`" in cypher.create_nodes(MESSAGES, ["title"])
    with pytest.raises(ValueError, match="plain identifier"):
        cypher.create_nodes(MESSAGES, ["x}) DETACH DELETE n //"])
