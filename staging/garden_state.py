"""staging.db: what the garden's staleness decisions read, kept between garden runs so that a run re-judges only
the concepts whose inputs moved (issue 23). Derived data: emptied or from another version, the next garden run
builds it again from `concepts`, `concept_evidence` and archive.db (garden/incremental.py says when and how).

- `garden_meta`: one row: the version of these tables' meaning, the settings the decisions were made with
  (garden and the concepts' weak rule) and the archive mark (staging/archive_changes.py) they were taken at.
- `garden_dirty`: concepts whose evidence rows were inserted, updated or deleted since the last garden run,
  logged by triggers on `concept_evidence` (any writer: the concepts loop, a split, the garden's own orphans).
- `garden_concepts`: each concept row as the last run judged it: the columns a decision reads (state,
  confidence, evidence count, merge pointer), compared with `concepts` in SQL to find the rows changed since.
- `garden_places`: each evidence message's source and conversation in archive.db (NULL: not in the archive), so
  that a concept's evidence is placed without reading the archive; refreshed from the conversations the
  archive logs as changed.
- `garden_last`: per concept and source, its last evidence time there; indexed by (source, time), so that a
  source's newest message moving forward finds the concepts it ages without a scan.
- `garden_counts`: per conversation and concept, its evidence rows in that conversation (every concept of the
  store; only live or archived ones compete for `keep_per_conversation`).
- `garden_kept`: each conversation's `keep_per_conversation` best-evidenced concepts (ties by id).
- `garden_sources`: per source, its newest message time and one message that has it (the witness: while it
  is unchanged, the newest time can only grow, from the conversations changed since).

`SCHEMA` is migration 15 of staging/migrations.py (frozen: change a table with a new migration there).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from staging.db import IN_VALUES, json_values

_JUDGED = "SELECT concept_id, state, confidence, evidence_count, merged_into FROM concepts"
_DIRTY = "INSERT INTO garden_dirty (concept_id) VALUES ({row}.concept_id) ON CONFLICT (concept_id) DO NOTHING;"

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS garden_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS garden_dirty (
        concept_id TEXT PRIMARY KEY
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS garden_concepts (
        concept_id TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        confidence REAL NOT NULL,
        evidence_count INTEGER NOT NULL,
        merged_into TEXT
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS garden_places (
        message_id TEXT PRIMARY KEY,
        source_id INTEGER,
        conversation_id TEXT
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS garden_last (
        concept_id TEXT NOT NULL,
        source_id INTEGER NOT NULL,
        last_at TEXT NOT NULL,
        PRIMARY KEY (concept_id, source_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS garden_last_by_time ON garden_last (source_id, last_at)",
    """CREATE TABLE IF NOT EXISTS garden_counts (
        conversation_id TEXT NOT NULL,
        concept_id TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (conversation_id, concept_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS garden_counts_by_concept ON garden_counts (concept_id)",
    """CREATE TABLE IF NOT EXISTS garden_kept (
        conversation_id TEXT NOT NULL,
        concept_id TEXT NOT NULL,
        PRIMARY KEY (conversation_id, concept_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS garden_kept_by_concept ON garden_kept (concept_id)",
    """CREATE TABLE IF NOT EXISTS garden_sources (
        source_id INTEGER PRIMARY KEY,
        newest TEXT NOT NULL,
        witness TEXT NOT NULL
    )""",
    "CREATE TRIGGER IF NOT EXISTS garden_dirty_insert AFTER INSERT ON concept_evidence BEGIN\n    "
    + _DIRTY.format(row="new")
    + "\nEND",
    "CREATE TRIGGER IF NOT EXISTS garden_dirty_update AFTER UPDATE ON concept_evidence BEGIN\n    "
    + _DIRTY.format(row="new")
    + " "
    + _DIRTY.format(row="old")
    + "\nEND",
    "CREATE TRIGGER IF NOT EXISTS garden_dirty_delete AFTER DELETE ON concept_evidence BEGIN\n    "
    + _DIRTY.format(row="old")
    + "\nEND",
]

TABLES = (
    "garden_meta",
    "garden_dirty",
    "garden_concepts",
    "garden_places",
    "garden_last",
    "garden_counts",
    "garden_kept",
    "garden_sources",
)
LIVE = ("active", "weak", "archived")
"""The states a staleness decision is made for, and that compete for a conversation's kept concepts."""


def present(conn: sqlite3.Connection) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'garden_meta'")
    return found.fetchone() is not None


def meta(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """What the last garden run recorded (None: nothing, or not readable)."""
    row = conn.execute("SELECT value FROM garden_meta WHERE key = 'state'").fetchone()
    if row is None:
        return None
    try:
        found = json.loads(row[0])
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def put_meta(conn: sqlite3.Connection, value: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO garden_meta (key, value) VALUES ('state', ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (json.dumps(value, sort_keys=True),),
    )


def clear(conn: sqlite3.Connection) -> None:
    """Empty every table (the full path then fills them again)."""
    for table in TABLES:
        conn.execute(f"DELETE FROM {table}")


def dirty(conn: sqlite3.Connection) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT concept_id FROM garden_dirty")}


def changed_concepts(conn: sqlite3.Connection) -> dict[str, tuple[str | None, str | None]]:
    """Concept rows whose judged columns differ from those the last run saw, new ones and gone ones: id -> (state
    then, state now), None where there was or is no row."""
    changed: dict[str, tuple[str | None, str | None]] = {}
    for concept_id, before, now in conn.execute(
        "SELECT c.concept_id, g.state, c.state FROM concepts c"
        " LEFT JOIN garden_concepts g ON g.concept_id = c.concept_id"
        " WHERE g.concept_id IS NULL OR g.state IS NOT c.state OR g.confidence IS NOT c.confidence"
        " OR g.evidence_count IS NOT c.evidence_count OR g.merged_into IS NOT c.merged_into"
    ):
        changed[str(concept_id)] = (before, str(now))
    for concept_id, before in conn.execute(
        "SELECT concept_id, state FROM garden_concepts g WHERE NOT EXISTS"
        " (SELECT 1 FROM concepts c WHERE c.concept_id = g.concept_id)"
    ):
        changed[str(concept_id)] = (str(before), None)
    return changed


def sync_concepts(conn: sqlite3.Connection, ids: set[str] | None = None) -> None:
    """Record the concept rows as they are now (None: all of them)."""
    if ids is None:
        conn.execute("DELETE FROM garden_concepts")
        conn.execute(f"INSERT INTO garden_concepts {_JUDGED}")
        return
    values = json_values(ids)
    conn.execute(f"DELETE FROM garden_concepts WHERE concept_id IN {IN_VALUES}", (values,))
    conn.execute(
        f"INSERT INTO garden_concepts {_JUDGED} WHERE concept_id IN {IN_VALUES}",
        (values,),
    )
