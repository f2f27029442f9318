"""The Cue-Tag-Content graph loaded into the real Bolt server (load/layers.py), and a Cypher path over it that
returns the same top results as the embedded engine on the same small graph."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive
from stage_support import cues_stage as cues
from stage_support import stage_concepts, stage_extract, stage_segment

from contracts.memory import RecallRequest
from memory.index import build_index
from memory.recall import Switches, rank
from staging import memory as store
from tests.graph_helpers import GraphEnv, expected, load

pytest_plugins = ["tests.graph_fixtures"]

GARDEN = [
    ("user", "I want to grow a vegetable garden this spring. The vegetable garden needs compost."),
    ("assistant", "A vegetable garden does well with compost and six hours of sun."),
    ("user", "Which tomatoes grow well in a vegetable garden with compost and sun?"),
]
TRIP = [
    ("user", "We're planning a trip to Lisbon in May. Lisbon has great tram rides."),
    ("assistant", "Lisbon in May is lovely; take tram 28 early."),
    ("user", "The Lisbon trip is booked: tram rides and the castle in May."),
]
BAKING = [
    ("user", "I bake sourdough bread every weekend. Sourdough bread needs a starter."),
    ("assistant", "Sourdough bread rises slowly; feed the starter the night before the garden party."),
]


@pytest.fixture
def memory_built(graph: GraphEnv, tmp_path: Path) -> Iterator[tuple[Dbs, str]]:
    """archive.db and staging.db after the real segment, extract, concepts and cues stages."""
    dbs = open_dbs(tmp_path / "data", load=graph.load_settings(), memory={"key_embedder": "embed"})
    write_archive(
        dbs.archive, [conversation("garden", GARDEN), conversation("trip", TRIP), conversation("bake", BAKING)]
    )
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts, cues):
        assert stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings).status == "succeeded"
    try:
        yield dbs, run_id
    finally:
        dbs.close()


def test_cues_and_tags_load_with_their_weighted_edges(graph: GraphEnv, memory_built: tuple[Dbs, str]) -> None:
    """Cue and Tag nodes and CUES / TAGGED edges: the counts staging expects, weights carried."""
    dbs, _ = memory_built
    result = load(dbs.settings, dbs.run_id())
    assert result.status == "succeeded" and result.counts["edges_missing_ends"] == 0
    want = expected(dbs.settings)
    assert graph.counts() == want
    run_id = store.latest_run(dbs.staging)
    assert run_id is not None
    built = store.read_run(dbs.staging, run_id)
    assert want["nodes"]["Cue"] == len(built.cues) and want["nodes"]["Tag"] == len(built.tags)
    assert want["edges"]["CUES"] == sum(1 for e in built.edges if e.kind == "cue-content")
    rows = graph.query("MATCH (:Tag {id: 'conv:trip'})-[r:TAGGED]->(m:Message) RETURN m.id AS id, r.weight AS w")
    assert sorted(r["id"] for r in rows) == ["trip-m0", "trip-m1", "trip-m2"] and {r["w"] for r in rows} == {1.0}


def test_a_cypher_cue_path_returns_the_embedded_engines_top_results(
    graph: GraphEnv, memory_built: tuple[Dbs, str]
) -> None:
    """query -> cues -> content: the same top 3 messages from Cypher over the graph and from the engine."""
    dbs, _ = memory_built
    assert load(dbs.settings, dbs.run_id()).status == "succeeded"
    run_id = store.latest_run(dbs.staging)
    assert run_id is not None
    built = store.read_run(dbs.staging, run_id)
    index = build_index(built, run_id, np.zeros((sum(c.kind == "message" for c in built.content), 4), dtype=np.float32))
    # the query -> cue -> content path alone (off by default: recall.cue_content_weight), nothing along NEXT
    path_only = {"next_weight": 0.0, "reply_weight": 0.0, "hop_weight": 0.0, "cue_content_weight": 1.0}
    settings = dbs.settings.recall.model_copy(update={**path_only, "other_role_weight": 1.0})
    query = "vegetable garden compost tomatoes"
    request = RecallRequest(query=query)
    ranking = rank(index, query, None, request, settings, Switches(lexical=False, dense=False, tags=False))
    assert ranking.cue_activation
    engine = [index.ids[i] for i in ranking.order if ranking.score[i] > 0][:3]
    activated = [{"id": index.cue_ids[c], "a": a} for c, a in ranking.cue_activation]
    rows = graph.query(
        "UNWIND $cues AS q MATCH (c:Cue {id: q.id})-[r:CUES]->(m:Message)"
        " RETURN m.id AS id, sum(r.weight * q.a) AS score ORDER BY score DESC, id LIMIT 3",
        cues=activated,
    )
    cypher = [r["id"] for r in rows]
    assert len(engine) == 3 and cypher == engine
