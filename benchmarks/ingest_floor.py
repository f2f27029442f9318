"""The SQLite write floor of an ingest: the same rows, bare `executemany`, the same schema and pragmas.

Reads every conversation and message row chatmem's ingest wrote (in the order it wrote them) from its
archive.db into memory, then times only the inserts into a fresh database, one transaction, in the variants
the ingest benchmark compares against:

- `indexed`: archive.db's own schema (staging.migrations.ARCHIVE: the uuid primary key and the
  (conversation_id, seq) index); the full-text index is a separate figure, `fts_seconds`, one FTS5 rebuild
  over the rows once they are in (the cheapest way to fill it);
- `bare`: the same columns with no primary key, no unique constraint and no index.

What is left out of the floor on purpose: parsing, validation, hashing, the upsert checks. The floor is what
SQLite alone needs to store these bytes on this machine, so chatmem's rate over the indexed floor says how much
of the hardware's write speed the rest of the stage leaves.

Example:
    python benchmarks/ingest_floor.py benchmarks/out/db-chatmem/archive.db /tmp/floor indexed
"""

from __future__ import annotations

import resource
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHUNK = 20_000  # rows per executemany call (one transaction holds them all)

BARE_SCHEMA = [
    "CREATE TABLE conversations (id TEXT, title TEXT, created_at TEXT, updated_at TEXT, current_node TEXT,"
    " format TEXT NOT NULL, message_count INTEGER NOT NULL, source_id INTEGER NOT NULL, row_hash TEXT NOT NULL)",
    "CREATE TABLE messages (uuid TEXT, conversation_id TEXT NOT NULL, parent_id TEXT, role TEXT NOT NULL,"
    " author TEXT, content_type TEXT NOT NULL, text TEXT NOT NULL, created_at TEXT, is_active INTEGER NOT NULL,"
    " is_hidden INTEGER NOT NULL, seq INTEGER NOT NULL, content_hash TEXT NOT NULL, raw TEXT,"
    " source_id INTEGER NOT NULL)",
]
CONVERSATION_COLUMNS = "id, title, created_at, updated_at, current_node, format, message_count, source_id, row_hash"
MESSAGE_COLUMNS = (
    "uuid, conversation_id, parent_id, role, author, content_type, text, created_at, is_active, is_hidden, seq,"
    " content_hash, raw, source_id"
)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def read_rows(archive: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    source = sqlite3.connect(archive)
    try:
        sources = source.execute("SELECT * FROM sources ORDER BY id").fetchall()
        conversations = source.execute(f"SELECT {CONVERSATION_COLUMNS} FROM conversations ORDER BY rowid").fetchall()
        messages = source.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages ORDER BY rowid").fetchall()
    finally:
        source.close()
    return sources, conversations, messages


def open_target(data_dir: Path, variant: str) -> sqlite3.Connection:
    sys.path.insert(0, str(ROOT))
    from staging.archive import open_archive
    from staging.db import connect

    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "archive.db"
    if variant == "indexed":
        return open_archive(path)  # archive.db's schema, pragmas and migrations, exactly as the stage gets them
    conn = connect(path)  # the same pragmas, a bare schema
    for statement in BARE_SCHEMA:
        conn.execute(statement)
    conn.execute(
        "CREATE TABLE sources (id INTEGER, path TEXT, sha256 TEXT, format TEXT, size_bytes INTEGER,"
        " status TEXT, imported_at TEXT, notes TEXT)"
    )
    return conn


def measure(archive: Path, data_dir: Path, variant: str) -> dict[str, Any]:
    """Insert the rows of `archive` into a fresh database; seconds of the inserts and commit only."""
    sources, conversations, messages = read_rows(archive)
    conn = open_target(data_dir, variant)
    conn.execute("PRAGMA foreign_keys=OFF")  # the floor checks nothing; the rows are known good
    start, cpu = time.perf_counter(), cpu_seconds()
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(f"INSERT INTO sources VALUES ({', '.join('?' * 8)})", sources)
    conn.executemany(f"INSERT INTO conversations ({CONVERSATION_COLUMNS}) VALUES ({', '.join('?' * 9)})", conversations)
    insert = f"INSERT INTO messages ({MESSAGE_COLUMNS}) VALUES ({', '.join('?' * 14)})"
    for offset in range(0, len(messages), CHUNK):
        conn.executemany(insert, messages[offset : offset + CHUNK])
    conn.execute("COMMIT")
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    fts_seconds = fts_cpu = 0.0
    if variant == "indexed":
        from staging import fts

        start, fts_cpu = time.perf_counter(), cpu_seconds()
        conn.execute("BEGIN IMMEDIATE")
        fts.tune_for_bulk(conn)  # the same FTS5 settings the ingest stage uses
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")
        conn.execute("COMMIT")
        fts_seconds, fts_cpu = time.perf_counter() - start, cpu_seconds() - fts_cpu
    conn.close()
    return {
        "messages": len(messages),
        "seconds": seconds,
        "fts_seconds": fts_seconds,
        "cpu_seconds": cpu,
        "fts_cpu_seconds": fts_cpu,
        "startup_seconds": 0.0,
        "db_bytes": (data_dir / "archive.db").stat().st_size,
    }


if __name__ == "__main__":
    print(measure(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]))
