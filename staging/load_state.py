"""staging.db tables of the load stage: every batch, the manifest of what the graph holds, and each target's watermark.

- `load_batches`: one row per batch of one run (run, layer, kind, batch number, rows, status, attempts, duration),
  so "what did the load of run R do" is one query and a load that died resumes at its first unfinished batch.
- `load_manifest`: per target graph and layer, the key and content hash of every row the graph holds as loaded.
  A re-run diffs the layer's current rows against it: only new or changed rows are sent, and rows that are gone
  are deleted from the graph. A batch's manifest rows are written in the same transaction that marks it done.
- `load_targets`: per target graph, the input watermark of its last succeeded load (nothing changed: skip).
- `load_manifest_counts`: per target graph and layer, how many rows the manifest lists, kept by triggers on
  `load_manifest` (migration 13): a load compares these counts with the graph's before it trusts the manifest,
  and counting a layer's rows walked its whole key range (~1.2 CPU-s a day at 250k messages, 3M manifest rows).
  The triggers cost ~2 us per manifest row inserted (~+5 s over a first build's 3M rows at 250k).

`SCHEMA` is migration 2 of staging/migrations.py (frozen: change a table with a new migration there).
The graph password never reaches any of them, nor does a user:password@ in the URI.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from contracts.redact import redact_uri
from staging.db import Transaction

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS load_batches (
        run_id TEXT NOT NULL REFERENCES runs(id),
        stage_run_id INTEGER NOT NULL REFERENCES stage_runs(id),
        target TEXT NOT NULL,
        layer TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('upsert', 'delete')),
        batch_no INTEGER NOT NULL,
        rows INTEGER NOT NULL,
        written INTEGER,
        status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        duration_s REAL,
        first_key TEXT,
        last_key TEXT,
        error TEXT,
        PRIMARY KEY (run_id, layer, kind, batch_no)
    )""",
    """CREATE TABLE IF NOT EXISTS load_manifest (
        target TEXT NOT NULL,
        layer TEXT NOT NULL,
        key TEXT NOT NULL,
        row_hash INTEGER NOT NULL,
        run_id TEXT NOT NULL,
        PRIMARY KEY (target, layer, key)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS load_targets (
        target TEXT PRIMARY KEY,
        uri TEXT NOT NULL,
        database TEXT,
        watermark TEXT,
        last_run_id TEXT,
        loaded_at TEXT
    )""",
]


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass(frozen=True)
class BatchKey:
    """Which batch: run, layer, kind (upsert or delete) and its number within them (from 1)."""

    run_id: str
    layer: str
    kind: str
    batch_no: int


def done_batches(conn: sqlite3.Connection, run_id: str, layer: str, kind: str) -> int:
    """How many batches of this run, layer and kind are done: a resumed load numbers on from there."""
    row = conn.execute(
        "SELECT COUNT(*) FROM load_batches WHERE run_id = ? AND layer = ? AND kind = ? AND status = 'done'",
        (run_id, layer, kind),
    ).fetchone()
    return int(row[0])


def begin_batch(
    conn: sqlite3.Connection,
    key: BatchKey,
    *,
    stage_run_id: int,
    target: str,
    rows: int,
    first_key: str,
    last_key: str,
) -> None:
    """Record a batch as running (a retry of the same batch number counts one more attempt)."""
    with Transaction(conn):
        conn.execute(
            "INSERT INTO load_batches (run_id, stage_run_id, target, layer, kind, batch_no, rows, status, attempts,"
            " started_at, first_key, last_key) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', 1, ?, ?, ?)"
            " ON CONFLICT (run_id, layer, kind, batch_no) DO UPDATE SET stage_run_id = excluded.stage_run_id,"
            " rows = excluded.rows, status = 'running', attempts = attempts + 1, started_at = excluded.started_at,"
            " finished_at = NULL, duration_s = NULL, error = NULL, first_key = excluded.first_key,"
            " last_key = excluded.last_key",
            (key.run_id, stage_run_id, target, key.layer, key.kind, key.batch_no, rows, _now(), first_key, last_key),
        )


def retried_batch(conn: sqlite3.Connection, key: BatchKey, error: str) -> None:
    """One more attempt of a running batch, after a transient error."""
    with Transaction(conn):
        conn.execute(
            "UPDATE load_batches SET attempts = attempts + 1, error = ?"
            " WHERE run_id = ? AND layer = ? AND kind = ? AND batch_no = ?",
            (error, key.run_id, key.layer, key.kind, key.batch_no),
        )


def finish_batch(
    conn: sqlite3.Connection,
    key: BatchKey,
    duration_s: float,
    *,
    target: str,
    written: int,
    upserted: Sequence[tuple[str, int]] = (),
    deleted: Sequence[str] = (),
) -> None:
    """Mark a batch done and update the manifest with its rows, in one transaction.

    `upserted` holds (key, row hash) of the rows now in the graph, `deleted` the keys removed from it.
    """
    with Transaction(conn):
        conn.execute(
            "UPDATE load_batches SET status = 'done', written = ?, finished_at = ?, duration_s = ?, error = NULL"
            " WHERE run_id = ? AND layer = ? AND kind = ? AND batch_no = ?",
            (written, _now(), round(duration_s, 4), key.run_id, key.layer, key.kind, key.batch_no),
        )
        if upserted:
            conn.executemany(
                "INSERT INTO load_manifest (target, layer, key, row_hash, run_id) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (target, layer, key)"
                " DO UPDATE SET row_hash = excluded.row_hash, run_id = excluded.run_id",
                [(target, key.layer, k, h, key.run_id) for k, h in upserted],
            )
        if deleted:
            conn.executemany(
                "DELETE FROM load_manifest WHERE target = ? AND layer = ? AND key = ?",
                [(target, key.layer, k) for k in deleted],
            )


def fail_batch(conn: sqlite3.Connection, key: BatchKey, duration_s: float, error: str) -> None:
    """Mark a batch failed: its rows stay out of the manifest, so the next load sends them again."""
    with Transaction(conn):
        conn.execute(
            "UPDATE load_batches SET status = 'failed', finished_at = ?, duration_s = ?, error = ?"
            " WHERE run_id = ? AND layer = ? AND kind = ? AND batch_no = ?",
            (_now(), round(duration_s, 4), error, key.run_id, key.layer, key.kind, key.batch_no),
        )


def iter_manifest(conn: sqlite3.Connection, target: str, layer: str) -> Iterator[tuple[str, int]]:
    """(key, row hash) of the rows loaded into `target` for `layer`, in key order (BINARY, as Python sorts str)."""
    cursor = conn.execute(
        "SELECT key, row_hash FROM load_manifest WHERE target = ? AND layer = ? ORDER BY key", (target, layer)
    )
    for key, row_hash in cursor:
        yield str(key), int(row_hash)


COUNTS_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS load_manifest_counts (
        target TEXT NOT NULL,
        layer TEXT NOT NULL,
        rows INTEGER NOT NULL,
        PRIMARY KEY (target, layer)
    ) WITHOUT ROWID""",
    # An upsert that updates a listed row fires no INSERT trigger (SQLite runs the UPDATE's): the count holds.
    """CREATE TRIGGER IF NOT EXISTS load_manifest_counted AFTER INSERT ON load_manifest BEGIN
        INSERT INTO load_manifest_counts (target, layer, rows) VALUES (NEW.target, NEW.layer, 1)
        ON CONFLICT (target, layer) DO UPDATE SET rows = rows + 1;
    END""",
    """CREATE TRIGGER IF NOT EXISTS load_manifest_uncounted AFTER DELETE ON load_manifest BEGIN
        UPDATE load_manifest_counts SET rows = rows - 1 WHERE target = OLD.target AND layer = OLD.layer;
    END""",
    # A row moved to another target or layer (benchmarks rebase a copied data dir's target this way)
    """CREATE TRIGGER IF NOT EXISTS load_manifest_moved AFTER UPDATE OF target, layer ON load_manifest
    WHEN OLD.target IS NOT NEW.target OR OLD.layer IS NOT NEW.layer BEGIN
        UPDATE load_manifest_counts SET rows = rows - 1 WHERE target = OLD.target AND layer = OLD.layer;
        INSERT INTO load_manifest_counts (target, layer, rows) VALUES (NEW.target, NEW.layer, 1)
        ON CONFLICT (target, layer) DO UPDATE SET rows = rows + 1;
    END""",
]


def create_counts(conn: sqlite3.Connection) -> None:
    """Migration 13: the counts table, filled from the manifest as it is, and the triggers that keep it."""
    for statement in COUNTS_SCHEMA:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO load_manifest_counts (target, layer, rows)"
        " SELECT target, layer, COUNT(*) FROM load_manifest GROUP BY target, layer"
    )


def manifest_count(conn: sqlite3.Connection, target: str, layer: str) -> int:
    """Rows the manifest says `target` holds for one layer (kept by triggers: no walk of the layer's rows)."""
    found = conn.execute("SELECT rows FROM load_manifest_counts WHERE target = ? AND layer = ?", (target, layer))
    row = found.fetchone()
    return 0 if row is None else int(row[0])


def manifest_lists(conn: sqlite3.Connection, target: str, layer: str) -> bool:
    """The manifest lists at least one row of the layer for `target` (one probe of the primary key)."""
    found = conn.execute("SELECT 1 FROM load_manifest WHERE target = ? AND layer = ? LIMIT 1", (target, layer))
    return found.fetchone() is not None


def forget_layer(conn: sqlite3.Connection, target: str, layer: str) -> None:
    """Drop a layer's manifest (the graph lost rows the manifest lists): the next diff sends every row again."""
    with Transaction(conn):
        conn.execute("DELETE FROM load_manifest WHERE target = ? AND layer = ?", (target, layer))
        # the layer's count starts again from nothing, whatever it held (a count never corrects itself otherwise)
        conn.execute("DELETE FROM load_manifest_counts WHERE target = ? AND layer = ?", (target, layer))


def target_watermark(conn: sqlite3.Connection, target: str) -> tuple[str | None, str | None]:
    """The watermark and run id of the target's last succeeded load, or (None, None)."""
    row = conn.execute("SELECT watermark, last_run_id FROM load_targets WHERE target = ?", (target,)).fetchone()
    return (None, None) if row is None else (row[0], row[1])


def record_target(
    conn: sqlite3.Connection, target: str, *, uri: str, database: str | None, watermark: str | None, run_id: str
) -> None:
    """Remember the target's watermark after a succeeded load (None: a failed load, nothing may be skipped)."""
    with Transaction(conn):
        conn.execute(
            "INSERT INTO load_targets (target, uri, database, watermark, last_run_id, loaded_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (target) DO UPDATE SET uri = excluded.uri,"
            " database = excluded.database, watermark = excluded.watermark, last_run_id = excluded.last_run_id,"
            " loaded_at = excluded.loaded_at",
            (target, redact_uri(uri), database, watermark, run_id, _now()),
        )


def run_batches(conn: sqlite3.Connection, run_id: str) -> list[dict[str, object]]:
    """The batches of one run, in the order they were written."""
    rows = conn.execute(
        "SELECT * FROM load_batches WHERE run_id = ? ORDER BY started_at, layer, kind, batch_no", (run_id,)
    )
    return [dict(row) for row in rows]
