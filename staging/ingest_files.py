"""What the ingest stage did with each export file in a run (`ingest_files`, keyed by run and path)."""

from __future__ import annotations

import sqlite3
from typing import Any

from contracts.redact import redact
from staging.db import Transaction


def record_ingest_file(conn: sqlite3.Connection, *, run_id: str, stage_run_id: int, **row: Any) -> None:
    """Upsert what the ingest stage did with one file in this run. A row saying the file arrived in this run is
    not replaced by "skipped" for the same bytes: the file given twice (a path twice, a folder and its
    conversations.json) or read again by a resumed attempt of the run arrived all the same, and the ledger says so."""
    row = {"run_id": run_id, "stage_run_id": stage_run_id, **redact(row)}
    columns = ", ".join(row)
    marks = ", ".join("?" * len(row))
    updates = ", ".join(f"{c} = excluded.{c}" for c in row if c not in ("run_id", "path"))
    kept = (
        "NOT (excluded.status = 'skipped' AND ingest_files.status IN ('ingested', 'partial')"
        " AND excluded.sha256 IS ingest_files.sha256)"
    )
    with Transaction(conn):
        conn.execute(
            f"INSERT INTO ingest_files ({columns}) VALUES ({marks}) ON CONFLICT (run_id, path) DO UPDATE SET {updates}"
            f" WHERE {kept}",
            tuple(row.values()),
        )


REMOVED = "removed after it failed: left out of this run"  # the detail of such a file's row (ingest/stage.py)


def failed_before(conn: sqlite3.Connection, run_id: str, path: str) -> bool:
    """The file failed in an earlier attempt of this run's ingest stage, or was left out after failing (its row
    says so): a third attempt leaves it out again, rather than failing on the file the hint said to remove."""
    row = conn.execute(
        "SELECT status, detail FROM ingest_files WHERE run_id = ? AND path = ?", (run_id, path)
    ).fetchone()
    return row is not None and (row[0] == "failed" or (row[0] == "skipped" and row[1] == REMOVED))


STUCK = ("failed", "partial")  # outcomes that the same bytes, read again, would repeat


def last_outcome(conn: sqlite3.Connection, sha256: str) -> dict[str, Any] | None:
    """The latest outcome recorded for a file with these bytes (any path, any run): run_id, path, status, format
    and detail; None when none was. `serve --watch` does not try bytes again whose outcome is in STUCK."""
    row = conn.execute(
        "SELECT run_id, path, status, format, detail FROM ingest_files WHERE sha256 = ?"
        " ORDER BY stage_run_id DESC, rowid DESC LIMIT 1",
        (sha256,),
    ).fetchone()
    return None if row is None else dict(zip(("run_id", "path", "status", "format", "detail"), row, strict=True))


SUPERSEDED = "superseded by "  # how the detail of a file cut short that a later whole read made moot starts


def latest_for_path(conn: sqlite3.Connection, path: str) -> dict[str, Any] | None:
    """The latest outcome recorded for this path (any run): run_id, status, sha256 and detail; None when none was."""
    row = conn.execute(
        "SELECT run_id, status, sha256, detail FROM ingest_files WHERE path = ? ORDER BY stage_run_id DESC, rowid DESC"
        " LIMIT 1",
        (path,),
    ).fetchone()
    return None if row is None else dict(zip(("run_id", "status", "sha256", "detail"), row, strict=True))
