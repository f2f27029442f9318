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

Reading the dump costs more than comparing it: every conversation parsed, its rows built and digested. So
`raw_digests` keeps, per conversation, a digest of the dump's own bytes for it (the JSON element, keyed by the
format and the parser's code: ingest/raw_skip.py) beside the rows digest those bytes gave. An element whose
bytes digest is here, with that rows digest still the conversation's, is known without parsing it: the same bytes
read by the same code give the same rows, which are the stored ones. Stale rows (the conversation changed since)
fail that join and are replaced when the conversation's next digest is recorded.

`SCHEMA` is migration 5 of archive.db, `RAW_SCHEMA` migration 6 (staging/migrations.py).
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


RAW_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS raw_digests (
        raw BLOB PRIMARY KEY,
        conversation_id TEXT NOT NULL,
        digest TEXT NOT NULL,
        messages INTEGER NOT NULL
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS raw_digests_conversation ON raw_digests (conversation_id)",
]


def create(conn: sqlite3.Connection) -> None:
    """The table and its triggers (migration 5), empty: each conversation is compared row by row once more."""
    for statement in SCHEMA:
        conn.execute(statement)


def put(conn: sqlite3.Connection, digests: Iterable[tuple[str, str]]) -> None:
    """Record (conversation id, digest) pairs, after the writes of those conversations."""
    conn.executemany("INSERT OR REPLACE INTO conversation_digests (conversation_id, digest) VALUES (?, ?)", digests)


def create_raw(conn: sqlite3.Connection) -> None:
    """The raw digests table (migration 6), empty: the next read of each dump parses it all once more."""
    for statement in RAW_SCHEMA:
        conn.execute(statement)


def known_raw(conn: sqlite3.Connection) -> dict[bytes, tuple[str, int]]:
    """raw digest -> (conversation id, its message count), for every conversation whose stored rows are still
    what those bytes gave."""
    rows = conn.execute(
        "SELECT r.raw, r.conversation_id, r.messages FROM raw_digests r"
        " JOIN conversation_digests d ON d.conversation_id = r.conversation_id AND d.digest = r.digest"
    )
    return {bytes(raw): (conversation_id, messages) for raw, conversation_id, messages in rows}


def put_raw(conn: sqlite3.Connection, rows: Iterable[tuple[bytes, str, str, int]]) -> None:
    """Record (raw digest, conversation id, rows digest, messages), replacing the conversation's older ones."""
    rows = list(rows)
    conn.executemany("DELETE FROM raw_digests WHERE conversation_id = ?", [(row[1],) for row in rows])
    conn.executemany(
        "INSERT OR REPLACE INTO raw_digests (raw, conversation_id, digest, messages) VALUES (?, ?, ?, ?)", rows
    )
