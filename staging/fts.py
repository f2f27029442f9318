"""Full-text search over archive messages: an external-content SQLite FTS5 table kept in step with ingest.

`messages_fts` indexes `messages.text` and stores no copy of it (content="messages", content_rowid="rowid").
It changes in the same transaction as the messages, so the index cannot lag the archive:

- new messages: `ArchiveWriter.write_batch` (the only writer of messages) indexes every row past the largest
  rowid it saw when its transaction began, with one INSERT ... SELECT (`index_new`). A per-row AFTER INSERT
  trigger did the same at twice the ingest time (benchmarks/bench_fts.py: FTS5 is far cheaper fed in bulk);
- changed text and deleted messages: the triggers below (rare: a newer dump that edits a message).

Datasette finds the index on its own (a search box on the messages table; Datasette quotes what is typed
there) and `search_messages` answers the same query from Python. Text a person types goes through
`match_expression` (FTS5 syntax when valid, else the words quoted): the canned query "Search messages" calls
it from SQL as `chatmem_match(:q)`, registered on each connection (`register`).

The archive's schema migration v2 creates the table and triggers and indexes the rows an older archive
already holds, once. A rowid of `messages` can change only on VACUUM (its key is a TEXT
uuid): after a VACUUM run `rebuild(conn)`.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import Any

SCHEMA = [
    # content="messages" in double quotes: the spelling Datasette looks for to find a table's search index
    "CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5("
    'text, content="messages", content_rowid="rowid", tokenize="unicode61 remove_diacritics 2")',
    # UPDATE OF text: re-indexing costs a delete and an insert, so only when the text itself changed
    """CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE OF text ON messages
        WHEN old.text IS NOT new.text BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
        INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text);
    END""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    END""",
]


def create(conn: sqlite3.Connection) -> None:
    """Create the index and its triggers, then fill it from the messages already stored (one rebuild)."""
    for statement in SCHEMA:
        conn.execute(statement)
    rebuild(conn)


def rebuild(conn: sqlite3.Connection) -> None:
    """Re-read every message into the index (FTS5's 'rebuild' command)."""
    conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")


# FTS5 gathers new terms in memory and writes a segment each time they pass `hashsize` (1 MiB by default) or
# the transaction ends. An ingest batch holds tens of MB of text: 1 MiB means dozens of small segments per
# batch, each merged again later. 64 MiB writes about one segment per batch: indexing ~30 % faster on real
# chat text (100k messages, per-batch inserts, measured twice each), for up to 64 MiB of memory while it runs.
HASHSIZE = 64 << 20


def tune_for_bulk(conn: sqlite3.Connection) -> None:
    """Set the index's `hashsize` (stored in the index's own config table, so it is written once)."""
    row = conn.execute("SELECT v FROM messages_fts_config WHERE k = 'hashsize'").fetchone()
    if row is None or int(row[0]) != HASHSIZE:
        conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('hashsize', ?)", (HASHSIZE,))


def last_rowid(conn: sqlite3.Connection) -> int:
    """The largest rowid of messages now: rows inserted after this call have larger ones."""
    return int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM messages").fetchone()[0])


def index_new(conn: sqlite3.Connection, after: int) -> None:
    """Index the messages inserted since `last_rowid` returned `after` (call inside the same transaction)."""
    conn.execute("INSERT INTO messages_fts (rowid, text) SELECT rowid, text FROM messages WHERE rowid > ?", (after,))


# A probe with the index's column name, empty: FTS5 parses a query (and raises on a malformed one) whether or not
# a row exists, so it tells whether text is a query without touching the archive.
_PROBE = "CREATE VIRTUAL TABLE probe USING fts5(text)"
MATCH_FUNCTION = "chatmem_match"  # the SQL name of match_expression (see `register`)


@functools.lru_cache(maxsize=512)
def match_expression(text: str) -> str:
    """What MATCH gets for text a person typed: the text itself when it is a valid FTS5 query (words,
    "a phrase", prefix*, AND/OR/NOT, NEAR, text:word), else each whitespace-separated term as a quoted string,
    so that `c++`, `foo"`, `a:b`, `e-mail` or a lone `AND` search for those words instead of raising an SQL
    error. Quoted terms must all occur (FTS5's implicit AND); no term at all matches nothing."""
    probe = sqlite3.connect(":memory:")
    try:
        probe.execute(_PROBE)
        probe.execute("SELECT 1 FROM probe WHERE probe MATCH ?", (text,)).fetchall()
        return text
    except sqlite3.Error:
        return " ".join('"' + term.replace('"', '""') + '"' for term in text.split()) or '""'
    finally:
        probe.close()


def register(conn: sqlite3.Connection) -> None:
    """Make `chatmem_match(text)` (match_expression) callable from SQL on this connection: the canned search
    query of `chatmem inspect` (staging/browse.py) reads `messages_fts MATCH chatmem_match(:q)`."""
    conn.create_function(MATCH_FUNCTION, 1, match_expression, deterministic=True)


def search_messages(conn: sqlite3.Connection, query: str, *, limit: int = 20) -> list[dict[str, Any]]:
    """Messages matching what a person typed (FTS5 syntax when it is valid, else its words: match_expression),
    best match first, with a highlighted snippet."""
    rows = conn.execute(
        "SELECT m.uuid, m.conversation_id, m.role, m.created_at,"
        " snippet(messages_fts, 0, '[', ']', '…', 12) AS snippet"
        " FROM messages_fts JOIN messages m ON m.rowid = messages_fts.rowid"
        " WHERE messages_fts MATCH ? ORDER BY rank LIMIT ?",
        (match_expression(query), limit),
    )
    names = [c[0] for c in rows.description]
    return [dict(zip(names, row, strict=True)) for row in rows]
