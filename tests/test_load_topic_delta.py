"""The topic layers read only what changed (load/staging_delta.py, groups `topic`, `segment_topic`,
`concept_topic`): over a series of cluster runs written by the cluster stage's own writers (staging.topics:
write_assigned for an incremental run, write_run for a full fit) and of staging changes with no cluster run (a
segment retired, a concept merged), each load reads the Topic and BELONGS_TO rows that differ from the cluster run
its mark names, and the graph equals a fresh full load of the same data (every node and edge with its properties).
A full fit, a re-run of the newest cluster run and a pruned marked run are diffed whole. Real archive.db and
staging.db, the real segment, extract and concepts stages, the real local Bolt server (tests/graph_fixtures.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from concept_support import Dbs, conversation, write_archive
from stage_support import (
    cluster_stage,
    ingest_stage,
    stage_concepts,
    stage_embed,
    stage_embed_concepts,
    stage_extract,
    stage_segment,
)

from clients.embedders import StaticMiniLM
from contracts.settings import Settings
from load import staging_delta
from load.layers import CONCEPT_TOPIC, LATEST_CLUSTER_RUN, SEGMENT_TOPIC, TOPICS
from staging import concepts as concept_store
from staging import staging_changes
from staging import topics as topic_store
from staging.archive import open_archive
from staging.db import Transaction
from staging.ledger import open_run, open_staging
from tests.graph_helpers import GraphEnv, expected, load
from tests.test_cluster import themed_export
from tests.test_cluster_incremental import new_conversations
from tests.test_load_archive_delta import fresh_full_load, snapshot
from tests.test_load_layers import _later_run, _live_concepts, _segments, _stage_succeeded, staged

__all__ = ["staged"]  # the fixture of tests/test_load_layers.py: real segment, extract and concepts stages

pytest_plugins = ["tests.graph_fixtures"]

SCOPED = {name: scoped for group in staging_delta.GROUPS for name, scoped in group.scoped.items()}
TOPIC_NOTE, SEGMENT_NOTE, CONCEPT_NOTE = "Topic:", "Segment-BELONGS_TO-Topic:", "Concept-BELONGS_TO-Topic:"

BREAD = [
    ("user", "I bake sourdough bread every weekend. Sourdough bread needs a starter."),
    ("assistant", "Sourdough bread rises slowly; feed the starter the night before."),
    ("user", "My sourdough bread starter is called Clint; the bread crust is my pride."),
]
CHESS = [
    ("user", "I play chess openings every evening: the Sicilian defence is my favourite chess opening."),
    ("assistant", "The Sicilian defence rewards study; chess engines help with the opening lines."),
]


def _note(notes: list[str], prefix: str) -> str:
    return next(note for note in notes if note.startswith(prefix))


def _only(notes: list[str], prefix: str) -> int:
    """How many ids a scoped read of the group read (fails when the group was diffed whole)."""
    return int(_note(notes, prefix).split("only the ")[1].split()[0])


def _read(notes: list[str], layer: str) -> int:
    per_layer = _note(notes, "rows read per layer:").removeprefix("rows read per layer: ")
    return dict((name, int(n)) for name, n in (part.rsplit(" ", 1) for part in per_layer.split(", ")))[layer]


def _topics(dbs: Dbs, run_id: str) -> dict[int, dict[str, Any]]:
    return {t["topic"]: t for t in topic_store.list_topics(dbs.staging, run_id)}


def _links(dbs: Dbs, run_id: str) -> dict[tuple[str, str], tuple[int, str]]:
    rows = dbs.staging.execute("SELECT kind, item_id, topic, topic_uid FROM topic_links WHERE run_id = ?", (run_id,))
    return {(str(r[0]), str(r[1])): (int(r[2]), str(r[3])) for r in rows}


def full_fit(dbs: Dbs, run_id: str, segments: list[list[str]], concepts: list[list[str]], tag: str) -> None:
    """What a full fit writes for run `run_id`: topic i holds segments[i] and concepts[i], new uids (`tag`)."""
    topics, links = [], []
    for i, (members, ideas) in enumerate(zip(segments, concepts, strict=True)):
        uid = f"topic-{tag}-{i}"
        topics.append(
            {"topic": i, "topic_uid": uid, "label": f"{tag} {i}", "size": len(members), "keywords": [tag, str(i)]}
            | {"representatives": members[:2]}
        )
        links += [("segment", s, i, uid, 0.9, "hdbscan") for s in members]
        links += [("concept", c, i, uid, 0.5, "predicted") for c in ideas]
    summary = {"status": "clustered", "model": "m", "points": sum(map(len, segments)), "topics": len(topics)}
    topic_store.write_run(dbs.staging, run_id, summary, topics, links)
    _stage_succeeded(dbs, run_id, "cluster")


def incremental(
    dbs: Dbs, run_id: str, base: str, place: dict[tuple[str, str], int], label: dict[int, str] | None = None
) -> None:
    """What an incremental run writes (cluster/assign.py): the base's topics and links carried over, the items of
    `place` ((kind, id) -> topic, -1: noise) placed again, sizes recounted, some labels changed (`label`)."""
    base_topics, kept = _topics(dbs, base), _links(dbs, base)
    current = {str(r[0]) for r in dbs.staging.execute("SELECT segment_id FROM current_segments")}
    members = {key: value[0] for key, value in kept.items() if key[0] == "concept" or key[1] in current}
    members.update(place)
    sizes = {t: sum(1 for k, v in members.items() if k[0] == "segment" and v == t) for t in base_topics}
    topics = [
        {**row, "size": sizes[t], "label": (label or {}).get(t, row["label"])} for t, row in sorted(base_topics.items())
    ]
    links = [
        (kind, item, topic, base_topics[topic]["topic_uid"], 0.7, "predicted")
        for (kind, item), topic in sorted(place.items())
        if topic >= 0
    ]
    summary = {"status": "clustered", "model": "m", "points": len(current), "topics": len(topics)}
    topic_store.write_assigned(dbs.staging, run_id, base, summary, topics, links, sorted(place))
    _stage_succeeded(dbs, run_id, "cluster")


def new_conversation(dbs: Dbs, name: str, messages: list[tuple[str, str]], tag: str) -> tuple[str, list[str]]:
    """A new conversation through the real segment, extract and concepts stages: the run, its new segments."""
    before = set(_segments(dbs))
    write_archive(dbs.archive, [conversation(name, messages)], tag=tag)
    run_id = _later_run(dbs)
    for stage in (stage_segment, stage_extract, stage_concepts):
        assert stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings).status == "succeeded"
    return run_id, sorted(set(_segments(dbs)) - before)


def equal_to_a_full_load(graph: GraphEnv, dbs: Dbs, run_id: str) -> None:
    assert graph.counts() == expected(dbs.settings)
    assert snapshot(graph) == fresh_full_load(graph, dbs.settings, run_id)


def test_cluster_runs_and_staging_changes_read_only_the_topic_rows_that_changed_and_equal_a_full_load(
    graph: GraphEnv, staged: Dbs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Incremental runs (new segments and concepts placed, a topic relabelled, a segment moved), a segment retired
    and a concept merged with no cluster run, a re-run of the newest cluster run, then a full fit and an
    incremental run after it: after each, the load's scoped (or, where it must, whole) read leaves the graph equal
    to a fresh full load."""
    dbs = staged
    monkeypatch.setattr(staging_delta, "FULL_SHARE", 1.0)  # a handful of segments: most of them change here
    segments, concepts = _segments(dbs), sorted(_live_concepts(dbs))
    assert len(segments) >= 3 and len(concepts) >= 3
    fit = _later_run(dbs)
    full_fit(dbs, fit, [segments[:2], segments[2:]], [concepts[:2], concepts[2:]], "a")
    first = load(dbs.settings, fit)
    assert first.status == "succeeded" and "diffed whole" in _note(first.notes, TOPIC_NOTE)
    equal_to_a_full_load(graph, dbs, fit)

    # 1. a new conversation: its segments and concepts placed, both topics resized, topic 1 relabelled
    run_id, new = new_conversation(dbs, "bread", BREAD, "b")
    fresh = sorted(set(_live_concepts(dbs)) - set(concepts))
    assert new
    placed = {("segment", s): 1 for s in new} | {("concept", c): 0 for c in fresh} | {("concept", concepts[0]): 1}
    incremental(dbs, run_id, fit, placed, {1: "bread"})
    result = load(dbs.settings, run_id)
    assert result.status == "succeeded"
    assert _only(result.notes, TOPIC_NOTE) == 1 and _read(result.notes, "Topic") == 1  # topic 0 kept its size
    assert _only(result.notes, SEGMENT_NOTE) == len(new)
    assert _only(result.notes, CONCEPT_NOTE) >= 1 + len(fresh)
    assert _one(graph, "MATCH (t:Topic {id: 'topic-a-1'}) RETURN t.label AS n") == "bread"
    equal_to_a_full_load(graph, dbs, run_id)

    # 2. a segment moved to the other topic, one placed as noise (its link retired), no topic changed
    later = _later_run(dbs)
    incremental(dbs, later, run_id, {("segment", segments[0]): 1, ("segment", segments[1]): -1})
    result = load(dbs.settings, later)
    assert _only(result.notes, SEGMENT_NOTE) == 2 and result.counts["edges_deleted"] >= 1
    assert _only(result.notes, TOPIC_NOTE) == 2  # both resized
    equal_to_a_full_load(graph, dbs, later)

    # 3. no cluster run: a segment retired (its node and BELONGS_TO edge leave) and a concept merged
    gone = segments[-1]
    rows = concept_store.load_concepts(dbs.staging)
    merged = concepts[-1]
    rows[merged].state, rows[merged].merged_into = "merged", concepts[0]
    quiet = _later_run(dbs)
    with Transaction(dbs.staging):
        dbs.staging.execute("UPDATE segments SET retired_run_id = ? WHERE segment_id = ?", (quiet, gone))
        concept_store.upsert_concepts(dbs.staging, [rows[merged]])
    _stage_succeeded(dbs, quiet, "concepts")
    result = load(dbs.settings, quiet)
    assert _only(result.notes, TOPIC_NOTE) == 0 and _read(result.notes, "Topic") == 0
    conversation_of = dbs.staging.execute("SELECT conversation_id FROM segments WHERE segment_id = ?", (gone,))
    siblings = dbs.staging.execute(
        "SELECT COUNT(*) FROM segments WHERE conversation_id = ?", conversation_of.fetchone()
    )
    assert _only(result.notes, SEGMENT_NOTE) == siblings.fetchone()[0]
    assert _only(result.notes, CONCEPT_NOTE) >= 1
    assert _one(graph, "MATCH (:Segment {id: $s})-[r:BELONGS_TO]->() RETURN count(r) AS n", s=gone) in (None, 0)
    assert _one(graph, "MATCH (:Concept {id: $c})-[r:BELONGS_TO]->() RETURN count(r) AS n", c=merged) in (None, 0)
    equal_to_a_full_load(graph, dbs, quiet)

    # 4. the newest cluster run re-run after it was loaded (the same run id, other rows): diffed whole
    incremental(dbs, later, run_id, {("segment", segments[0]): 0}, {0: "re-run"})
    result = load(dbs.settings, later)
    assert f"cluster run {later} was re-run or pruned" in _note(result.notes, TOPIC_NOTE)
    assert "diffed whole" in _note(result.notes, SEGMENT_NOTE)
    equal_to_a_full_load(graph, dbs, later)

    # 5. a full fit: new uids, every link rewritten; past FULL_SHARE the groups are diffed whole
    monkeypatch.setattr(staging_delta, "FULL_SHARE", 0.3)
    refit = _later_run(dbs)
    live, ideas = _segments(dbs), sorted(_live_concepts(dbs))
    full_fit(dbs, refit, [live[::2], live[1::2]], [ideas[::2], ideas[1::2]], "z")
    result = load(dbs.settings, refit)
    for prefix in (TOPIC_NOTE, SEGMENT_NOTE, CONCEPT_NOTE):
        assert "changed)" in _note(result.notes, prefix) and "diffed whole" in _note(result.notes, prefix)
    equal_to_a_full_load(graph, dbs, refit)

    # 6. an incremental run on the refit, with a second new conversation
    monkeypatch.setattr(staging_delta, "FULL_SHARE", 1.0)
    run_id, new = new_conversation(dbs, "chess", CHESS, "c")
    incremental(dbs, run_id, refit, {("segment", s): 0 for s in new}, {0: "chess"})
    result = load(dbs.settings, run_id)
    assert _only(result.notes, TOPIC_NOTE) >= 1 and _only(result.notes, SEGMENT_NOTE) == len(new)
    equal_to_a_full_load(graph, dbs, run_id)
    # and a load with nothing new reads no topic row
    assert load(dbs.settings, run_id).status == "skipped"


def test_a_scope_that_misses_a_changed_link_is_caught_by_the_comparison_with_a_full_load(
    graph: GraphEnv, staged: Dbs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the test above compares would catch a scope that misses a changed topic row: with the links written
    and retired since the mark left out, a segment moved to another topic keeps its old BELONGS_TO edge."""
    dbs = staged
    monkeypatch.setattr(staging_delta, "FULL_SHARE", 1.0)
    segments, concepts = _segments(dbs), sorted(_live_concepts(dbs))
    fit = _later_run(dbs)
    full_fit(dbs, fit, [segments[:2], segments[2:]], [concepts[:2], concepts[2:]], "a")
    assert load(dbs.settings, fit).status == "succeeded"
    run_id = _later_run(dbs)
    incremental(dbs, run_id, fit, {("segment", segments[0]): 1})
    monkeypatch.setattr(staging_changes, "topic_links_changed", lambda *_: [])
    result = load(dbs.settings, run_id)
    assert _only(result.notes, SEGMENT_NOTE) == 0 and _only(result.notes, TOPIC_NOTE) == 2
    monkeypatch.undo()
    assert snapshot(graph) != fresh_full_load(graph, dbs.settings, run_id)
    moved = "MATCH (:Segment {id: $s})-[:BELONGS_TO]->(t:Topic) RETURN t.id AS n"
    assert _one(graph, moved, s=segments[0]) == "topic-a-0"  # the fit's edge: the move never reached the graph


def test_a_pruned_marked_cluster_run_diffs_the_topic_layers_whole(
    graph: GraphEnv, staged: Dbs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mark's cluster run gone (pruned by later runs): its rows can no longer be compared, the groups are
    diffed whole and the graph equals a full load."""
    dbs = staged
    monkeypatch.setattr(staging_delta, "FULL_SHARE", 1.0)
    segments, concepts = _segments(dbs), sorted(_live_concepts(dbs))
    fit = _later_run(dbs)
    full_fit(dbs, fit, [segments], [concepts], "a")
    assert load(dbs.settings, fit).status == "succeeded"
    base = fit
    for n in range(3):  # the run before the newest and the newest clustered run stay: `fit` is pruned
        run_id = _later_run(dbs)
        incremental(dbs, run_id, base, {("segment", segments[n % len(segments)]): 0}, {0: f"t{n}"})
        base = run_id
    assert dbs.staging.execute("SELECT 1 FROM cluster_runs WHERE run_id = ?", (fit,)).fetchone() is None
    result = load(dbs.settings, base)
    assert f"cluster run {fit} was re-run or pruned" in _note(result.notes, TOPIC_NOTE)
    equal_to_a_full_load(graph, dbs, base)


def test_each_scoped_topic_read_over_every_id_is_the_layers_full_sql(staged: Dbs) -> None:
    """SCOPED[layer].rows over every id is exactly the layer's SQL (no drift between the two), and the Topic
    layer's SQL at a named run is its SQL at the newest run."""
    dbs = staged
    segments, concepts = _segments(dbs), sorted(_live_concepts(dbs))
    full_fit(dbs, _later_run(dbs), [segments[:1], segments[1:]], [concepts[:1], concepts[1:]], "a")
    latest = dbs.staging.execute(f"SELECT {LATEST_CLUSTER_RUN}").fetchone()[0]
    assert TOPICS.sql != staging_delta.TOPICS_AT
    at_latest = sorted(map(tuple, dbs.staging.execute(staging_delta.TOPICS_AT, {"run": latest})))
    assert at_latest == sorted(map(tuple, dbs.staging.execute(TOPICS.sql)))
    ids = {
        TOPICS: "SELECT topic_uid FROM topics",
        SEGMENT_TOPIC: "SELECT segment_id FROM segments",
        CONCEPT_TOPIC: "SELECT concept_id FROM concepts",
    }
    for layer, sql in ids.items():
        everyone = json.dumps(sorted({str(r[0]) for r in dbs.staging.execute(sql)}))
        full = sorted(map(tuple, dbs.staging.execute(layer.sql)))
        scoped = sorted(map(tuple, dbs.staging.execute(SCOPED[layer.name].rows, {"scope": everyone})))
        assert scoped == full and full, layer.name


def test_a_deleted_or_rewritten_cluster_run_is_logged(staged: Dbs) -> None:
    """The `cluster` log: a re-run of the newest cluster run (its rows rewritten under its id) names it."""
    dbs = staged
    start = staging_changes.mark(dbs.staging)
    assert start.cluster_run is not None
    full_fit(dbs, start.cluster_run, [_segments(dbs)], [sorted(_live_concepts(dbs))], "again")
    assert list(staging_changes.changed_since(dbs.staging, staging_changes.CLUSTER, start)) == [start.cluster_run]
    assert staging_changes.Mark.from_json(start.as_json()) == start


def _one(graph: GraphEnv, cypher: str, **params: Any) -> Any:
    rows = graph.query(cypher, **params)
    return rows[0]["n"] if rows else None


def test_the_real_cluster_stage_incremental_runs_and_a_refit_load_equal_to_a_full_load(
    graph: GraphEnv, tmp_path: Path
) -> None:
    """The real stages (ingest to cluster: real UMAP, HDBSCAN, Optuna on 60 small segments) over four days: a first
    fit, three new segments placed incrementally, the same conversations re-exported with other text (their
    segments retired and placed again), then enough new ones for a refit. After each day's load the graph equals
    a fresh full load; the incremental days read only the links of the segments placed."""
    embedder = StaticMiniLM()
    settings = Settings(data_dir=tmp_path / "data", load=graph.load_settings())
    settings.cluster = settings.cluster.model_copy(update={"n_trials": 4, "phrase_share": 0.3})
    days = [
        ("r1", themed_export(tmp_path / "themes.jsonl")),
        ("r2", new_conversations(tmp_path / "new.jsonl", per_theme=1)),
        ("r3", new_conversations(tmp_path / "again.jsonl", per_theme=1, seed=12)),
        ("r4", new_conversations(tmp_path / "many.jsonl", per_theme=8, seed=13)),
    ]
    incremental_days = 0
    for run_id, export in days:
        archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
        try:
            open_run(staging, stages=["all"], exports=[str(export)], settings={}, code_version="test", run_id=run_id)
            ingest_stage.run(archive, staging, run_id=run_id, settings=settings, exports=[export])
            for stage in (stage_segment, stage_extract, stage_concepts):
                assert stage.run(archive, staging, run_id=run_id, settings=settings).status == "succeeded"
            stage_embed.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder)
            stage_embed_concepts.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder)
            clustered = cluster_stage.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder)
            placed = staging.execute("SELECT COUNT(*) FROM topic_link_rows WHERE run_id = ?", (run_id,)).fetchone()
        finally:
            archive.close()
            staging.close()
        assert clustered.status == "succeeded"
        result = load(settings, run_id)
        assert result.status == "succeeded"
        if clustered.counts.get("incremental"):
            incremental_days += 1
            assert 0 < _only(result.notes, SEGMENT_NOTE) <= placed[0] + 2
            assert _read(result.notes, "Segment-BELONGS_TO-Topic") <= placed[0]
        elif run_id != "r1":
            assert "diffed whole" in _note(result.notes, SEGMENT_NOTE)
        assert graph.counts() == expected(settings)
        assert snapshot(graph) == fresh_full_load(graph, settings, run_id), run_id
    assert incremental_days == 2
