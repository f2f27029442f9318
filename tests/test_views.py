"""The views `visible_messages` (archive.db migration 4) and `current_segments` (staging.db migration 8): a data dir
an older chatmem wrote gets them on open, they return exactly the rows of the filters they replace, and the
queries that read them keep the plans of those filters (SQLite flattens a plain view into the query)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from stage_support import stage_segment
from test_migrations import _v0_data_dir

from contracts.settings import Settings
from load import layers
from load.plan import count_sql, ordered_sql
from memory import cues_state
from staging import agent_reads, embeddings, extractions, facts, memory_inputs, segments, topics
from staging.archive import open_archive
from staging.ledger import open_run, open_staging
from staging.migrations import ARCHIVE, STAGING, schema_version

OLD_VISIBLE = "SELECT * FROM messages WHERE is_active = 1 AND is_hidden = 0 ORDER BY uuid"
OLD_CURRENT = "SELECT * FROM segments WHERE retired_run_id IS NULL ORDER BY segment_id"
VIEWS = ("visible_messages", "current_segments")


def _rows(conn: sqlite3.Connection, sql: str) -> list[tuple[object, ...]]:
    return [tuple(row) for row in conn.execute(sql)]


def _upgraded(tmp_path: Path) -> tuple[Settings, sqlite3.Connection, sqlite3.Connection]:
    """The old release's data dir (archive v1, staging v1) opened by today's code, then re-segmented with a far
    smaller budget, so that some of its segments are retired (the fixture has none) beside hidden and side-branch
    messages (it has both)."""
    settings = Settings(data_dir=_v0_data_dir(tmp_path), segment={"max_tokens": 16, "min_tokens": 0})
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    run_id = open_run(staging, stages=["segment"], exports=[], settings={}, code_version="t")
    result = stage_segment.run(archive, staging, run_id=run_id, settings=settings)
    assert result.status == "succeeded" and result.counts["segments_retired"] > 0
    return settings, archive, staging


def test_an_old_data_dir_gets_the_views_and_they_return_what_the_old_filters_returned(tmp_path: Path) -> None:
    """After the upgrade, each view holds exactly the rows (every column) its filter selected, no more, no less."""
    _, archive, staging = _upgraded(tmp_path)
    assert (schema_version(archive), schema_version(staging)) == (len(ARCHIVE), len(STAGING))
    history = dict(staging.execute("SELECT version, description FROM schema_migrations"))
    assert history[8].startswith("current_segments")
    assert dict(archive.execute("SELECT version, description FROM schema_migrations"))[4].startswith("visible_messages")

    visible = _rows(archive, "SELECT * FROM visible_messages ORDER BY uuid")
    assert visible == _rows(archive, OLD_VISIBLE)
    left_out = dict(_rows(archive, "SELECT is_active || is_hidden, COUNT(*) FROM messages GROUP BY 1"))
    assert left_out["00"] > 0 and left_out["11"] > 0  # side branches and hidden system turns: neither in the view
    assert len(visible) == left_out["10"]

    current = _rows(staging, "SELECT * FROM current_segments ORDER BY segment_id")
    assert current == _rows(staging, OLD_CURRENT)
    retired = staging.execute("SELECT COUNT(*) FROM segments WHERE retired_run_id IS NOT NULL").fetchone()[0]
    assert current and retired > 0
    assert [c[1] for c in staging.execute("PRAGMA table_info(current_segments)")] == [
        c[1] for c in staging.execute("PRAGMA table_info(segments)")
    ]


def test_the_readers_of_the_views_answer_as_the_old_filters_did(tmp_path: Path) -> None:
    """The converted readers, on the upgraded data dir with retired segments, against the filters written out."""
    _, archive, staging = _upgraded(tmp_path)
    old_current = {str(r[0]) for r in staging.execute("SELECT segment_id FROM segments WHERE retired_run_id IS NULL")}
    assert {s.segment_id for s in segments.iter_current_segments(staging, page_conversations=2)} == old_current
    assert segments.count_current(staging) == len(old_current)
    everything = [str(r[0]) for r in staging.execute("SELECT segment_id FROM segments")]
    assert set(topics.current_segment_ids(staging, everything)) == old_current
    paths = dict(segments.iter_active_paths(archive))
    for conversation_id, path in paths.items():
        old = [
            tuple(r)
            for r in archive.execute(
                "SELECT uuid FROM messages WHERE conversation_id = ? AND is_active = 1 AND is_hidden = 0 ORDER BY seq",
                (conversation_id,),
            )
        ]
        assert [m.uuid for m in path] == [r[0] for r in old]
        assert [m.uuid for m in agent_reads.active_path(archive, conversation_id)] == [r[0] for r in old]
        assert set(segments.message_texts(archive, conversation_id)) == {r[0] for r in old}
    old_texts = _rows(
        archive,
        "SELECT uuid FROM messages WHERE is_active = 1 AND is_hidden = 0 AND length(trim(text)) > 0 ORDER BY uuid",
    )
    assert sorted((m[0],) for m in memory_inputs.iter_visible_messages(archive)) == old_texts
    assert sorted((m[0],) for m in memory_inputs.iter_visible_texts(archive)) == old_texts
    old_rows = _rows(
        staging,
        "SELECT segment_id AS id FROM segments WHERE retired_run_id IS NULL ORDER BY id",
    )
    assert [(r[1],) for r in staging.execute(ordered_sql(layers.SEGMENTS))] == old_rows
    assert (
        staging.execute(count_sql(layers.CONTAINS_MESSAGE)).fetchone()[0]
        == (
            staging.execute(
                "SELECT COUNT(*) FROM segment_messages m JOIN segments s ON s.segment_id = m.segment_id"
                " WHERE s.retired_run_id IS NULL"
            ).fetchone()[0]
        )
    )


def _plans(tmp_path: Path) -> dict[str, list[str]]:
    """Every statement the converted readers send that names a view, with its EXPLAIN QUERY PLAN lines."""
    _, archive, staging = _upgraded(tmp_path)
    sent: list[str] = []
    for conn in (archive, staging):
        conn.set_trace_callback(sent.append)
    conversation = str(archive.execute("SELECT MIN(conversation_id) FROM messages").fetchone()[0])
    ids = [str(r[0]) for r in staging.execute("SELECT segment_id FROM segments")]
    dict(segments.iter_active_paths(archive))
    segments.message_texts(archive, conversation)
    segments._retire_others(staging, "r-plans", conversation, ids)
    list(segments.iter_current_segments(staging, unless_embedded_under="model"))
    segments.count_current(staging)
    embeddings.forget_retired_segments(staging)
    embeddings.count_embedded_as_is(staging, "model")
    extractions.drop_retired(staging)
    facts.current_mentions(staging)
    topics.segments_since(staging, "model", "")
    topics.current_segment_ids(staging, ids)
    topics.current_points(staging, "model")
    topics.kept_segment_sizes(staging, "r-base", ids[:2])
    agent_reads.active_path(archive, conversation)
    list(memory_inputs.iter_visible_messages(archive))
    list(memory_inputs.iter_visible_texts(archive))
    list(memory_inputs.iter_conversation_messages(archive, [conversation]))
    cues_state.conversation_digests(archive, {}, {})
    cues_state._new_speakers(archive, [conversation], set())
    for layer in (layers.SEGMENTS, layers.CONTAINS_MESSAGE, layers.SEGMENT_TOPIC):
        staging.execute(ordered_sql(layer)).fetchall()
    for conn in (archive, staging):
        conn.set_trace_callback(None)
    plans: dict[str, list[str]] = {}
    for sql in sent:
        if any(view in sql for view in VIEWS) and not sql.lstrip().upper().startswith(("BEGIN", "COMMIT")):
            conn = archive if "visible_messages" in sql else staging
            plans[sql] = [str(row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
    return plans


def test_every_query_on_a_view_is_planned_as_the_filter_written_out(tmp_path: Path) -> None:
    """SQLite flattens each view into the query that reads it: no plan materialises a view or walks it as a
    subquery, every read goes to the base table and its indexes (the same plans as the old filters: compared
    statement by statement with main's code on a 50k data dir, see /work/notes/s17views.md), and the hot reads
    keep their index: a conversation's messages by messages_by_conversation, a page of current segments by
    segments_by_conversation, the Segment layer streamed in its primary key's order (no sort)."""
    plans = _plans(tmp_path)
    assert len(plans) >= 20
    for sql, plan in plans.items():
        for line in plan:
            assert not any(view in line for view in VIEWS), (sql, plan)
            assert "MATERIALIZE" not in line, (sql, plan)
    by_conversation = "SEARCH messages USING INDEX messages_by_conversation"
    by_reader = {
        "FROM visible_messages WHERE conversation_id = ": by_conversation,
        "LEFT JOIN visible_messages m ON m.conversation_id = c.id": by_conversation,
        "FROM current_segments WHERE conversation_id = ": "SEARCH segments USING INDEX segments_by_conversation",
        "FROM current_segments s JOIN segment_messages": "SEARCH segments USING INDEX segments_by_conversation",
        "conversation_id WHERE length(trim(m.text))": "SCAN messages USING INDEX messages_by_conversation",
        "JOIN conversations c ON c.id = m.conversation_id WHERE m.conversation_id IN": "SEARCH messages USING INDEX",
    }
    for fragment, expected in by_reader.items():
        found = [plan for sql, plan in plans.items() if fragment in sql]
        assert found and all(any(line.startswith(expected) for line in plan) for plan in found), (fragment, found)
    [segment_layer] = [plan for sql, plan in plans.items() if "AS _key" in sql and "FROM current_segments)" in sql]
    assert segment_layer == ["SEARCH segments USING INDEX sqlite_autoindex_segments_1 (segment_id>?)"]
