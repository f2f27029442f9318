"""Which conversations a newer dump repeats unchanged: what lets ingest skip them without reading their messages.

A scheduled run re-reads a full export every day; all but a few hundred of its tens of thousands of conversations
are byte for byte what the archive already holds. Comparing each of them message by message (every stored row
read back) was most of the ingest stage's time. Instead, `conversation_digests` keeps, per conversation, the
digest of the rows (`staging.archive_rows.digest`: the conversation's row hash and each message's compared
columns, text by its hash) of the last dump written to it, and only when writing that dump again would change
nothing: a write that was not an older dump's (which keeps the newer state) and that quarantined no message id
collision (which a new source would quarantine again). A dump whose digest equals the stored one is that no-op:
every message unchanged, nothing retired, the conversation row as it is.

Triggers keep that true whatever writes the file: any insert, update or delete of a conversation's row or of one of
its messages drops its digest (the writer sets it again after its own writes), so a digest present means no row of
the conversation changed since the dump it names was written. Dropped, a conversation is compared row by row once
more, as before this table existed (the first run after the upgrade does that for every conversation).

`SCHEMA` is migration 5 of archive.db (staging/migrations.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

_DROP = "DELETE FROM conversation_digests WHERE conversation_id = {row}.conversation_id"

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS conversation_digests (
        conversation_id TEXT PRIMARY KEY,
        digest TEXT NOT NULL
    ) WITHOUT ROWID""",
    f"""CREATE TRIGGER IF NOT EXISTS conversation_digests_message_insert AFTER INSERT ON messages BEGIN
        {_DROP.format(row="new")};
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS conversation_digests_message_update AFTER UPDATE ON messages BEGIN
        {_DROP.format(row="old")};
        {_DROP.format(row="new")};
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS conversation_digests_message_delete AFTER DELETE ON messages BEGIN
        {_DROP.format(row="old")};
    END""",
    """CREATE TRIGGER IF NOT EXISTS conversation_digests_conversation_update AFTER UPDATE ON conversations BEGIN
        DELETE FROM conversation_digests WHERE conversation_id IN (old.id, new.id);
    END""",
    """CREATE TRIGGER IF NOT EXISTS conversation_digests_conversation_delete AFTER DELETE ON conversations BEGIN
        DELETE FROM conversation_digests WHERE conversation_id = old.id;
    END""",
]


def create(conn: sqlite3.Connection) -> None:
    """The table and its triggers (migration 5), empty: each conversation is compared row by row once more."""
    for statement in SCHEMA:
        conn.execute(statement)


def put(conn: sqlite3.Connection, digests: Iterable[tuple[str, str]]) -> None:
    """Record (conversation id, digest) pairs, after the writes of those conversations."""
    conn.executemany("INSERT OR REPLACE INTO conversation_digests (conversation_id, digest) VALUES (?, ?)", digests)
