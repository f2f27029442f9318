"""Read-only queries behind the MCP server's tools (memory/queries.py, memory/timeline.py): conversations along
their active path, where a message sits, concept evidence, and what the latest clustering run says about topics.

Plain rows in a fixed order; every function works on a connection opened with `connect_readonly`. Lists of ids
are read in chunks of 500 (SQLite's bound-parameter limit is far above, but plans stay small).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import NamedTuple

from staging.db import IN_VALUES, json_values
from staging.embeddings import has_table


class PathMessage(NamedTuple):
    uuid: str
    role: str
    author: str | None
    created_at: str | None
    text: str


class Evidence(NamedTuple):
    concept_id: str
    message_id: str
    text: str
    confidence: float
    created_at: str | None


def conversation_row(archive: sqlite3.Connection, conversation_id: str) -> tuple[str | None, str | None, str] | None:
    """(title, created_at, format) of a conversation, None when the archive has no such conversation."""
    row = archive.execute(
        "SELECT title, created_at, format FROM conversations WHERE id = ?", (conversation_id,)
    ).fetchone()
    return None if row is None else (row[0], row[1], str(row[2]))


def active_path(archive: sqlite3.Connection, conversation_id: str) -> list[PathMessage]:
    """The conversation's visible messages on its active path (NEXT order), hidden ones left out as recall does."""
    rows = archive.execute(
        "SELECT uuid, role, author, created_at, text FROM visible_messages WHERE conversation_id = ? ORDER BY seq",
        (conversation_id,),
    )
    return [PathMessage(str(r[0]), str(r[1]), r[2], r[3], str(r[4])) for r in rows]


def message_place(archive: sqlite3.Connection, message_id: str) -> tuple[str, bool, bool] | None:
    """(conversation_id, is_active, is_hidden) of a message, None when the archive has no such message."""
    row = archive.execute(
        "SELECT conversation_id, is_active, is_hidden FROM messages WHERE uuid = ?", (message_id,)
    ).fetchone()
    return None if row is None else (str(row[0]), bool(row[1]), bool(row[2]))


def message_conversations(archive: sqlite3.Connection, message_ids: Iterable[str]) -> dict[str, str]:
    """message id -> conversation id, for the ids the archive has."""
    rows = archive.execute(
        f"SELECT uuid, conversation_id FROM messages WHERE uuid IN {IN_VALUES}", (json_values(set(message_ids)),)
    )
    return {str(row[0]): str(row[1]) for row in rows}


def conversation_titles(archive: sqlite3.Connection, conversation_ids: Iterable[str]) -> dict[str, str | None]:
    rows = archive.execute(
        f"SELECT id, title FROM conversations WHERE id IN {IN_VALUES}", (json_values(set(conversation_ids)),)
    )
    return {str(row[0]): row[1] for row in rows}


def evidence(staging: sqlite3.Connection, concept_ids: Iterable[str]) -> list[Evidence]:
    """Every evidence span of these concepts, oldest first (undated last), then by message id."""
    if not has_table(staging, "concept_evidence"):
        return []
    rows = staging.execute(
        "SELECT concept_id, message_id, text, confidence, created_at FROM concept_evidence"
        f" WHERE concept_id IN {IN_VALUES}",
        (json_values(set(concept_ids)),),
    )
    found = [Evidence(str(r[0]), str(r[1]), str(r[2]), float(r[3]), r[4]) for r in rows]
    found.sort(key=lambda e: (e.created_at is None, e.created_at or "", e.message_id, e.concept_id, e.text))
    return found


def has_concepts(staging: sqlite3.Connection) -> bool:
    """Whether the concepts stage has stored any concept yet (its table may exist, empty, from the first open)."""
    return has_table(staging, "concepts") and staging.execute("SELECT 1 FROM concepts LIMIT 1").fetchone() is not None


def has_fact_rows(staging: sqlite3.Connection) -> bool:
    """Whether the garden stage has recorded any fact (its table may exist, empty, from the first open)."""
    return has_table(staging, "facts") and staging.execute("SELECT 1 FROM facts LIMIT 1").fetchone() is not None


def concepts_version(staging: sqlite3.Connection) -> tuple[str | None, int]:
    """(when the last concepts or garden stage run finished, how many concepts there are): it changes whenever
    the store can have changed, since only those two stages write it (the garden merges and archives)."""
    finished = staging.execute(  # the garden writes concepts too (merges, archiving)
        "SELECT MAX(finished_at) FROM stage_runs WHERE stage IN ('concepts', 'garden') AND status = 'succeeded'"
    ).fetchone()[0]
    count = staging.execute("SELECT COUNT(*) FROM concepts").fetchone()[0] if has_table(staging, "concepts") else 0
    return finished, int(count)


def evidence_counts(staging: sqlite3.Connection) -> dict[str, int]:
    """concept id -> how many evidence spans it has."""
    if not has_table(staging, "concept_evidence"):
        return {}
    rows = staging.execute("SELECT concept_id, COUNT(*) FROM concept_evidence GROUP BY concept_id")
    return {str(r[0]): int(r[1]) for r in rows}


def segment_conversations(staging: sqlite3.Connection, segment_ids: Iterable[str]) -> dict[str, str]:
    """segment id -> the conversation it was cut from."""
    if not has_table(staging, "segments"):
        return {}
    rows = staging.execute(
        f"SELECT segment_id, conversation_id FROM segments WHERE segment_id IN {IN_VALUES}",
        (json_values(set(segment_ids)),),
    )
    return {str(row[0]): str(row[1]) for row in rows}


def topic_concepts(staging: sqlite3.Connection, run_id: str) -> dict[int, list[tuple[str, float]]]:
    """topic -> (concept id, weight) of the run's concept BELONGS_TO links, strongest first."""
    found: dict[int, list[tuple[str, float]]] = {}
    rows = staging.execute(
        "SELECT topic, item_id, weight FROM topic_links WHERE run_id = ? AND kind = 'concept'"
        " ORDER BY topic, weight DESC, item_id",
        (run_id,),
    )
    for topic, concept_id, weight in rows:
        found.setdefault(int(topic), []).append((str(concept_id), float(weight)))
    return found
