"""The cues stage's reads from earlier stages' tables (staging/memory_inputs.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from staging import concepts as concept_store
from staging import memory_inputs as inputs
from staging import topics as topic_store
from staging.ledger import open_staging


def _staging_with_segments(path: Path, segments: int) -> sqlite3.Connection:
    """A staging.db with `segments` one-message segments (message m<i> in segment s<i>), all in topic 0 or 1."""
    conn = open_staging(path)
    with conn:
        conn.executemany(
            "INSERT INTO segments (segment_id, conversation_id, ordinal, boundary, message_count, token_estimate,"
            " content_hash, first_message_id, last_message_id, run_id) VALUES (?, 'c', ?, 'start', 1, 1, ?, ?, ?, 'r')",
            [(f"s{i}", i, f"h{i}", f"m{i}", f"m{i}") for i in range(segments)],
        )
        conn.executemany(
            "INSERT INTO segment_messages (segment_id, message_id, position, run_id) VALUES (?, ?, 0, 'r')",
            [(f"s{i}", f"m{i}") for i in range(segments)],
        )
    topics = [
        {"topic": t, "topic_uid": f"u{t}", "label": f"t{t}", "size": 1, "keywords": [], "representatives": []}
        for t in (0, 1)
    ]
    links = [("segment", f"s{i}", i % 2, f"u{i % 2}", 0.5, "hdbscan") for i in range(segments)]
    topic_store.write_run(conn, "r", {"status": "clustered", "points": segments, "topics": 2}, topics, links)
    return conn


def _steps(conn: sqlite3.Connection, message_ids: list[str]) -> tuple[list[tuple[str, str, str, float]], int]:
    """topic_rows' answer and the SQLite VM steps it took (counted every 100 instructions)."""
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(tick, 100)
    try:
        rows = inputs.topic_rows(conn, "r", message_ids)
    finally:
        conn.set_progress_handler(None, 100)
    return rows, steps[0]


def test_topic_rows_cost_follows_the_asked_messages_not_the_archive(tmp_path: Path) -> None:
    """Looking up a few messages' topics reads those messages' links, not every segment link of the run."""
    small = _staging_with_segments(tmp_path / "small.db", 20)
    large = _staging_with_segments(tmp_path / "large.db", 4000)
    asked = ["m3", "m4", "m5", "missing"]
    small_rows, small_steps = _steps(small, asked)
    large_rows, large_steps = _steps(large, asked)
    assert small_rows == large_rows == [("m3", "u1", "t1", 0.5), ("m4", "u0", "t0", 0.5), ("m5", "u1", "t1", 0.5)]
    assert large_steps <= 2 * small_steps + 5  # a scan of the run's links would cost ~200x more here


def _concept(concept_id: str, state: str = "active", merged_into: str | None = None) -> concept_store.ConceptRow:
    return concept_store.ConceptRow(concept_id, concept_id.title(), concept_id, "project", "", state, 0.8, [], 0, 1,
                                    None, None, merged_into, ["llm"], "r0", "r0", True)  # fmt: skip


def test_live_evidence_credits_merged_concepts_to_their_survivor_and_drops_dead_ones(tmp_path: Path) -> None:
    """Evidence of b (merged into a) counts for a, archived c and unknown ghost give none; order follows the rows."""
    conn = open_staging(tmp_path / "staging.db")
    concepts = [_concept("a"), _concept("b", "merged", "a"), _concept("c", "archived"), _concept("d", "weak")]
    concept_store.upsert_concepts(conn, concepts)
    spans = [
        ("a", "m1", 0.5),
        ("b", "m1", 0.9),
        ("b", "m2", 0.4),
        ("c", "m3", 0.7),
        ("d", "m4", 0.6),
        ("ghost", "m5", 1),
    ]
    for concept_id, message_id, confidence in spans:
        span = {"message_id": message_id, "text_key": message_id, "text": "t", "confidence": confidence}
        span |= {"segment_id": "s", "created_at": None, "hypothesis_type": "entity", "extractor": "offline"}
        concept_store.add_evidence(conn, concept_id, "r0", **span)
    assert inputs.live_evidence(conn) == [
        ("a", "A", "project", "m1", 0.5),
        ("a", "A", "project", "m1", 0.9),
        ("a", "A", "project", "m2", 0.4),
        ("d", "D", "project", "m4", 0.6),
    ]
