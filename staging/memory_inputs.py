"""Reads the cues stage (and recall) need from the archive and from earlier stages' tables, read-only.

Rows come back as plain tuples in a fixed order, so the pure graph builder sees the same inputs every time.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from typing import NamedTuple

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


Head = tuple[str, str, str]
"""(concept_id, title, type) of the live concept a concept's evidence is credited to."""


class _Pointer(NamedTuple):
    merged_into: str | None
    head: Head | None


def live_heads(staging: sqlite3.Connection) -> dict[str, Head | None]:
    """Every stored concept's head: the concept its evidence is credited to (its survivor, following merges),
    None when that one is not alive (merged, split or archived). What `live_evidence` resolves, for every concept."""
    if not concept_store.has_store(staging):
        return {}
    pointers: dict[str, _Pointer] = {}
    for concept_id, title, kind, state, merged_into in staging.execute(
        "SELECT concept_id, title, type, state, merged_into FROM concepts ORDER BY concept_id"
    ):
        alive = state not in ("merged", "split", "archived")
        pointers[str(concept_id)] = _Pointer(merged_into, (str(concept_id), title, kind) if alive else None)
    heads: dict[str, Head | None] = {}
    for key in pointers:
        target = pointers.get(concept_store.survivor(pointers, key))
        heads[key] = None if target is None else target.head
    return heads


def live_evidence(
    staging: sqlite3.Connection, heads: Mapping[str, Head | None] | None = None
) -> list[tuple[str, str, str, str, float]]:
    """(concept_id, title, type, message_id, confidence) for every concept still alive, evidence of concepts merged
    away credited to their survivor (`heads`: `live_heads`, when the caller has them)."""
    if not concept_store.has_store(staging):
        return []
    if heads is None:
        heads = live_heads(staging)
    rows = []
    for concept_id, message_id, confidence in staging.execute(
        "SELECT concept_id, message_id, confidence FROM concept_evidence ORDER BY concept_id, message_id"
    ):
        head = heads.get(str(concept_id))
        if head is not None:
            rows.append((*head, str(message_id), float(confidence)))
    return rows


def evidence_of(
    staging: sqlite3.Connection, heads: Mapping[str, Head | None], messages: Iterable[str]
) -> list[tuple[str, str, str, str, float]]:
    """`live_evidence`'s rows of these messages only (one scan of concept_evidence, in SQLite: it has no index by
    message)."""
    wanted = sorted(set(messages))
    if not wanted or not concept_store.has_store(staging):
        return []
    staging.execute("DROP TABLE IF EXISTS temp.cues_messages")
    staging.execute("CREATE TEMP TABLE cues_messages (id TEXT PRIMARY KEY) WITHOUT ROWID")
    try:
        staging.executemany("INSERT INTO temp.cues_messages VALUES (?)", ((m,) for m in wanted))
        found = staging.execute(
            "SELECT concept_id, message_id, confidence FROM concept_evidence"
            " WHERE message_id IN (SELECT id FROM temp.cues_messages) ORDER BY concept_id, message_id"
        ).fetchall()
    finally:
        staging.execute("DROP TABLE IF EXISTS temp.cues_messages")
    rows = []
    for concept_id, message_id, confidence in found:
        head = heads.get(str(concept_id))
        if head is not None:
            rows.append((*head, str(message_id), float(confidence)))
    return rows


def evidence_concepts(staging: sqlite3.Connection) -> list[str]:
    """The concepts with evidence (in id order: the primary key's index, not the rows)."""
    if not concept_store.has_store(staging):
        return []
    return [str(r[0]) for r in staging.execute("SELECT DISTINCT concept_id FROM concept_evidence ORDER BY 1")]


def messages_of_concepts(staging: sqlite3.Connection, concepts: Iterable[str]) -> set[str]:
    """The messages cited by these concepts' evidence (by the primary key's concept prefix)."""
    wanted = sorted(set(concepts))
    found: set[str] = set()
    for start in range(0, len(wanted), 5_000):
        rows = staging.execute(
            f"SELECT DISTINCT message_id FROM concept_evidence WHERE concept_id IN {IN_VALUES}",
            (json_values(wanted[start : start + 5_000]),),
        )
        found.update(str(r[0]) for r in rows)
    return found


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
