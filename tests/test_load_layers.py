"""The later stages' layers (Segment, Concept, Topic and their edges) loaded into the real Bolt server.

Staging is pipeline-shaped: the real segment, extract (offline) and concepts stages on a small archive, and topics
written through the cluster stage's own writer (staging.topics.write_run: clustering itself needs an embedding
model and is tested in test_cluster.py). A merge, an archived concept and a newer cluster run then change staging,
and the next load must follow: no stale node or edge, counts equal to what staging expects.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive
from stage_support import cues_stage as cues
from stage_support import stage_concepts, stage_extract, stage_segment

from load.layers import LAYERS, EdgeLayer, NodeLayer, load_order
from staging import concepts as concept_store
from staging import topics as topic_store
from staging.db import Transaction
from staging.ledger import StageRun, open_run
from tests.graph_helpers import GraphEnv, expected, load

pytest_plugins = ["tests.graph_fixtures"]

GARDEN = [
    ("user", "I want to grow a vegetable garden this spring. The vegetable garden needs compost."),
    ("assistant", "A vegetable garden does well with compost and six hours of sun."),
    ("user", "The vegetable garden is my main project this year, with compost from the kitchen."),
]
TRIP = [
    ("user", "We're planning a trip to Lisbon in May. Lisbon has great tram rides."),
    ("assistant", "Lisbon in May is lovely; take tram 28 early."),
    ("user", "The Lisbon trip is booked: tram rides and the castle in May."),
]
BAKING = [
    ("user", "I bake sourdough bread every weekend. Sourdough bread needs a starter."),
    ("assistant", "Sourdough bread rises slowly; feed the starter the night before."),
]


@pytest.fixture
def staged(graph: GraphEnv, tmp_path: Path) -> Iterator[Dbs]:
    """archive.db and staging.db after the real segment, extract and concepts stages, and one cluster run."""
    dbs = open_dbs(tmp_path / "data", load=graph.load_settings(), memory={"key_embedder": "embed"})
    write_archive(
        dbs.archive, [conversation("garden", GARDEN), conversation("trip", TRIP), conversation("bake", BAKING)]
    )
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts):
        assert stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings).status == "succeeded"
    cluster(dbs, run_id, [_segments(dbs)], [_live_concepts(dbs)])
    assert cues.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings).status == "succeeded"
    try:
        yield dbs
    finally:
        dbs.close()


def _segments(dbs: Dbs) -> list[str]:
    return [str(r[0]) for r in dbs.staging.execute("SELECT segment_id FROM segments WHERE retired_run_id IS NULL")]


def _live_concepts(dbs: Dbs) -> list[str]:
    return [c.concept_id for c in concept_store.load_concepts(dbs.staging).values() if c.merged_into is None]


def cluster(dbs: Dbs, run_id: str, segments: list[list[str]], concepts: list[list[str]]) -> None:
    """What the cluster stage writes for run `run_id`: topic i holds segments[i] and concepts[i]."""
    topics, links = [], []
    for i, (members, ideas) in enumerate(zip(segments, concepts, strict=True)):
        uid = f"topic-{run_id}-{i}"
        topics.append(
            {"topic": i, "topic_uid": uid, "label": f"t{i}", "size": len(members), "keywords": ["a", "b"]}
            | {"representatives": members[:2]}
        )
        links += [("segment", s, i, uid, 0.9, "hdbscan") for s in members]
        links += [("concept", c, i, uid, 0.5, "predicted") for c in ideas]
    summary = {"status": "clustered", "points": sum(map(len, segments)), "topics": len(topics)}
    topic_store.write_run(dbs.staging, run_id, summary, topics, links)
    _stage_succeeded(dbs, run_id, "cluster")


def _stage_succeeded(dbs: Dbs, run_id: str, stage: str) -> None:
    """A succeeded stage run in the ledger: what moves the load's input watermark."""
    run = StageRun(dbs.staging, run_id=run_id, stage=stage, input_fingerprint=stage, settings={}, code_version="t")
    run.succeed(rows_in=0, rows_out=0, counts={}, notes=[])


def _later_run(dbs: Dbs) -> str:
    """A run whose id sorts after every earlier one (run ids made within one second may not)."""
    last = dbs.staging.execute("SELECT MAX(id) FROM runs").fetchone()[0]
    return open_run(dbs.staging, stages=["concepts"], exports=[], settings={}, code_version="t", run_id=f"{last}-z")


def _load(dbs: Dbs) -> Any:
    return load(dbs.settings, dbs.run_id())


def _one(graph: GraphEnv, cypher: str, **params: Any) -> Any:
    rows = graph.query(cypher, **params)
    return rows[0]["n"] if rows else None


def test_layers_are_registered_in_load_order_with_distinct_names() -> None:
    assert list(LAYERS) == load_order(LAYERS)
    names = [layer.name for layer in LAYERS]
    assert len(set(names)) == len(names)
    belongs = [layer for layer in LAYERS if isinstance(layer, EdgeLayer) and layer.type == "BELONGS_TO"]
    assert sorted(layer.name for layer in belongs) == ["Concept-BELONGS_TO-Topic", "Segment-BELONGS_TO-Topic"]
    labels = {layer.label for layer in LAYERS if isinstance(layer, NodeLayer)}
    assert {"Conversation", "Message", "Segment", "Concept", "Topic"} <= labels
    relations = {layer.type for layer in LAYERS if isinstance(layer, EdgeLayer) and layer.src == layer.dst == "Concept"}
    assert relations == {"CAUSES", "CONFLICTS_WITH", "SUPPORTS", "INSTANCE_OF", "ENABLES"}


def test_the_later_stages_load_as_layers_with_the_counts_staging_expects(graph: GraphEnv, staged: Dbs) -> None:
    dbs = staged
    concept_ids = _live_concepts(dbs)
    assert len(concept_ids) >= 2
    with Transaction(dbs.staging):
        concept_store.add_relation(dbs.staging, concept_ids[0], "causes", concept_ids[1], 0.7, "r")
        concept_store.add_relation(dbs.staging, concept_ids[1], "supports", concept_ids[0], 0.6, "r")
    result = _load(dbs)
    assert result.status == "succeeded" and result.counts["layers_missing"] == 0
    assert result.counts["edges_missing_ends"] == 0
    want = expected(dbs.settings)
    assert graph.counts() == want
    nodes, edges = want["nodes"], want["edges"]
    segments = dbs.staging.execute("SELECT COUNT(*) FROM segments WHERE retired_run_id IS NULL").fetchone()[0]
    members = dbs.staging.execute("SELECT COUNT(*) FROM segment_messages").fetchone()[0]
    # a merged concept's evidence stays with it, copied to the survivor (v47 folds near-duplicates in this fixture):
    # the graph's edges are the live concepts' pairs
    placeholders = ",".join("?" * len(concept_ids))
    pairs = dbs.staging.execute(
        "SELECT COUNT(DISTINCT message_id || '|' || concept_id) FROM concept_evidence"
        f" WHERE concept_id IN ({placeholders})",
        concept_ids,
    )
    assert nodes["Segment"] == segments >= 3 and edges["CONTAINS_MESSAGE"] == members
    assert nodes["Concept"] == len(concept_ids) and edges["EVIDENCE_FOR"] == pairs.fetchone()[0] > 0
    assert nodes["Topic"] == 1 and edges["BELONGS_TO"] == segments + len(concept_ids)
    assert edges["CAUSES"] == 1 and edges["SUPPORTS"] == 1
    # Properties: the edge carries its confidence and span, the link its weight.
    span = graph.query(
        "MATCH (m:Message)-[r:EVIDENCE_FOR]->(c:Concept {id: $c}) RETURN m.id AS m, r.confidence AS conf, r.text AS t",
        c=concept_ids[0],
    )
    assert span and all(0 < row["conf"] <= 1 and row["t"] for row in span)
    weight = "MATCH (:Segment)-[r:BELONGS_TO]->(t:Topic) RETURN min(r.weight) AS n"
    assert _one(graph, weight) == pytest.approx(0.9)
    assert _one(graph, "MATCH (c:Concept {id: $c})-[r:CAUSES]->() RETURN r.confidence AS n", c=concept_ids[0]) == 0.7
    again = _load(dbs)
    assert again.status == "skipped"


def test_merged_archived_and_reclustered_leave_nothing_stale(graph: GraphEnv, staged: Dbs) -> None:
    dbs = staged
    keep, gone, old, *_ = sorted(_live_concepts(dbs))
    with Transaction(dbs.staging):
        concept_store.add_relation(dbs.staging, gone, "enables", old, 0.8, "r")
        concept_store.add_relation(dbs.staging, old, "conflicts_with", gone, 0.8, "r")
    assert _load(dbs).status == "succeeded"
    assert _one(graph, "MATCH (:Concept {id: $c})-[r]-() RETURN count(r) AS n", c=gone) >= 3
    # The concepts stage merges `gone` into `keep` (evidence and relations copied over) and archives `old`.
    run_id = _later_run(dbs)
    rows = concept_store.load_concepts(dbs.staging)
    with Transaction(dbs.staging):
        concept_store.copy_evidence(dbs.staging, gone, keep, run_id)
        rows[gone].state, rows[gone].merged_into, rows[old].state = "merged", keep, "archived"
        concept_store.upsert_concepts(dbs.staging, [rows[gone], rows[old]])
    _stage_succeeded(dbs, run_id, "concepts")
    # A newer cluster run: two topics, the concept links of the merged concept gone with it.
    segments = _segments(dbs)
    cluster(dbs, run_id, [segments[:1], segments[1:]], [[keep], [old]])
    result = _load(dbs)
    assert result.status == "succeeded" and result.counts["nodes_deleted"] >= 2
    assert graph.counts() == expected(dbs.settings)
    assert _one(graph, "MATCH (c:Concept {id: $c}) RETURN count(c) AS n", c=gone) == 0
    assert _one(graph, "MATCH (c:Concept {id: $c}) RETURN c.state AS n", c=old) == "archived"
    assert _one(graph, "MATCH ()-[r:ENABLES|CONFLICTS_WITH]->() RETURN count(r) AS n") == 0
    moved = graph.query("MATCH (m:Message)-[:EVIDENCE_FOR]->(:Concept {id: $c}) RETURN m.id AS id", c=keep)
    gone_messages = dbs.staging.execute(
        "SELECT DISTINCT message_id FROM concept_evidence WHERE concept_id = ?", (gone,)
    )
    assert {str(r[0]) for r in gone_messages} <= {row["id"] for row in moved}
    topics = graph.query("MATCH (t:Topic) RETURN t.id AS id, t.run_id AS run ORDER BY id")
    assert [row["id"] for row in topics] == [f"topic-{run_id}-0", f"topic-{run_id}-1"]  # the newer run's topics
    assert [row["run"] for row in topics] == [None, None]  # no run id on the node (docs/graph.md)
    assert _one(graph, "MATCH (:Concept)-[r:BELONGS_TO]->(:Topic) RETURN count(r) AS n") == 2


def test_a_cluster_run_that_keeps_its_topics_rewrites_only_the_topics_that_changed(
    graph: GraphEnv, staged: Dbs
) -> None:
    """An incremental cluster run keeps its fit's topic uids: a topic whose label, size, keywords and
    representatives stay is not written again (a cluster run id on the node would rewrite them all)."""
    dbs = staged
    segments, concepts = _segments(dbs), _live_concepts(dbs)

    def cluster_keeping_uids(run_id: str, first: list[str]) -> None:
        topics = [
            {"topic": 0, "topic_uid": "kept-0", "label": "t0", "size": len(first), "keywords": ["a"]}
            | {"representatives": first[:1]},
            {"topic": 1, "topic_uid": "kept-1", "label": "t1", "size": 1, "keywords": ["b"]}
            | {"representatives": segments[-1:]},
        ]
        links = [("segment", s, 0, "kept-0", 0.9, "hdbscan") for s in first]
        links += [
            ("segment", segments[-1], 1, "kept-1", 0.9, "hdbscan"),
            ("concept", concepts[0], 1, "kept-1", 0.5, "predicted"),
        ]
        summary = {"status": "clustered", "points": len(segments), "topics": 2}
        topic_store.write_run(dbs.staging, run_id, summary, topics, links)
        _stage_succeeded(dbs, run_id, "cluster")

    cluster_keeping_uids(_later_run(dbs), segments[:-1])
    assert _load(dbs).status == "succeeded"
    cluster_keeping_uids(_later_run(dbs), segments[:-1])  # a newer run, the same topics
    same = _load(dbs)
    assert same.status == "succeeded" and same.counts["nodes_upserted"] == 0
    cluster_keeping_uids(_later_run(dbs), segments[:-2])  # topic 0 lost a segment: it alone is written
    moved = _load(dbs)
    assert moved.counts["nodes_upserted"] == 1
    assert graph.counts() == expected(dbs.settings)
    assert _one(graph, "MATCH (t:Topic {id: 'kept-0'}) RETURN t.size AS n") == len(segments) - 2


def test_edges_whose_ends_are_missing_are_not_marked_loaded(graph: GraphEnv, staged: Dbs) -> None:
    """A row naming a node that is not in the graph writes nothing, stays out of the manifest and is sent again."""
    dbs = staged
    dbs.staging.executescript(
        "CREATE TABLE test_links (segment_id TEXT, message_id TEXT);"
        "INSERT INTO test_links SELECT segment_id, 'no-such-message' FROM segments LIMIT 1;"
    )
    sql = "SELECT segment_id AS src, message_id AS dst FROM test_links"
    odd = EdgeLayer("CUES", "Segment", "Message", "staging", ("test_links",), sql)
    layers = (*LAYERS[:-1], odd, LAYERS[-1])
    first = load(dbs.settings, dbs.run_id(), layers=layers)
    assert first.counts["edges_missing_ends"] == 1 and any("retried next load" in n for n in first.notes)
    manifest = dbs.staging.execute("SELECT COUNT(*) FROM load_manifest WHERE layer = ?", (odd.name,)).fetchone()[0]
    assert manifest == 0
    second = load(dbs.settings, dbs.run_id(), layers=layers)
    assert second.status == "succeeded" and second.counts["edges_missing_ends"] == 1


def test_layers_given_edges_first_still_load_nodes_first(graph: GraphEnv, staged: Dbs) -> None:
    """The stage loads node layers before edge layers whatever order it is given, so no edge misses its ends."""
    dbs = staged
    backwards = tuple(reversed(LAYERS))
    result = load(dbs.settings, dbs.run_id(), layers=backwards)
    assert result.status == "succeeded" and result.counts["edges_missing_ends"] == 0
    assert graph.counts() == expected(dbs.settings)
    assert load(dbs.settings, dbs.run_id(), layers=backwards).status == "skipped"
