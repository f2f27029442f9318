"""Reads the cues stage (and recall) need from the archive and from earlier stages' tables, read-only.

Rows come back as plain tuples in a fixed order, so the pure graph builder sees the same inputs every time.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator

from staging import concepts as concept_store
from staging import topics as topic_store
from staging.db import IN_VALUES, json_values

MessageTuple = tuple[str, str, str | None, int, str, str | None, str | None, str, str]
"""uuid, conversation_id, title, seq, role, author, created_at, text, source format."""


def iter_visible_messages(archive: sqlite3.Connection) -> Iterator[MessageTuple]:
    """Every visible active message with text, conversation by conversation, in seq order."""
    cursor = archive.execute(
        "SELECT m.uuid, m.conversation_id, c.title, m.seq, m.role, m.author, m.created_at, m.text, c.format"
        " FROM visible_messages m JOIN conversations c ON c.id = m.conversation_id WHERE length(trim(m.text)) > 0"
        " ORDER BY m.conversation_id, m.seq"
    )
    for row in cursor:
        yield (str(row[0]), str(row[1]), row[2], int(row[3]), str(row[4]), row[5], row[6], str(row[7]), str(row[8]))


def iter_visible_texts(archive: sqlite3.Connection) -> Iterator[tuple[str, str, str | None, str]]:
    """(uuid, role, author, text) of the same messages as `iter_visible_messages`, in table order: a plain scan
    for the passes that need no conversation order (the ordered read walks the conversation index and fetches
    each message row from wherever it lies)."""
    cursor = archive.execute("SELECT uuid, role, author, text FROM visible_messages WHERE length(trim(text)) > 0")
    for row in cursor:
        yield str(row[0]), str(row[1]), row[2], str(row[3])


def message_texts(archive: sqlite3.Connection, ids: Iterable[str]) -> dict[str, str]:
    rows = archive.execute(f"SELECT uuid, text FROM messages WHERE uuid IN {IN_VALUES}", (json_values(set(ids)),))
    return {str(row[0]): str(row[1]) for row in rows}


def conversation_titles(archive: sqlite3.Connection) -> dict[str, str | None]:
    return {str(r[0]): r[1] for r in archive.execute("SELECT id, title FROM conversations")}


def live_evidence(staging: sqlite3.Connection) -> list[tuple[str, str, str, str, float]]:
    """(concept_id, title, type, message_id, confidence) for every concept still alive, evidence of concepts merged
    away credited to their survivor."""
    if not concept_store.has_store(staging):
        return []
    concepts = concept_store.load_concepts(staging)
    rows = []
    heads: dict[str, tuple[str, str, str] | None] = {}  # evidence comes concept by concept: resolve each once
    for concept_id, message_id, confidence in staging.execute(
        "SELECT concept_id, message_id, confidence FROM concept_evidence ORDER BY concept_id, message_id"
    ):
        key = str(concept_id)
        if key not in heads:
            target = concepts.get(concept_store.survivor(concepts, key))
            alive = target is not None and target.state not in ("merged", "split", "archived")
            heads[key] = (target.concept_id, target.title, target.type) if target is not None and alive else None
        head = heads[key]
        if head is not None:
            rows.append((*head, str(message_id), float(confidence)))
    return rows


def topic_messages(staging: sqlite3.Connection) -> tuple[str | None, list[tuple[str, str, str, float]]]:
    """The latest clustered run, and (message_id, topic_uid, label, weight) through each message's segment."""
    run_id = topic_store.latest_run(staging)
    if run_id is None:
        return None, []
    rows = staging.execute(
        "SELECT sm.message_id, t.topic_uid, t.label, l.weight FROM topic_links l"
        " JOIN topics t ON t.run_id = l.run_id AND t.topic = l.topic"
        " JOIN segment_messages sm ON sm.segment_id = l.item_id"
        " WHERE l.run_id = ? AND l.kind = 'segment' ORDER BY sm.message_id, t.topic_uid",
        (run_id,),
    )
    return run_id, [(str(r[0]), str(r[1]), str(r[2]), float(r[3])) for r in rows]


def topic_run(staging: sqlite3.Connection) -> str | None:
    """The latest clustered run (None before the cluster stage)."""
    return topic_store.latest_run(staging)


def topic_rows(
    staging: sqlite3.Connection, run_id: str | None, message_ids: Iterable[str]
) -> list[tuple[str, str, str, float]]:
    """`topic_messages`' rows for some messages only: (message_id, topic_uid, label, weight), in that order."""
    if run_id is None:
        return []
    # CROSS JOIN fixes the join order (SQLite never reorders it): start from the wanted messages. With a plain
    # JOIN the planner walked every segment link of the run and probed the wanted ids in each, segments x
    # messages per archive: 90% of the stage's CPU at 100k real messages.
    found = staging.execute(
        "SELECT sm.message_id, t.topic_uid, t.label, l.weight FROM segment_messages sm"
        " CROSS JOIN topic_links l ON l.run_id = ? AND l.kind = 'segment' AND l.item_id = sm.segment_id"
        f" CROSS JOIN topics t ON t.run_id = l.run_id AND t.topic = l.topic WHERE sm.message_id IN {IN_VALUES}",
        (run_id, json_values(set(message_ids))),
    )
    rows = [(str(r[0]), str(r[1]), str(r[2]), float(r[3])) for r in found]
    return sorted(rows, key=lambda r: (r[0], r[1]))


def iter_conversation_messages(archive: sqlite3.Connection, conversation_ids: Iterable[str]) -> Iterator[MessageTuple]:
    """`iter_visible_messages` for some conversations only (an incremental cues run's rebuilt ones), in the same
    order: conversation by conversation, in seq order."""
    wanted = sorted(set(conversation_ids))
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        cursor = archive.execute(
            "SELECT m.uuid, m.conversation_id, c.title, m.seq, m.role, m.author, m.created_at, m.text, c.format"
            " FROM visible_messages m JOIN conversations c ON c.id = m.conversation_id"
            f" WHERE m.conversation_id IN ({marks})"
            " AND length(trim(m.text)) > 0 ORDER BY m.conversation_id, m.seq",
            chunk,
        )
        for row in cursor:
            yield (str(row[0]), str(row[1]), row[2], int(row[3]), str(row[4]), row[5], row[6], str(row[7]), str(row[8]))


def conversation_message_ids(archive: sqlite3.Connection, conversation_ids: Iterable[str]) -> dict[str, set[str]]:
    """The ids of the messages `iter_conversation_messages` yields, per conversation (none: not in the result)."""
    wanted = sorted(set(conversation_ids))
    found: dict[str, set[str]] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        cursor = archive.execute(
            "SELECT m.conversation_id, m.uuid FROM visible_messages m JOIN conversations c"
            f" ON c.id = m.conversation_id WHERE m.conversation_id IN ({marks}) AND length(trim(m.text)) > 0",
            chunk,
        )
        for conversation, uuid in cursor:
            found.setdefault(str(conversation), set()).add(str(uuid))
    return found
