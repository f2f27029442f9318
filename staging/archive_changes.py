"""Which conversations of archive.db changed since a mark: what lets the load read only what changed.

A mark is a few numbers taken in one read: the largest rowid of `conversations` and of `messages`, and the newest
version of `archive_changes`. The conversations changed since a mark are

- those inserted after it (`conversations.rowid` above the mark's),
- those that got a message inserted after it (`messages.rowid` above the mark's): free for ingest, no trigger;
- those whose row or a message's row was updated or deleted after it: the triggers below log them in
  `archive_changes` (one row per conversation, its version raised on every change).

Inserts need no trigger because a rowid table numbers a new row past the largest rowid, and the archive never
deletes a message or a conversation (staging/archive.py keeps them, marked inactive). A conversation's UPDATE is
logged only when a column changes: ingest rewrites every known conversation's `message_count` with the value it
already has, and that is no change. A VACUUM may renumber rowids (fts.py says the same): a mark taken before a
VACUUM is refused when the archive's first source differs or its largest rowids went down, and a load then diffs
everything once (load/archive_delta.py); so is one whose newest message at the mark is another message now (an
archive restored from an older copy that grew back past the mark).

A restore can also hide behind updates alone: a copy taken before some updates, put back, then updated again up to
the mark's version, has the same origin, rowids and newest message, and reuses the versions the mark counts as
seen. So every write transaction of archive.db appends an epoch, a random token (`archive_epochs`, migration 7;
`ArchiveWriter.write_batch` is the only writer of conversations and messages), and a mark keeps the newest: a copy
taken before that write lacks the token, whatever was written since. The table keeps the newest `KEPT_EPOCHS`
tokens; a mark older than those is refused, which costs its reader one full read and loses nothing.

`SCHEMA` is migration 3 of archive.db, `EPOCHS` migration 7 (staging/migrations.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import asdict, astuple, dataclass
from typing import Any

_BUMP = "(SELECT COALESCE(MAX(version), 0) + 1 FROM archive_changes)"
_CONVERSATION_COLUMNS = ("id", "title", "created_at", "updated_at", "current_node", "format", "message_count")
_CHANGED = " OR ".join(f"old.{c} IS NOT new.{c}" for c in (*_CONVERSATION_COLUMNS, "source_id", "row_hash"))

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS archive_changes (
        conversation_id TEXT PRIMARY KEY,
        version INTEGER NOT NULL
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS archive_changes_by_version ON archive_changes (version)",
    f"""CREATE TRIGGER IF NOT EXISTS archive_changes_message_update AFTER UPDATE ON messages BEGIN
        INSERT OR REPLACE INTO archive_changes VALUES (new.conversation_id, {_BUMP});
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS archive_changes_message_moved AFTER UPDATE OF conversation_id ON messages
        WHEN old.conversation_id IS NOT new.conversation_id BEGIN
        INSERT OR REPLACE INTO archive_changes VALUES (old.conversation_id, {_BUMP});
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS archive_changes_message_delete AFTER DELETE ON messages BEGIN
        INSERT OR REPLACE INTO archive_changes VALUES (old.conversation_id, {_BUMP});
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS archive_changes_conversation_update AFTER UPDATE ON conversations
        WHEN {_CHANGED} BEGIN
        INSERT OR REPLACE INTO archive_changes VALUES (new.id, {_BUMP});
        INSERT OR REPLACE INTO archive_changes SELECT old.id, {_BUMP} WHERE old.id IS NOT new.id;
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS archive_changes_conversation_delete AFTER DELETE ON conversations BEGIN
        INSERT OR REPLACE INTO archive_changes VALUES (old.id, {_BUMP});
    END""",
]


KEPT_EPOCHS = 10_000
_NEW_EPOCH = "INSERT INTO archive_epochs (token) VALUES (lower(hex(randomblob(12))))"
EPOCHS = [
    """CREATE TABLE IF NOT EXISTS archive_epochs (
        id INTEGER PRIMARY KEY,
        token TEXT NOT NULL UNIQUE
    )""",
    _NEW_EPOCH,  # a copy of the archive from before this migration opens into an epoch of its own
]


def create(conn: sqlite3.Connection) -> None:
    """The table and its triggers (migration 3). Changes before it are not logged: a load with no mark from after
    it diffs everything, as before."""
    for statement in SCHEMA:
        conn.execute(statement)


def create_epochs(conn: sqlite3.Connection) -> None:
    """The epochs table and its first token (migration 7)."""
    for statement in EPOCHS:
        conn.execute(statement)


def new_epoch(conn: sqlite3.Connection) -> None:
    """Append a token, inside the caller's write transaction (so a copy holds it exactly when it holds the write),
    and forget the tokens past the newest `KEPT_EPOCHS`."""
    newest = conn.execute(_NEW_EPOCH).lastrowid or 0
    if newest > KEPT_EPOCHS and newest % 100 == 0:  # prune now and then, not on every batch
        conn.execute("DELETE FROM archive_epochs WHERE id <= ?", (newest - KEPT_EPOCHS,))


@dataclass(frozen=True)
class Mark:
    """Where the archive stood: compare a later archive with it (`changed_since`)."""

    conversations: int
    messages: int
    version: int
    origin: str
    """The first source's sha256 and import time: another archive (or a rebuilt one) has another origin."""
    newest: str = ""
    """The uuid of the message at rowid `messages` (its newest row): an archive restored from an older copy that grew
    back past the mark holds another message there. Empty in marks taken before it was kept: not checked."""
    epoch: str = ""
    """The archive's newest epoch token: a copy from before the mark's last write lacks it. Empty in marks taken
    before epochs were kept: not checked."""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def as_tuple(self) -> tuple[Any, ...]:
        """The fields in order (what `Mark(*fields)` takes back; older stored tuples are shorter)."""
        return astuple(self)

    @classmethod
    def from_json(cls, found: object) -> Mark | None:
        if not isinstance(found, dict):
            return None
        try:
            return cls(
                int(found["conversations"]),
                int(found["messages"]),
                int(found["version"]),
                str(found["origin"]),
                str(found.get("newest") or ""),
                str(found.get("epoch") or ""),
            )
        except (KeyError, TypeError, ValueError):
            return None


def tracked(conn: sqlite3.Connection) -> bool:
    """The archive logs its changes (migration 3 applied)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'archive_changes'")
    return found.fetchone() is not None


def mark(conn: sqlite3.Connection) -> Mark:
    """The archive as it stands now (one read transaction keeps the numbers consistent when the caller holds one)."""
    row = conn.execute(
        "SELECT (SELECT COALESCE(MAX(rowid), 0) FROM conversations), (SELECT COALESCE(MAX(rowid), 0) FROM messages),"
        " (SELECT COALESCE(MAX(version), 0) FROM archive_changes),"
        " (SELECT sha256 || ' ' || imported_at FROM sources ORDER BY id LIMIT 1),"
        " (SELECT uuid FROM messages ORDER BY rowid DESC LIMIT 1)"
    ).fetchone()
    return Mark(int(row[0]), int(row[1]), int(row[2]), str(row[3] or ""), str(row[4] or ""), _newest_epoch(conn))


def _newest_epoch(conn: sqlite3.Connection) -> str:
    if not _has_epochs(conn):  # an archive opened without its migrations (read by an older layout's tools)
        return ""
    row = conn.execute("SELECT token FROM archive_epochs ORDER BY id DESC LIMIT 1").fetchone()
    return "" if row is None else str(row[0])


def _has_epochs(conn: sqlite3.Connection) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'archive_epochs'")
    return found.fetchone() is not None


def _epoch_known(conn: sqlite3.Connection, token: str) -> bool:
    if not _has_epochs(conn):
        return False
    return conn.execute("SELECT 1 FROM archive_epochs WHERE token = ?", (token,)).fetchone() is not None


def comparable(conn: sqlite3.Connection, since: Mark) -> bool:
    """The archive is the one the mark was taken of, and has only grown since."""
    now = mark(conn)
    return (
        now.origin == since.origin
        and now.conversations >= since.conversations
        and now.messages >= since.messages
        and now.version >= since.version
        and (not since.newest or _uuid_at(conn, since.messages) == since.newest)
        and (not since.epoch or _epoch_known(conn, since.epoch))
    )


def _uuid_at(conn: sqlite3.Connection, rowid: int) -> str:
    row = conn.execute("SELECT uuid FROM messages WHERE rowid = ?", (rowid,)).fetchone()
    return "" if row is None else str(row[0] or "")


def changed_since(conn: sqlite3.Connection, since: Mark) -> Iterator[str]:
    """Ids of the conversations inserted, changed or deleted after the mark (each once, in id order)."""
    rows = conn.execute(
        "SELECT id FROM conversations WHERE rowid > ?1"
        " UNION SELECT conversation_id FROM messages WHERE rowid > ?2"
        " UNION SELECT conversation_id FROM archive_changes WHERE version > ?3 ORDER BY 1",
        (since.conversations, since.messages, since.version),
    )
    for row in rows:
        yield str(row[0])
