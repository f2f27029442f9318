"""Opening the SQLite databases: WAL, foreign keys on. Schemas are versioned in staging.migrations."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) a read-write database with chatmem's pragmas; open_archive / open_staging
    then bring its schema up to date (staging.migrations)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None)  # autocommit; we BEGIN explicitly
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable at checkpoint, safe against corruption
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=30000")
    conn.execute("PRAGMA cache_size=-65536")  # 64 MiB page cache: bulk upserts touch many index pages
    # Checkpoint every ~64 MiB of WAL rather than every 4 MiB: fewer copies of the same pages on bulk loads.
    conn.execute("PRAGMA wal_autocheckpoint=16384")
    return conn


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open an existing database read-only (for inspection commands). Raises FileNotFoundError if absent."""
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist (nothing has been ingested into this data dir yet)")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
    conn.row_factory = sqlite3.Row
    return conn


class Transaction:
    """`with Transaction(conn):` runs a BEGIN IMMEDIATE ... COMMIT block, rolling back on any exception."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type is not None else "COMMIT")
