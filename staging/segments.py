"""staging.db: segments and their messages (CONTAINS_MESSAGE), and reading active paths from archive.db.

Tables (`SCHEMA`: migration 2 of staging/migrations.py, frozen; change them with a new migration there):

- `segment_conversations`: per conversation, the fingerprint of the active path it was last segmented from;
  an unchanged fingerprint means no re-work.
- `segments`: keyed by `segment_id` (hash of conversation id + first/last message uuid). `run_id` is the run
  that last wrote the row; `retired_run_id` is set when a newer segmentation of the conversation no longer
  has the segment (kept, not deleted: extractions and evidence may still name it).
- `segment_messages`: membership, keyed by (segment_id, message_id), with the message's position.
- `segment_mark` (`MARK_SCHEMA`, migration 18): the archive mark and parameters the segments were last brought up
  to date with: a run reads only the conversations archive.db logged as changed since.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby

from staging.db import IN_VALUES, Transaction, json_values, plain_rows
from staging.embeddings import EMBEDDED_AS_IS
from staging.extractions import EXTRACTED_AS_IS

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS segment_conversations (
        conversation_id TEXT PRIMARY KEY,
        fingerprint TEXT NOT NULL,
        segments INTEGER NOT NULL,
        run_id TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS segments (
        segment_id TEXT PRIMARY KEY,
        conversation_id TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        boundary TEXT NOT NULL CHECK (boundary IN ('start', 'budget', 'topic')),
        message_count INTEGER NOT NULL,
        token_estimate INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        first_message_id TEXT NOT NULL,
        last_message_id TEXT NOT NULL,
        first_time TEXT,
        last_time TEXT,
        run_id TEXT NOT NULL,
        retired_run_id TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS segments_by_conversation ON segments (conversation_id, ordinal)",
    "CREATE INDEX IF NOT EXISTS segments_by_run ON segments (run_id)",
    """CREATE TABLE IF NOT EXISTS segment_messages (
        segment_id TEXT NOT NULL REFERENCES segments(segment_id),
        message_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        run_id TEXT NOT NULL,
        PRIMARY KEY (segment_id, message_id)
    )""",
    "CREATE INDEX IF NOT EXISTS segment_messages_by_message ON segment_messages (message_id)",
]

SEGMENT_COLUMNS = (
    "segment_id",
    "conversation_id",
    "ordinal",
    "boundary",
    "message_count",
    "token_estimate",
    "content_hash",
    "first_message_id",
    "last_message_id",
    "first_time",
    "last_time",
)


@dataclass(frozen=True, slots=True)
class MessageMeta:
    """A visible active message without its text (enough to tell whether a conversation changed)."""

    uuid: str
    role: str
    created_at: str | None
    content_hash: str


_MESSAGE = 8  # the member's message id in the rows `iter_current_segments` reads


@dataclass(frozen=True, slots=True)
class SegmentRow:
    """A segment as stored: the columns of `segments` plus its ordered message ids."""

    segment_id: str
    conversation_id: str
    ordinal: int
    boundary: str
    token_estimate: int
    content_hash: str
    first_time: str | None
    last_time: str | None
    message_ids: tuple[str, ...]


# ---------------------------------------------------------------- archive.db reads


def archive_fingerprint(archive: sqlite3.Connection) -> str:
    """Cheap and sufficient: which dumps are in the archive, and how many messages it holds.

    Two statements, not one: alone, COUNT(*) counts the cells of an index's pages and MAX(rowid) reads one
    leaf; together in one SELECT they walk every row (76 CPU-ms at 1M messages, per stage that reads the
    archive, on every run; 2 ms apart: benchmarks/RESULTS.md)."""
    shas = [str(r[0]) for r in archive.execute("SELECT sha256 FROM sources ORDER BY sha256")]
    count = archive.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    last = archive.execute("SELECT COALESCE(MAX(rowid), 0) FROM messages").fetchone()[0]
    return hashlib.sha256(("\n".join(shas) + f"\n{count}:{last}").encode()).hexdigest()


def iter_active_paths(
    archive: sqlite3.Connection, conversations: Sequence[str] | None = None
) -> Iterator[tuple[str, list[MessageMeta]]]:
    """Every conversation's visible active path (is_active = 1, is_hidden = 0, by seq), without texts; only those
    of `conversations` when given.

    Streams one conversation at a time; a conversation with no visible active message yields an empty list,
    so its old segments can be retired.
    """
    select = (
        "SELECT c.id AS conversation_id, m.uuid, m.role, m.created_at, m.content_hash FROM conversations c"
        " LEFT JOIN visible_messages m ON m.conversation_id = c.id"
    )
    if conversations is None:
        cursor = archive.execute(f"{select} ORDER BY c.id, m.seq")
    else:
        cursor = archive.execute(
            f"{select} WHERE c.id IN {IN_VALUES} ORDER BY c.id, m.seq", (json_values(conversations),)
        )
    for conversation_id, rows in groupby(cursor, key=lambda row: str(row["conversation_id"])):
        yield (
            conversation_id,
            [
                MessageMeta(str(r["uuid"]), str(r["role"]), r["created_at"], str(r["content_hash"]))
                for r in rows
                if r["uuid"] is not None
            ],
        )


def message_texts(archive: sqlite3.Connection, conversation_id: str) -> dict[str, str]:
    """The texts of one conversation's visible active messages, by uuid."""
    rows = archive.execute(
        "SELECT uuid, text FROM visible_messages WHERE conversation_id = ?",
        (conversation_id,),
    )
    return {str(r["uuid"]): str(r["text"]) for r in rows}


# ---------------------------------------------------------------- staging.db


def stored_fingerprints(conn: sqlite3.Connection, conversations: Sequence[str] | None = None) -> dict[str, str]:
    """Each conversation's fingerprint as last segmented (only those of `conversations` when given)."""
    sql = "SELECT conversation_id, fingerprint FROM segment_conversations"
    rows = (
        conn.execute(sql)
        if conversations is None
        else conn.execute(f"{sql} WHERE conversation_id IN {IN_VALUES}", (json_values(conversations),))
    )
    return {str(r[0]): str(r[1]) for r in rows}


def count_conversations(archive: sqlite3.Connection) -> int:
    return int(archive.execute("SELECT COUNT(*) FROM conversations").fetchone()[0])


# What the segments were last brought up to date with (migration 18): the archive's change mark
# (staging/archive_changes.py) and the parameters, taken before a run's reads and written after its last write.
MARK_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS segment_mark (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        archive_mark TEXT NOT NULL,
        params TEXT NOT NULL
    )""",
]


def read_mark(conn: sqlite3.Connection) -> tuple[object, str] | None:
    """The archive mark (JSON-decoded) and the parameters' repr the segments were last brought up to date with."""
    row = conn.execute("SELECT archive_mark, params FROM segment_mark WHERE id = 1").fetchone()
    return None if row is None else (json.loads(row[0]), str(row[1]))


def clear_mark(conn: sqlite3.Connection) -> None:
    with Transaction(conn):
        conn.execute("DELETE FROM segment_mark")


def write_mark(conn: sqlite3.Connection, archive_mark: object, params: str) -> None:
    with Transaction(conn):
        conn.execute(
            "INSERT OR REPLACE INTO segment_mark (id, archive_mark, params) VALUES (1, ?, ?)",
            (json.dumps(archive_mark), params),
        )


@dataclass(slots=True)
class WriteCounts:
    written: int = 0  # inserted, or updated because something changed
    unchanged: int = 0
    retired: int = 0


def write_conversations(
    conn: sqlite3.Connection,
    run_id: str,
    batch: Sequence[tuple[str, str, Sequence[SegmentRow]]],
) -> WriteCounts:
    """Replace the segmentation of each (conversation_id, fingerprint, segments) in one transaction.

    Idempotent: a segment whose stored row is identical is left alone (its run_id stays the run that made
    it); a changed one is updated and its membership rewritten; one no longer produced is retired.
    """
    counts = WriteCounts()
    columns = ", ".join((*SEGMENT_COLUMNS, "run_id"))
    marks = ", ".join("?" * (len(SEGMENT_COLUMNS) + 1))
    changed = " OR ".join(f"segments.{c} IS NOT excluded.{c}" for c in SEGMENT_COLUMNS[1:])
    updates = ", ".join(f"{c} = excluded.{c}" for c in (*SEGMENT_COLUMNS[1:], "run_id"))
    upsert = (
        f"INSERT INTO segments ({columns}) VALUES ({marks}) ON CONFLICT (segment_id) DO UPDATE SET {updates},"
        f" retired_run_id = NULL WHERE {changed} OR segments.retired_run_id IS NOT NULL"
    )
    with Transaction(conn):
        for conversation_id, fingerprint, segments in batch:
            for s in segments:
                values = (
                    s.segment_id,
                    s.conversation_id,
                    s.ordinal,
                    s.boundary,
                    len(s.message_ids),
                    s.token_estimate,
                    s.content_hash,
                    s.message_ids[0],
                    s.message_ids[-1],
                    s.first_time,
                    s.last_time,
                    run_id,
                )
                before = conn.total_changes
                conn.execute(upsert, values)
                if conn.total_changes == before:
                    counts.unchanged += 1
                    continue
                counts.written += 1
                conn.execute("DELETE FROM segment_messages WHERE segment_id = ?", (s.segment_id,))
                conn.executemany(
                    "INSERT INTO segment_messages (segment_id, message_id, position, run_id) VALUES (?, ?, ?, ?)",
                    [(s.segment_id, m, i, run_id) for i, m in enumerate(s.message_ids)],
                )
            keep = [s.segment_id for s in segments]
            counts.retired += _retire_others(conn, run_id, conversation_id, keep)
            conn.execute(
                "INSERT INTO segment_conversations (conversation_id, fingerprint, segments, run_id)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (conversation_id) DO UPDATE SET fingerprint = excluded.fingerprint,"
                " segments = excluded.segments, run_id = excluded.run_id",
                (conversation_id, fingerprint, len(segments), run_id),
            )
    return counts


def _retire_others(conn: sqlite3.Connection, run_id: str, conversation_id: str, keep: list[str]) -> int:
    current = conn.execute(
        "SELECT segment_id FROM current_segments WHERE conversation_id = ?", (conversation_id,)
    ).fetchall()
    kept = set(keep)
    stale = [str(r[0]) for r in current if str(r[0]) not in kept]
    conn.executemany("UPDATE segments SET retired_run_id = ? WHERE segment_id = ?", [(run_id, s) for s in stale])
    return len(stale)


# Conversations per page of iter_current_segments: each page is read whole by one short query.
SEGMENT_PAGE_CONVERSATIONS = 2000


def iter_current_segments(
    conn: sqlite3.Connection,
    *,
    page_conversations: int = SEGMENT_PAGE_CONVERSATIONS,
    unless_embedded_under: str | None = None,
    unless_extracted_as: str | None = None,
) -> Iterator[SegmentRow]:
    """Current (not retired) segments by conversation and ordinal, each with its ordered message ids; with
    `unless_embedded_under` (a model key), only those not embedded under it from their present content
    (staging/embeddings.py `embedded_segments`), so an unchanged segment costs the embed stage no read; with
    `unless_extracted_as` (key parts as stored, staging/extractions.py `stored_parts`), only those whose current
    extraction is not the successful one of their present content under those parts.

    Read a page of conversations at a time, each page fetched whole, so that no read cursor stays open while the
    caller writes on the same connection: an open cursor pins the WAL, which then never restarts and grows with
    every write of the stage (measured: an 18.9 GB staging.db-wal during embed at 1M messages)."""
    pending, model = (
        ("", ()) if unless_embedded_under is None else (f" AND NOT {EMBEDDED_AS_IS}", (unless_embedded_under,))
    )
    if unless_extracted_as is not None:
        pending, model = f"{pending} AND NOT {EXTRACTED_AS_IS}", (*model, unless_extracted_as)
    after = ""
    while True:
        bounds = conn.execute(
            "SELECT MIN(conversation_id), MAX(conversation_id) FROM (SELECT DISTINCT s.conversation_id"
            f" FROM current_segments s WHERE s.conversation_id > ?{pending} ORDER BY s.conversation_id LIMIT ?)",
            (after, *model, page_conversations),
        ).fetchone()
        if bounds is None or bounds[0] is None:
            return
        rows = plain_rows(  # tuples by position, not sqlite3.Row by name: a row per member
            conn,
            "SELECT s.segment_id, s.conversation_id, s.ordinal, s.boundary, s.token_estimate, s.content_hash,"
            " s.first_time, s.last_time, m.message_id FROM current_segments s"
            " JOIN segment_messages m USING (segment_id)"
            f" WHERE s.conversation_id BETWEEN ? AND ?{pending}"
            " ORDER BY s.conversation_id, s.ordinal, m.position",
            (bounds[0], bounds[1], *model),
        ).fetchall()
        for _, rows_of_segment in groupby(rows, key=lambda row: str(row[0])):
            group = list(rows_of_segment)
            segment_id, conversation_id, ordinal, boundary, tokens, content_hash, first_time, last_time, _ = group[0]
            yield SegmentRow(
                str(segment_id),
                str(conversation_id),
                int(ordinal),
                str(boundary),
                int(tokens),
                str(content_hash),
                first_time,
                last_time,
                tuple(str(r[_MESSAGE]) for r in group),
            )
        after = str(bounds[1])


def count_current(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM current_segments").fetchone()[0])


def members_of(conn: sqlite3.Connection, segment_ids: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The ordered message ids of the given segments."""
    found: dict[str, list[str]] = {}
    for row in conn.execute(
        f"SELECT segment_id, message_id FROM segment_messages WHERE segment_id IN {IN_VALUES}"
        " ORDER BY segment_id, position",
        (json_values(set(segment_ids)),),
    ):
        found.setdefault(str(row[0]), []).append(str(row[1]))
    return {segment: tuple(messages) for segment, messages in found.items()}


def messages_by_id(archive: sqlite3.Connection, ids: Iterable[str]) -> dict[str, sqlite3.Row]:
    """uuid, role, text, created_at, conversation title of the given messages."""
    rows = archive.execute(
        "SELECT m.uuid, m.role, m.text, m.created_at, c.title FROM messages m"
        f" JOIN conversations c ON c.id = m.conversation_id WHERE m.uuid IN {IN_VALUES}",
        (json_values(set(ids)),),
    )
    return {str(row["uuid"]): row for row in rows}


def conversation_titles(archive: sqlite3.Connection, ids: Iterable[str]) -> dict[str, str]:
    """The title of each given conversation ('' when it has none)."""
    rows = archive.execute(f"SELECT id, title FROM conversations WHERE id IN {IN_VALUES}", (json_values(set(ids)),))
    return {str(row[0]): str(row[1] or "") for row in rows}
