"""archive.db: the source of truth for every conversation and message.

Writes are idempotent upserts keyed by the export's own ids and compared column by column (the text by
its digest): the same dump twice changes nothing, a newer dump adds what is new and updates what changed,
and a message that a newer dump no longer contains is kept (marked inactive), never deleted. A conversation the
archive already holds as the dump has it is recognised by one digest (staging/archive_digests.py), without
reading its messages. Each batch is one transaction that holds whole conversations, so a killed ingest leaves
no half-written conversation.
Rows are built by the pure functions in `staging.archive_rows`; a conversation the archive already holds is written
by `staging.archive_update`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contracts.records import ExportConversation, ExportSource, QuarantineRecord
from staging import archive_changes, archive_digests, fts
from staging.archive_rows import CONVERSATION_ID, UUID, ConversationRows, digest, to_rows, utf8_safe
from staging.archive_update import (
    INSERT_MESSAGE,
    WriteCounts,
    collision,
    recount,
    stored_messages,
    write_known,
)
from staging.db import IN_VALUES, Transaction, connect, json_values
from staging.migrations import ARCHIVE, migrate

END_OF_FILE = "end of file"  # the locator of the quarantine row for an unreadable remainder of a file


# Indexes a bulk load into an empty archive builds once at the end instead of row by row (`ArchiveWriter.bulk`).
# The uuid primary key stays: every insert is checked against it.
DEFERRABLE_INDEXES = {
    "messages_by_conversation": (
        "CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages (conversation_id, seq)"
    ),
}


def open_archive(path: Path) -> sqlite3.Connection:
    """Open archive.db read-write, creating or upgrading its schema (staging.migrations.ARCHIVE), and rebuild
    any index a killed bulk load left dropped."""
    conn = connect(path)
    migrate(conn, ARCHIVE, name=str(path))
    restore_indexes(conn)
    return conn


def restore_indexes(conn: sqlite3.Connection) -> None:
    """Create the deferrable indexes that are missing (after a bulk load, or one that was killed)."""
    present = {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    missing = [ddl for name, ddl in DEFERRABLE_INDEXES.items() if name not in present]
    if missing:
        with Transaction(conn):
            for ddl in missing:
                conn.execute(ddl)


_INSERT_CONVERSATION = (
    "INSERT INTO conversations (id, title, created_at, updated_at, current_node, format, row_hash,"
    " message_count, source_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class ArchiveWriter:
    """Writes one export source into archive.db. Use `begin_source`, `write_batch`*, `finish_source`."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.deferred = False  # deferrable indexes dropped for a bulk load (see `bulk`)
        # The quarantine keys (locator, reason) each source's current read has given: its count is what the read
        # found, also when the rows stand from an earlier read of the same bytes (a forced re-read, a re-read of a
        # file cut short), which the INSERT OR IGNORE leaves as they are.
        self.quarantine_keys: dict[int, set[tuple[str, str]]] = {}
        # The conversations stored or changed through this writer (one stage run): a conversation that two export
        # files of one run hold is written by each (each file's count has it) but is one conversation of the run's
        # (the cold try's "conversations written 416" beside 415 in the archive)
        self.written: set[str] = set()

    def begin_bulk(self) -> None:
        """Into an empty archive, drop the deferrable indexes: built once by `end_bulk` (sorting all the keys
        once is far cheaper than inserting each one into a B-tree at a random place). A killed run leaves them
        dropped; `open_archive` builds them on the next open, so the archive stays usable and correct."""
        with Transaction(self.conn):
            fts.tune_for_bulk(self.conn)
        if self.conn.execute("SELECT 1 FROM messages LIMIT 1").fetchone() is not None:
            return
        with Transaction(self.conn):
            for name in DEFERRABLE_INDEXES:
                self.conn.execute(f"DROP INDEX IF EXISTS {name}")
        self.deferred = True

    def end_bulk(self) -> None:
        """Build the indexes `begin_bulk` dropped."""
        if self.deferred:
            restore_indexes(self.conn)
            self.deferred = False

    def known_raw(self) -> dict[bytes, tuple[str, int]]:
        """The hashes of conversations' bytes whose rows the archive holds as they gave them (ingest/raw_skip.py)."""
        return archive_digests.known_raw(self.conn)

    def source_status(self, sha256: str) -> str | None:
        row = self.conn.execute("SELECT status FROM sources WHERE sha256 = ?", (sha256,)).fetchone()
        return None if row is None else str(row["status"])

    def source_format(self, sha256: str) -> str | None:
        """The format the bytes were last read as (None when never read)."""
        row = self.conn.execute("SELECT format FROM sources WHERE sha256 = ?", (sha256,)).fetchone()
        return None if row is None else str(row["format"])

    def partial_sources(self) -> dict[str, tuple[str, set[str]]]:
        """sha256 -> (path, the conversations it delivered) of each source read only in part (a file cut short),
        that delivered any: what a later whole read of the same conversations supersedes (ingest/supersede.py).
        Read before a stage writes: a conversation rewritten by a later file takes that file's source id."""
        found: dict[str, tuple[str, set[str]]] = {}
        rows = self.conn.execute(
            "SELECT s.sha256, s.path, m.conversation_id FROM sources s JOIN messages m ON m.source_id = s.id"
            " WHERE s.status = 'partial'"
            " UNION SELECT s.sha256, s.path, c.id FROM sources s JOIN conversations c ON c.source_id = s.id"
            " WHERE s.status = 'partial'"
        )
        for sha256, path, conversation_id in rows:
            found.setdefault(str(sha256), (str(path), set()))[1].add(str(conversation_id))
        return found

    def begin_source(self, source: ExportSource) -> int:
        """Register the source (or reuse the row of an interrupted import of the same bytes)."""
        with Transaction(self.conn):
            row = self.conn.execute("SELECT id FROM sources WHERE sha256 = ?", (source.sha256,)).fetchone()
            if row is not None:
                self.conn.execute(
                    "UPDATE sources SET status = 'importing', path = ?, format = ? WHERE id = ?",
                    (source.path, source.format, row["id"]),
                )
                source_id = int(row["id"])
            else:
                cursor = self.conn.execute(
                    "INSERT INTO sources (path, sha256, format, size_bytes, status, imported_at)"
                    " VALUES (?, ?, ?, ?, 'importing', ?)",
                    (source.path, source.sha256, source.format, source.size_bytes, datetime.now(UTC).isoformat()),
                )
                source_id = int(cursor.lastrowid or 0)
        self.quarantine_keys[source_id] = set()  # a new read of these bytes
        return source_id

    def finish_source(self, source_id: int, *, partial: bool, notes: Sequence[str] = ()) -> None:
        """Close the source. A complete one also clears the END_OF_FILE rows of earlier partial reads of the same
        path (a dump read while it was still being written, in a watched folder): its remainder has arrived,
        and those rows, which hold no data, would otherwise stay in `staging failures` for ever."""
        with Transaction(self.conn):
            self.conn.execute(
                "UPDATE sources SET status = ?, notes = ? WHERE id = ?",
                ("partial" if partial else "complete", "\n".join(notes) or None, source_id),
            )
            if not partial:
                self.conn.execute(
                    "DELETE FROM quarantine WHERE locator = ? AND source_id IN (SELECT old.id FROM sources old"
                    " JOIN sources done ON done.path = old.path WHERE done.id = ? AND old.id != done.id"
                    " AND old.status = 'partial')",
                    (END_OF_FILE, source_id),
                )

    def write_batch(
        self,
        source_id: int,
        fmt: str,
        conversations: Sequence[ExportConversation | ConversationRows],
        quarantined: Sequence[QuarantineRecord],
        raw: Mapping[str, bytes] | None = None,
    ) -> tuple[WriteCounts, list[QuarantineRecord]]:
        """Write whole conversations and quarantine rows in one transaction.

        Returns the counts and the extra quarantine records this write produced (a message id that already
        belongs to another conversation cannot be stored twice: it is quarantined, not overwritten).
        `raw`: conversation id -> the hash of the bytes it was read from, recorded with its rows digest when
        the archive now holds exactly those rows (ingest/raw_skip.py).
        """
        batch = [c if isinstance(c, ConversationRows) else to_rows(c, fmt) for c in conversations]
        counts = WriteCounts()
        collisions: list[QuarantineRecord] = []
        with Transaction(self.conn):
            changes = self.conn.total_changes
            indexed = fts.last_rowid(self.conn)  # full-text search: new messages are indexed below, in bulk
            known = self._known_conversations([c.id for c in batch])  # id -> the digest of its stored rows
            fresh: list[ConversationRows] = []
            again: list[ConversationRows] = []
            for conversation in batch:
                if conversation.id in known:
                    again.append(conversation)
                else:
                    known[conversation.id] = None  # a second copy later in the same batch is not fresh
                    fresh.append(conversation)
            collisions.extend(self._insert_fresh(source_id, fresh, counts, known))
            for conversation in again:
                if conversation.id not in known:  # its first copy in the batch held only taken ids: not stored
                    known[conversation.id] = None
                    collisions.extend(self._insert_fresh(source_id, [conversation], counts, known))
                    continue
                found = digest(conversation)
                if found == known[conversation.id]:  # stored exactly so: a write would change nothing
                    counts.unchanged += len(conversation.messages)
                    continue
                self._need_indexes()
                before = counts.conversations
                collisions.extend(write_known(self.conn, source_id, conversation, counts, found, known))
                if counts.conversations != before:
                    self.written.add(conversation.id)
            if raw:
                read = {c.id: (raw[c.id], len(c.messages)) for c in batch if c.id in raw}
                archive_digests.put_raw(
                    self.conn,
                    [(key, cid, stored, n) for cid, (key, n) in read.items() if (stored := known.get(cid))],
                )
            rows = [
                (source_id, q.locator, q.reason, utf8_safe(q.raw), q.conversation_id)
                for q in (*quarantined, *collisions)
            ]
            if rows:
                self.conn.executemany(
                    "INSERT OR IGNORE INTO quarantine (source_id, locator, reason, raw, conversation_id)"
                    " VALUES (?, ?, ?, ?, ?)",
                    rows,
                )
                seen = self.quarantine_keys.setdefault(source_id, set())
                before = len(seen)
                seen.update((row[1], row[2]) for row in rows)
                counts.quarantined += len(seen) - before
            fts.index_new(self.conn, indexed)
            if self.conn.total_changes != changes:  # in the same transaction: a copy holds both or neither
                archive_changes.new_epoch(self.conn)
        return counts, collisions

    def stored_conversation(self, conversation_id: str) -> list[dict[str, Any]]:
        """Every stored message of one conversation, in seq order (what a later part of it continues)."""
        self._need_indexes()
        rows = self.conn.execute(
            "SELECT uuid, parent_id, role, author, content_type, text, created_at, is_hidden, raw FROM messages"
            " WHERE conversation_id = ? ORDER BY seq, uuid",
            (conversation_id,),
        )
        return [dict(row) for row in rows]

    def _known_conversations(self, ids: list[str]) -> dict[str, str | None]:
        """The stored conversations among `ids`, each with its digest (None: compare its messages)."""
        rows = self.conn.execute(
            "SELECT c.id, d.digest FROM conversations c LEFT JOIN conversation_digests d ON d.conversation_id = c.id"
            f" WHERE c.id IN {IN_VALUES}",
            (json_values(ids),),
        )
        return {row[0]: row[1] for row in rows}

    def _insert_fresh(
        self,
        source_id: int,
        conversations: list[ConversationRows],
        counts: WriteCounts,
        known: dict[str, str | None],
    ) -> list[QuarantineRecord]:
        """The common case, conversations not in the archive yet: plain bulk inserts, no per-row lookups.

        A message id already stored under another conversation makes its insert do nothing; that is
        noticed from the change count, and only then are the ids looked up to quarantine the intruders.
        A conversation whose every message is such an intruder (the same messages under another conversation id)
        is not stored at all, rather than as a conversation of no message: its inserts are rolled back and the rest
        inserted again (removed from `known`, so a later copy in the batch is fresh again).
        Every row stored as given: each conversation's digest is recorded (and in `known`); else none is.
        """
        if not conversations:
            return []
        conn = self.conn
        kept = conversations
        conn.execute("SAVEPOINT fresh")
        while True:
            conn.executemany(
                _INSERT_CONVERSATION, [(c.id, *c.fields, c.row_hash, len(c.messages), source_id) for c in kept]
            )
            rows = [(*row, source_id) for c in kept for row in c.messages]
            before = conn.total_changes
            conn.executemany(INSERT_MESSAGE + " ON CONFLICT (uuid) DO NOTHING", rows)
            inserted = conn.total_changes - before
            if inserted == len(rows):
                break
            stored = stored_messages(self.conn, list({str(row[UUID]) for row in rows}))
            emptied = {
                c.id
                for c in kept
                if c.messages and all(stored[str(r[UUID])][CONVERSATION_ID] != c.id for r in c.messages)
            }
            if not emptied:
                break
            # Taking them out frees only ids, so the loop ends: the next round empties none or fewer conversations
            conn.execute("ROLLBACK TO fresh")
            kept = [c for c in kept if c.id not in emptied]
        conn.execute("RELEASE fresh")
        counts.conversations += len(kept)
        self.written.update(c.id for c in kept)
        counts.inserted += inserted
        for dropped in {c.id for c in conversations} - {c.id for c in kept}:
            known.pop(dropped, None)
        if kept is conversations and inserted == len(rows):
            digests = [(c.id, digest(c)) for c in conversations]
            archive_digests.put(conn, digests)
            known.update(digests)
            return []
        rows = [row for c in conversations for row in c.messages]
        stored = stored_messages(self.conn, list({str(row[UUID]) for row in rows}))
        collisions = [
            collision(row, str(owner))
            for row in rows
            if (owner := stored[str(row[UUID])][CONVERSATION_ID]) != row[CONVERSATION_ID]
        ]
        self._need_indexes()
        for affected in {c.conversation_id for c in collisions}:
            recount(self.conn, str(affected))
        return collisions

    def _need_indexes(self) -> None:
        """Lookups by conversation are coming (a conversation seen twice, an id collision): without the index
        each would scan the whole table. Build it now, inside the batch's transaction, and keep it."""
        if self.deferred:
            for ddl in DEFERRABLE_INDEXES.values():
                self.conn.execute(ddl)
            self.deferred = False


def archive_stats(conn: sqlite3.Connection) -> dict[str, int]:
    """Counts for `chatmem archive stats`. The messages split two ways: `active_messages` (on each conversation's
    current branch) and `other_branch_messages` (on a branch edited or regenerated away) add up to `messages`;
    `visible_messages` (active and shown by the chat app: what the cues stage and recall read) and the active
    hidden ones (active_messages - visible_messages) add up to the active ones. `hidden_messages` counts what the
    chat app hides (system prompts, tool output) on any branch, as it always did: a ChatGPT export's hidden
    system prompt is also on the current branch, which made `hidden` and `active` look as if they overlapped."""

    def count(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    # one pass over the messages (a million rows at scale), not one per count
    total, active, hidden, visible = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(is_active = 1), 0), COALESCE(SUM(is_hidden = 1), 0),"
        " COALESCE(SUM(is_active = 1 AND is_hidden = 0), 0) FROM messages"
    ).fetchone()
    return {
        "sources": count("SELECT COUNT(*) FROM sources"),
        "conversations": count("SELECT COUNT(*) FROM conversations"),
        "messages": int(total),
        "active_messages": int(active),
        "hidden_messages": int(hidden),
        "visible_messages": int(visible),
        "other_branch_messages": int(total) - int(active),
        "quarantined": count("SELECT COUNT(*) FROM quarantine"),
    }


def iter_conversation_ids(conn: sqlite3.Connection) -> Iterable[str]:
    for row in conn.execute("SELECT id FROM conversations ORDER BY id"):
        yield str(row["id"])
