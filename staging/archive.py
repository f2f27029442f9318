"""archive.db: the source of truth for every conversation and message.

Writes are idempotent upserts keyed by the export's own ids and compared by a hash of every stored column:
the same dump twice changes nothing, a newer dump adds what is new and updates what changed, and a message
that a newer dump no longer contains is kept (marked inactive), never deleted. Each batch is one
transaction that holds whole conversations, so a killed ingest leaves no half-written conversation.
"""

from __future__ import annotations

import hashlib
import re
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
    source_id INTEGER NOT NULL REFERENCES sources(id)
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
            known = self._known_conversations([c.id for c in conversations])
            fresh: list[ExportConversation] = []
            again: list[ExportConversation] = []
            for conversation in conversations:
                if conversation.id in known:
                    again.append(conversation)
                else:
                    known.add(conversation.id)  # a second copy later in the same batch is not fresh
                    fresh.append(conversation)
            collisions.extend(self._insert_fresh(source_id, fmt, fresh, counts))
            for conversation in again:
                collisions.extend(self._write_conversation(source_id, fmt, conversation, counts))
            rows = [
                (source_id, q.locator, q.reason, _utf8_safe(q.raw), q.conversation_id)
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

    def _known_conversations(self, ids: list[str]) -> set[str]:
        known: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            known.update(
                row[0]
                for row in self.conn.execute(f"SELECT id FROM conversations WHERE id IN ({marks})", chunk)
            )
        return known

    def _insert_fresh(
        self, source_id: int, fmt: str, conversations: list[ExportConversation], counts: WriteCounts
    ) -> list[QuarantineRecord]:
        """The common case, conversations not in the archive yet: plain bulk inserts, no per-row lookups.

        A message id already stored under another conversation makes its insert do nothing; that is
        noticed from the change count, and only then are the ids looked up to quarantine the intruders.
        """
        if not conversations:
            return []
        conn = self.conn
        conversation_rows = [_conversation_row(source_id, fmt, c, len(c.messages)) for c in conversations]
        conn.executemany(
            "INSERT INTO conversations (id, title, created_at, updated_at, current_node, format,"
            " message_count, source_id, row_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            conversation_rows,
        )
        counts.conversations += len(conversation_rows)
        message_rows = [
            _message_row(source_id, c.id, m, m.seq, active=m.is_active)
            for c in conversations
            for m in c.messages
        ]
        before = conn.total_changes
        conn.executemany(_INSERT_MESSAGE + " ON CONFLICT (uuid) DO NOTHING", message_rows)
        inserted = conn.total_changes - before
        counts.inserted += inserted
        if inserted == len(message_rows):
            return []
        collisions: list[QuarantineRecord] = []
        by_uuid = {m.uuid: (c.id, m) for c in conversations for m in c.messages}
        uuids = list(by_uuid)
        for start in range(0, len(uuids), 500):
            chunk = uuids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for uuid, owner in conn.execute(
                f"SELECT uuid, conversation_id FROM messages WHERE uuid IN ({marks})", chunk
            ):
                conversation_id, message = by_uuid[uuid]
                if owner != conversation_id:
                    collisions.append(_collision(conversation_id, message, owner))
        for affected in {c.conversation_id for c in collisions}:
            conn.execute(
                "UPDATE conversations SET message_count ="
                " (SELECT COUNT(*) FROM messages WHERE conversation_id = ?1) WHERE id = ?1",
                (affected,),
            )
        return collisions

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
            existing["updated_at"] is not None
            and new_updated is not None
            and new_updated < existing["updated_at"]
        )

        uuids = [m.uuid for m in conversation.messages]
        stored: dict[str, sqlite3.Row] = {}
        for start in range(0, len(uuids), 500):
            chunk = uuids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(
                f"SELECT {_COMPARED_COLUMNS} FROM messages WHERE uuid IN ({marks})", chunk
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
            elif tuple(previous) != _compared(row):
                updates.append(row)
            else:
                counts.unchanged += 1

        if not older_dump:
            row = _conversation_row(source_id, fmt, conversation, len(kept_uuids))
            if existing["row_hash"] != row[-1]:
                conn.execute(
                    "UPDATE conversations SET title = ?2, created_at = ?3, updated_at = ?4,"
                    " current_node = ?5, format = ?6, message_count = ?7, source_id = ?8, row_hash = ?9"
                    " WHERE id = ?1",
                    row,
                )
                counts.conversations += 1
        if inserts:
            conn.executemany(_INSERT_MESSAGE, inserts)
            counts.inserted += len(inserts)
        if updates:
            conn.executemany(
                "UPDATE messages SET conversation_id = ?2, parent_id = ?3, role = ?4, author = ?5,"
                " content_type = ?6, text = ?7, created_at = ?8, is_active = ?9, is_hidden = ?10, seq = ?11,"
                " content_hash = ?12, raw = ?13, source_id = ?14 WHERE uuid = ?1",
                updates,
            )
            counts.updated += len(updates)
        if not older_dump:
            counts.retired += self._retire_missing(conversation.id, kept_uuids, len(conversation.messages))
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


_INSERT_MESSAGE = (
    "INSERT INTO messages (uuid, conversation_id, parent_id, role, author, content_type, text,"
    " created_at, is_active, is_hidden, seq, content_hash, raw, source_id)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# What decides whether a stored message changed: every column but the text (its digest stands in for it)
# and source_id (the same message in a second dump is unchanged).
_COMPARED_COLUMNS = (
    "uuid, conversation_id, parent_id, role, author, content_type, created_at, is_active, is_hidden, seq,"
    " content_hash, raw"
)


def _compared(row: tuple[object, ...]) -> tuple[object, ...]:
    """The _COMPARED_COLUMNS of a row built by _message_row."""
    return (*row[:6], *row[7:13])


_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf8_safe(text: str) -> str:
    """Replace lone surrogates (from an escaped half of an emoji, e.g. "\\ud83d") with U+FFFD.

    SQLite stores UTF-8 and refuses such strings; the replacement marks exactly what could not be stored.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def _conversation_row(
    source_id: int, fmt: str, conversation: ExportConversation, message_count: int
) -> tuple[object, ...]:
    title = None if conversation.title is None else _utf8_safe(conversation.title)
    fields = (
        title,
        _iso(conversation.created_at),
        _iso(conversation.updated_at),
        conversation.current_node,
        fmt,
    )
    return (conversation.id, *fields, message_count, source_id, _row_hash(*fields))


def _message_row(
    source_id: int, conversation_id: str, message: ExportMessage, seq: int, *, active: bool
) -> tuple[object, ...]:
    text = message.text
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:
        text = _utf8_safe(text)
        encoded = text.encode("utf-8")
    digest = hashlib.sha256(encoded).hexdigest()
    raw = None if message.raw is None else _utf8_safe(message.raw)
    fields = (
        conversation_id,
        message.parent_id,
        message.role,
        message.author,
        message.content_type,
        text,
        _iso(message.created_at),
        int(active),
        int(message.is_hidden),
        seq,
    )
    return (message.uuid, *fields, digest, raw, source_id)


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
