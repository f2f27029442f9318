"""archive.db: the source of truth for every conversation and message.

Writes are idempotent upserts keyed by the export's own ids and compared by a hash of every stored column:
the same dump twice changes nothing, a newer dump adds what is new and updates what changed, and a message
that a newer dump no longer contains is kept (marked inactive), never deleted. Each batch is one
transaction that holds whole conversations, so a killed ingest leaves no half-written conversation.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from contracts.records import ExportConversation, ExportMessage, ExportSource, QuarantineRecord
from staging.db import Transaction, connect

SCHEMA_V1 = """
CREATE TABLE sources (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL UNIQUE,
    format TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('importing', 'complete', 'partial')),
    imported_at TEXT NOT NULL,
    notes TEXT
);
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    title TEXT,
    created_at TEXT,
    updated_at TEXT,
    current_node TEXT,
    format TEXT NOT NULL,
    message_count INTEGER NOT NULL,
    source_id INTEGER NOT NULL REFERENCES sources(id),
    row_hash TEXT NOT NULL
);
CREATE TABLE messages (
    uuid TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    parent_id TEXT,
    role TEXT NOT NULL,
    author TEXT,
    content_type TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at TEXT,
    is_active INTEGER NOT NULL,
    is_hidden INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    raw TEXT,
    source_id INTEGER NOT NULL REFERENCES sources(id),
    row_hash TEXT NOT NULL
);
CREATE INDEX messages_by_conversation ON messages (conversation_id, seq);
CREATE TABLE quarantine (
    id INTEGER PRIMARY KEY,
    source_id INTEGER NOT NULL REFERENCES sources(id),
    locator TEXT NOT NULL,
    reason TEXT NOT NULL,
    raw TEXT NOT NULL,
    conversation_id TEXT,
    UNIQUE (source_id, locator, reason)
);
-- NEXT/PREV along each conversation's active path, by seq.
CREATE VIEW message_chronology AS
SELECT uuid, conversation_id, seq,
       LAG(uuid) OVER w AS prev_id,
       LEAD(uuid) OVER w AS next_id
FROM messages
WHERE is_active = 1
WINDOW w AS (PARTITION BY conversation_id ORDER BY seq);
"""


def _migrate_v1(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA_V1.split(";\n"):
        if statement.strip():
            conn.execute(statement)


MIGRATIONS = [_migrate_v1]


def open_archive(path: Path) -> sqlite3.Connection:
    """Open archive.db read-write, creating or upgrading its schema."""
    return connect(path, MIGRATIONS)


@dataclass
class WriteCounts:
    conversations: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    retired: int = 0  # kept messages that a newer dump of their conversation no longer contains
    quarantined: int = 0

    def add(self, other: WriteCounts) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def content_hash(text: str) -> str:
    """The key later stages cache on (embeddings, extractions): the message text alone."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def _row_hash(*fields: object) -> str:
    joined = "\x1f".join("\x00" if f is None else str(f) for f in fields)
    return hashlib.blake2b(joined.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class ArchiveWriter:
    """Writes one export source into archive.db. Use `begin_source`, `write_batch`*, `finish_source`."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def source_status(self, sha256: str) -> str | None:
        row = self.conn.execute("SELECT status FROM sources WHERE sha256 = ?", (sha256,)).fetchone()
        return None if row is None else str(row["status"])

    def begin_source(self, source: ExportSource) -> int:
        """Register the source (or reuse the row of an interrupted import of the same bytes)."""
        with Transaction(self.conn):
            row = self.conn.execute("SELECT id FROM sources WHERE sha256 = ?", (source.sha256,)).fetchone()
            if row is not None:
                self.conn.execute(
                    "UPDATE sources SET status = 'importing', path = ?, format = ? WHERE id = ?",
                    (source.path, source.format, row["id"]),
                )
                return int(row["id"])
            cursor = self.conn.execute(
                "INSERT INTO sources (path, sha256, format, size_bytes, status, imported_at)"
                " VALUES (?, ?, ?, ?, 'importing', ?)",
                (source.path, source.sha256, source.format, source.size_bytes, datetime.now(UTC).isoformat()),
            )
            return int(cursor.lastrowid or 0)

    def finish_source(self, source_id: int, *, partial: bool, notes: Sequence[str] = ()) -> None:
        with Transaction(self.conn):
            self.conn.execute(
                "UPDATE sources SET status = ?, notes = ? WHERE id = ?",
                ("partial" if partial else "complete", "\n".join(notes) or None, source_id),
            )

    def write_batch(
        self,
        source_id: int,
        fmt: str,
        conversations: Sequence[ExportConversation],
        quarantined: Sequence[QuarantineRecord],
    ) -> tuple[WriteCounts, list[QuarantineRecord]]:
        """Write whole conversations and quarantine rows in one transaction.

        Returns the counts and the extra quarantine records this write produced (a message id that already
        belongs to another conversation cannot be stored twice: it is quarantined, not overwritten).
        """
        counts = WriteCounts()
        collisions: list[QuarantineRecord] = []
        with Transaction(self.conn):
            for conversation in conversations:
                collisions.extend(self._write_conversation(source_id, fmt, conversation, counts))
            rows = [
                (source_id, q.locator, q.reason, q.raw, q.conversation_id)
                for q in (*quarantined, *collisions)
            ]
            if rows:
                before = self.conn.total_changes
                self.conn.executemany(
                    "INSERT OR IGNORE INTO quarantine (source_id, locator, reason, raw, conversation_id)"
                    " VALUES (?, ?, ?, ?, ?)",
                    rows,
                )
                counts.quarantined += self.conn.total_changes - before
        return counts, collisions

    def _write_conversation(
        self, source_id: int, fmt: str, conversation: ExportConversation, counts: WriteCounts
    ) -> list[QuarantineRecord]:
        conn = self.conn
        existing = conn.execute(
            "SELECT updated_at, row_hash FROM conversations WHERE id = ?", (conversation.id,)
        ).fetchone()
        new_updated = _iso(conversation.updated_at)
        # An older dump of a conversation arriving after a newer one may add messages, but must not move the
        # active path or the title back in time.
        older_dump = (
            existing is not None
            and existing["updated_at"] is not None
            and new_updated is not None
            and new_updated < existing["updated_at"]
        )

        uuids = [m.uuid for m in conversation.messages]
        stored: dict[str, sqlite3.Row] = {}
        for start in range(0, len(uuids), 500):
            chunk = uuids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(
                f"SELECT uuid, conversation_id, row_hash FROM messages WHERE uuid IN ({marks})", chunk
            ):
                stored[row["uuid"]] = row

        collisions: list[QuarantineRecord] = []
        inserts: list[tuple[object, ...]] = []
        updates: list[tuple[object, ...]] = []
        kept_uuids: set[str] = set()
        next_seq = len(conversation.messages)
        if older_dump:
            row = conn.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE conversation_id = ?", (conversation.id,)
            ).fetchone()
            next_seq = int(row[0])
        for message in conversation.messages:
            previous = stored.get(message.uuid)
            if previous is not None and previous["conversation_id"] != conversation.id:
                collisions.append(_collision(conversation.id, message, previous["conversation_id"]))
                continue
            kept_uuids.add(message.uuid)
            if older_dump:
                if previous is None:
                    inserts.append(_message_row(source_id, conversation.id, message, next_seq, active=False))
                    next_seq += 1
                else:
                    counts.unchanged += 1
                continue
            row = _message_row(source_id, conversation.id, message, message.seq, active=message.is_active)
            if previous is None:
                inserts.append(row)
            elif previous["row_hash"] != row[-1]:
                updates.append(row)
            else:
                counts.unchanged += 1

        if not older_dump:
            conversation_row = (
                conversation.title,
                _iso(conversation.created_at),
                new_updated,
                conversation.current_node,
                fmt,
                len(kept_uuids),
            )
            conversation_hash = _row_hash(*conversation_row)
            if existing is None:
                conn.execute(
                    "INSERT INTO conversations (id, title, created_at, updated_at, current_node, format,"
                    " message_count, source_id, row_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (conversation.id, *conversation_row, source_id, conversation_hash),
                )
                counts.conversations += 1
            elif existing["row_hash"] != conversation_hash:
                conn.execute(
                    "UPDATE conversations SET title = ?, created_at = ?, updated_at = ?, current_node = ?,"
                    " format = ?, message_count = ?, source_id = ?, row_hash = ? WHERE id = ?",
                    (*conversation_row, source_id, conversation_hash, conversation.id),
                )
                counts.conversations += 1
        if inserts:
            conn.executemany(
                "INSERT INTO messages (uuid, conversation_id, parent_id, role, author, content_type, text,"
                " created_at, is_active, is_hidden, seq, content_hash, raw, source_id, row_hash)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                inserts,
            )
            counts.inserted += len(inserts)
        if updates:
            conn.executemany(
                "UPDATE messages SET conversation_id = ?2, parent_id = ?3, role = ?4, author = ?5,"
                " content_type = ?6, text = ?7, created_at = ?8, is_active = ?9, is_hidden = ?10, seq = ?11,"
                " content_hash = ?12, raw = ?13, source_id = ?14, row_hash = ?15 WHERE uuid = ?1",
                updates,
            )
            counts.updated += len(updates)
        if existing is not None and not older_dump:
            counts.retired += self._retire_missing(conversation.id, kept_uuids, len(conversation.messages))
        if older_dump or existing is not None:
            conn.execute(
                "UPDATE conversations SET message_count ="
                " (SELECT COUNT(*) FROM messages WHERE conversation_id = ?1) WHERE id = ?1",
                (conversation.id,),
            )
        return collisions

    def _retire_missing(self, conversation_id: str, present: set[str], first_free_seq: int) -> int:
        """Messages stored earlier but absent from this newer dump: kept, inactive, ordered after the rest."""
        rows = self.conn.execute(
            "SELECT uuid, is_active, seq FROM messages WHERE conversation_id = ? ORDER BY seq, uuid",
            (conversation_id,),
        ).fetchall()
        missing = [row for row in rows if row["uuid"] not in present]
        changed = 0
        for offset, row in enumerate(missing):
            seq = first_free_seq + offset
            if row["is_active"] or row["seq"] != seq:
                self.conn.execute(
                    "UPDATE messages SET is_active = 0, seq = ? WHERE uuid = ?", (seq, row["uuid"])
                )
                changed += 1
        return changed


def _message_row(
    source_id: int, conversation_id: str, message: ExportMessage, seq: int, *, active: bool
) -> tuple[object, ...]:
    created = _iso(message.created_at)
    fields = (
        conversation_id,
        message.parent_id,
        message.role,
        message.author,
        message.content_type,
        message.text,
        created,
        int(active),
        int(message.is_hidden),
        seq,
    )
    # The row hash leaves out source_id so that the same message in a second dump counts as unchanged.
    return (
        message.uuid,
        *fields,
        content_hash(message.text),
        message.raw,
        source_id,
        _row_hash(*fields, message.raw),
    )


def _collision(conversation_id: str, message: ExportMessage, owner: str) -> QuarantineRecord:
    return QuarantineRecord(
        locator=f"conversation[{conversation_id}].message[{message.uuid}]",
        reason=f"message id {message.uuid!r} already belongs to conversation {owner!r}; not overwritten",
        raw=message.model_dump_json(),
        conversation_id=conversation_id,
    )


def archive_stats(conn: sqlite3.Connection) -> dict[str, int]:
    """Counts for `chatmem archive stats`."""

    def count(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    return {
        "sources": count("SELECT COUNT(*) FROM sources"),
        "conversations": count("SELECT COUNT(*) FROM conversations"),
        "messages": count("SELECT COUNT(*) FROM messages"),
        "active_messages": count("SELECT COUNT(*) FROM messages WHERE is_active = 1"),
        "hidden_messages": count("SELECT COUNT(*) FROM messages WHERE is_hidden = 1"),
        "quarantined": count("SELECT COUNT(*) FROM quarantine"),
    }


def iter_conversation_ids(conn: sqlite3.Connection) -> Iterable[str]:
    for row in conn.execute("SELECT id FROM conversations ORDER BY id"):
        yield str(row["id"])
