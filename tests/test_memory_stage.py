"""memory/stage.py (the cues stage) on real SQLite files after the real segment, extract and concepts stages."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive
from stage_support import cues_stage as cues
from stage_support import stage_concepts, stage_embed, stage_extract, stage_segment

from contracts.errors import ChatmemError
from contracts.memory import RecallRequest
from contracts.settings import Settings
from memory.key_model import STATIC, with_model
from memory.service import Memory
from staging import embeddings as vectors
from staging import memory as store
from staging import memory_inputs as inputs
from staging import topics as topic_store
from staging.ledger import open_run
from staging.memory_history import LIVE

GARDEN = [
    ("user", "I want to grow a vegetable garden this spring. The vegetable garden needs compost."),
    ("assistant", "A vegetable garden does well with compost and six hours of sun."),
    ("user", "Which tomatoes grow well in a vegetable garden with compost?"),
]
TRIP = [
    ("user", "We're planning a trip to Lisbon in May. Lisbon has great tram rides."),
    ("assistant", "Lisbon in May is lovely; take tram 28 early."),
]


def built(tmp_path: Path) -> tuple[Dbs, str]:
    dbs = open_dbs(tmp_path)
    write_archive(dbs.archive, [conversation("garden", GARDEN), conversation("trip", TRIP)])
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts):
        stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    return dbs, run_id


def _rows(staging: sqlite3.Connection, run_id: str) -> dict[str, list[tuple[object, ...]]]:
    """The memory of the run (rows live at it), less the run columns."""
    return {
        table: [
            tuple(r)[1:-1]
            for r in staging.execute(f"SELECT * FROM {table} WHERE {LIVE} ORDER BY 2, 3", (run_id, run_id))
        ]
        for table in store.RUN_TABLES
        if table != "memory_runs"
    }


def test_the_cues_stage_builds_content_cues_and_tags_from_the_concepts(tmp_path: Path) -> None:
    """Every visible message is content; the offline extractor's concepts are cues linked to their evidence."""
    dbs, run_id = built(tmp_path)
    result = cues.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    assert result.status == "succeeded" and result.counts["content"] == 5 and result.counts["concept_cues"] > 0
    graph = store.read_run(dbs.staging, run_id)
    assert {c.content_id for c in graph.content} == {f"garden-m{i}" for i in range(3)} | {"trip-m0", "trip-m1"}
    evidence = dbs.staging.execute("SELECT DISTINCT concept_id, message_id FROM concept_evidence").fetchall()
    edges = {(e.src, e.dst) for e in graph.edges if e.kind == "cue-content"}
    assert all((f"concept:{c}", m) in edges for c, m in evidence)
    assert {t.kind for t in graph.tags} >= {"conversation", "day", "month", "role", "source"}
    assert any("no topics yet" in note for note in result.notes)  # too small to cluster: said, not hidden


def test_a_rerun_writes_the_same_rows(tmp_path: Path) -> None:
    """Idempotent: the same run twice, or a new run over the same inputs, writes identical rows."""
    dbs, run_id = built(tmp_path)
    cues.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    first = _rows(dbs.staging, run_id)
    cues.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    assert _rows(dbs.staging, run_id) == first
    other = open_run(dbs.staging, stages=["cues"], exports=[], settings={}, code_version="t", run_id=f"{run_id}-z")
    cues.run(dbs.archive, dbs.staging, run_id=other, settings=dbs.settings)
    assert _rows(dbs.staging, other) == first and store.latest_run(dbs.staging) == other


def test_the_stage_run_is_recorded_in_the_ledger(tmp_path: Path) -> None:
    """Steps 1 and 6: a stage_runs row for `cues` with its counts."""
    dbs, run_id = built(tmp_path)
    cues.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    row = dbs.staging.execute(
        "SELECT status, rows_in FROM stage_runs WHERE run_id = ? AND stage = 'cues'", (run_id,)
    ).fetchone()
    assert tuple(row) == ("succeeded", 5)


def test_memory_service_opens_the_latest_run_once_and_answers(tmp_path: Path) -> None:
    """memory.service.Memory: what a long-lived caller (the MCP server) uses; a data dir without memory says so."""
    dbs, run_id = built(tmp_path)
    cues.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    memory = Memory.open(dbs.settings)
    result = memory.recall(RecallRequest(query="Lisbon tram rides", budget_tokens=500))
    best = min(result.pieces, key=lambda p: p.rank)
    assert best.conversation_id == "trip" and memory.index.run_id == run_id
    with pytest.raises(ChatmemError, match="nothing in"):
        Memory.open(Settings(data_dir=tmp_path / "empty"))


def test_a_run_in_tiny_batches_writes_the_same_rows_as_one_batch(tmp_path: Path) -> None:
    """Streaming by conversation batches changes nothing: one conversation per batch gives one batch's rows."""
    # rebuild_share 0: the second run builds in full too (tests/test_cues_incremental.py covers the other path)
    dbs = open_dbs(tmp_path, memory={"hub_share": 0.3, "hub_min_content": 2, "rebuild_share": 0})
    repeats = [
        ("user", "Compost for the vegetable garden, please."),
        ("user", "Compost for the vegetable garden please"),
    ]
    chats = [conversation("garden", GARDEN), conversation("trip", TRIP), conversation("again", GARDEN + repeats)]
    write_archive(dbs.archive, chats)
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts):
        stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    segments = [str(r[0]) for r in dbs.staging.execute("SELECT segment_id FROM segments ORDER BY 1")]
    topics = [
        {"topic": i, "topic_uid": f"u{i}", "label": f"t{i}", "size": 1, "keywords": [], "representatives": []}
        for i in (0, 1)
    ]
    links = [("segment", s, i, f"u{i}", 0.5 + i / 10, "hdbscan") for i, s in enumerate(segments[:2])]
    topic_store.write_run(dbs.staging, run_id, {"status": "clustered", "points": 2, "topics": 2}, topics, links)
    whole = cues.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    first, summary = _rows(dbs.staging, run_id), store.run_summary(dbs.staging, run_id)
    other = open_run(dbs.staging, stages=["cues"], exports=[], settings={}, code_version="t", run_id=f"{run_id}-z")
    tiny = cues.run(dbs.archive, dbs.staging, run_id=other, settings=dbs.settings, batch_messages=1)
    assert whole.counts["merged_nodes"] > 0 and whole.counts["hub_cues"] > 0  # both global parts are exercised
    assert any(row[0].startswith("topic:") for row in first["memory_tags"])
    every = [str(r[0]) for r in dbs.archive.execute("SELECT uuid FROM messages")]
    assert inputs.topic_rows(dbs.staging, run_id, every) == inputs.topic_messages(dbs.staging)[1]  # per batch = all
    assert _rows(dbs.staging, other) == first
    again = store.run_summary(dbs.staging, other) or {}
    again["summary"]["full_run"] = run_id  # a full build names itself
    assert {**again, "run_id": run_id} == summary
    # the second run finds keys cached, and digests no conversation: none changed since the first (cues_state)
    graph_counts = [k for k in whole.counts if not k.startswith("keys_") and k != "conversations_digested"]
    assert [tiny.counts[k] for k in graph_counts] == [whole.counts[k] for k in graph_counts]


def test_after_the_embed_stage_the_cues_stage_embeds_no_key_of_a_memory_that_names_nobody(tmp_path: Path) -> None:
    """With the static key model every key is the message text the embed stage embedded, so the cues stage finds
    all its key vectors cached (under `auto` a small archive gets the full model instead: memory/key_model.py)."""
    dbs, run_id = built(tmp_path)
    static = with_model(dbs.settings, STATIC)
    embedded = stage_embed.run(dbs.archive, dbs.staging, run_id=run_id, settings=static)
    assert embedded.counts["texts_embedded"] == 5
    stored = dbs.staging.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    result = cues.run(dbs.archive, dbs.staging, run_id=run_id, settings=static)
    assert result.counts["keys_embedded"] == 0 and result.counts["keys_cached"] == 5
    assert dbs.staging.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] == stored  # no vector of its own
    texts = [str(r[0]) for r in dbs.archive.execute("SELECT text FROM messages")]
    memory = Memory.open(static)
    cached = vectors.load_vectors(dbs.staging, memory.embedder.key, [vectors.text_hash(t) for t in texts])
    assert len(cached) == 5 and np.allclose(
        memory.index.dense[memory.index.position["trip-m1"]], cached[vectors.text_hash(TRIP[1][1])]
    )
