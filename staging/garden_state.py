"""staging.db: what the garden's staleness decisions read, kept between garden runs so that a run re-judges only
the concepts whose inputs moved (issue 23). Derived data: emptied or from another version, the next garden run
builds it again from `concepts`, `concept_evidence` and archive.db (garden/incremental.py says when and how).

- `garden_meta`: one row: the version of these tables' meaning, the settings the decisions were made with
  (garden and the concepts' weak rule) and the archive mark (staging/archive_changes.py) they were taken at.
- `garden_dirty`: concepts whose evidence rows were inserted, updated or deleted since the last garden run,
  logged by triggers on `concept_evidence` (any writer: the concepts loop, a split, the garden's own orphans).
- `garden_concepts`: each concept row as the last run judged it: the columns a decision reads (state,
  confidence, evidence count, merge pointer) and its names (title, aliases), compared with `concepts` in SQL to
  find the rows changed since; indexed by merge pointer (what was merged into a renamed concept).
- `garden_names`: every concept's names in order (its id, title, aliases) with their folded key;
  `garden_name_map`: folded name -> the concept the facts link it to (garden/names.py).
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
- `garden_fact_dirty`: the (subject, attribute) groups of facts whose current statements may have changed since
  the last garden run, logged by triggers: a fact mention written or deleted, a segment's extraction changed, a
  segment retired, restored, inserted or deleted (indexes on fact_mentions by group and by segment serve them).
- `garden_fact_times`: each fact mention's message time in archive.db (NULL: none, or not in the archive),
  refreshed from the conversations the archive logs as changed.

`SCHEMA` is migration 15 of staging/migrations.py (frozen: change a table with a new migration there).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from staging.db import IN_VALUES, json_values

_JUDGED = "SELECT concept_id, state, confidence, evidence_count, merged_into, title, aliases FROM concepts"
_GROUP = (
    "INSERT INTO garden_fact_dirty (subject, attribute) VALUES ({row}.subject, {row}.attribute)"
    " ON CONFLICT (subject, attribute) DO NOTHING;"
)
_GROUPS_OF_EXTRACTION = (
    "INSERT INTO garden_fact_dirty (subject, attribute) SELECT DISTINCT subject, attribute FROM fact_mentions"
    " WHERE cache_key = {row}.cache_key AND segment_id = {row}.segment_id ON CONFLICT (subject, attribute) DO NOTHING;"
)
_GROUPS_OF_SEGMENT = (
    "INSERT INTO garden_fact_dirty (subject, attribute) SELECT DISTINCT subject, attribute FROM fact_mentions"
    " WHERE segment_id = {row}.segment_id ON CONFLICT (subject, attribute) DO NOTHING;"
)


def _trigger(name: str, event: str, body: str) -> str:
    return f"CREATE TRIGGER IF NOT EXISTS garden_{name} AFTER {event} BEGIN\n    {body}\nEND"


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
        merged_into TEXT,
        title TEXT NOT NULL,
        aliases TEXT NOT NULL
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS garden_concepts_by_merge ON garden_concepts (merged_into)",
    """CREATE TABLE IF NOT EXISTS garden_names (
        concept_id TEXT NOT NULL,
        ord INTEGER NOT NULL,
        name TEXT NOT NULL,
        key TEXT NOT NULL,
        PRIMARY KEY (concept_id, ord)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS garden_names_by_key ON garden_names (key)",
    """CREATE TABLE IF NOT EXISTS garden_name_map (
        key TEXT PRIMARY KEY,
        concept_id TEXT NOT NULL
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
    """CREATE TABLE IF NOT EXISTS garden_fact_dirty (
        subject TEXT NOT NULL,
        attribute TEXT NOT NULL,
        PRIMARY KEY (subject, attribute)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS garden_fact_times (
        message_id TEXT PRIMARY KEY,
        created_at TEXT
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS fact_mentions_by_group ON fact_mentions (subject, attribute)",
    "CREATE INDEX IF NOT EXISTS fact_mentions_by_segment ON fact_mentions (segment_id)",
    _trigger("fact_insert", "INSERT ON fact_mentions", _GROUP.format(row="new")),
    _trigger("fact_update", "UPDATE ON fact_mentions", _GROUP.format(row="new") + " " + _GROUP.format(row="old")),
    _trigger("fact_delete", "DELETE ON fact_mentions", _GROUP.format(row="old")),
    _trigger("extraction_insert", "INSERT ON segment_extractions", _GROUPS_OF_EXTRACTION.format(row="new")),
    _trigger(
        "extraction_update",
        "UPDATE OF segment_id, cache_key ON segment_extractions"
        " WHEN old.segment_id IS NOT new.segment_id OR old.cache_key IS NOT new.cache_key",
        _GROUPS_OF_EXTRACTION.format(row="new") + " " + _GROUPS_OF_EXTRACTION.format(row="old"),
    ),
    _trigger("extraction_delete", "DELETE ON segment_extractions", _GROUPS_OF_EXTRACTION.format(row="old")),
    _trigger("segment_insert", "INSERT ON segments", _GROUPS_OF_SEGMENT.format(row="new")),
    _trigger(
        "segment_retired",
        "UPDATE OF segment_id, retired_run_id ON segments WHEN old.segment_id IS NOT new.segment_id"
        " OR (old.retired_run_id IS NULL) IS NOT (new.retired_run_id IS NULL)",
        _GROUPS_OF_SEGMENT.format(row="new") + " " + _GROUPS_OF_SEGMENT.format(row="old"),
    ),
    _trigger("segment_delete", "DELETE ON segments", _GROUPS_OF_SEGMENT.format(row="old")),
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
    "garden_fact_dirty",
    "garden_fact_times",
    "garden_concepts",
    "garden_names",
    "garden_name_map",
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


def changed_concepts(conn: sqlite3.Connection) -> tuple[dict[str, tuple[str | None, str | None]], set[str]]:
    """Concept rows whose judged columns differ from those the last run saw, new ones and gone ones: id -> (state
    then, state now), None where there was or is no row; and the rows whose names (title, aliases) or merge
    pointer differ, new ones and gone ones."""
    changed: dict[str, tuple[str | None, str | None]] = {}
    renamed: set[str] = set()
    for concept_id, before, now, judged, names in conn.execute(
        "SELECT c.concept_id, g.state, c.state,"
        " g.concept_id IS NULL OR g.state IS NOT c.state OR g.confidence IS NOT c.confidence"
        "  OR g.evidence_count IS NOT c.evidence_count OR g.merged_into IS NOT c.merged_into,"
        " g.concept_id IS NULL OR g.merged_into IS NOT c.merged_into OR g.title IS NOT c.title"
        "  OR g.aliases IS NOT c.aliases"
        " FROM concepts c LEFT JOIN garden_concepts g ON g.concept_id = c.concept_id"
        " WHERE g.concept_id IS NULL OR g.state IS NOT c.state OR g.confidence IS NOT c.confidence"
        " OR g.evidence_count IS NOT c.evidence_count OR g.merged_into IS NOT c.merged_into"
        " OR g.title IS NOT c.title OR g.aliases IS NOT c.aliases"
    ):
        if judged:
            changed[str(concept_id)] = (before, str(now))
        if names:
            renamed.add(str(concept_id))
    for concept_id, before in conn.execute(
        "SELECT concept_id, state FROM garden_concepts g WHERE NOT EXISTS"
        " (SELECT 1 FROM concepts c WHERE c.concept_id = g.concept_id)"
    ):
        changed[str(concept_id)] = (str(before), None)
        renamed.add(str(concept_id))
    return changed, renamed


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
