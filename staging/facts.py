"""staging.db: fact mentions (what the extractors read), the facts with their validity, and the gardener's log.

- `fact_mentions`: (cache_key, ordinal) -> one checked `Fact` of one extraction (written with the extraction, so
  a cached extraction keeps its facts). The current mentions are those of each current segment's extraction.
- `facts`: one row per interval of validity (`contracts.facts.FactRecord`), bi-temporal: valid_from / valid_to in
  event time, recorded_at / invalidated_at in ingestion time. Rows are never deleted: a fact that a newer one
  contradicts is 'superseded', one whose evidence is gone is 'retracted'; both stay queryable as of a date.
- `garden_changes`: (run_id, ordinal) -> kind, target, reason, before, after: every change the garden stage made
  (or, in a dry run, would make).

`SCHEMA` is migration 3 of staging/migrations.py (frozen: change a table with a new migration there).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS fact_mentions (
        cache_key TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        segment_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        subject TEXT NOT NULL,
        attribute TEXT NOT NULL,
        value TEXT NOT NULL,
        polarity TEXT NOT NULL CHECK (polarity IN ('positive', 'negative')),
        text TEXT NOT NULL,
        confidence REAL NOT NULL,
        run_id TEXT NOT NULL,
        PRIMARY KEY (cache_key, ordinal)
    )""",
    """CREATE TABLE IF NOT EXISTS facts (
        fact_id TEXT PRIMARY KEY,
        subject TEXT NOT NULL,
        attribute TEXT NOT NULL,
        value TEXT NOT NULL,
        value_key TEXT NOT NULL,
        polarity TEXT NOT NULL CHECK (polarity IN ('positive', 'negative')),
        valid_from TEXT,
        valid_to TEXT,
        recorded_at TEXT NOT NULL,
        invalidated_at TEXT,
        state TEXT NOT NULL CHECK (state IN ('valid', 'superseded', 'retracted')),
        superseded_by TEXT,
        support INTEGER NOT NULL,
        last_stated TEXT,
        message_ids TEXT NOT NULL,
        evidence TEXT NOT NULL,
        subject_concept_id TEXT,
        value_concept_id TEXT,
        run_id TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS facts_by_key ON facts (subject, attribute, valid_from)",
    """CREATE TABLE IF NOT EXISTS garden_changes (
        run_id TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        kind TEXT NOT NULL,
        target TEXT NOT NULL,
        reason TEXT NOT NULL,
        before TEXT,
        after TEXT,
        dry_run INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, ordinal)
    )""",
]

FACT_COLUMNS = (
    "fact_id",
    "subject",
    "attribute",
    "value",
    "value_key",
    "polarity",
    "valid_from",
    "valid_to",
    "recorded_at",
    "invalidated_at",
    "state",
    "superseded_by",
    "support",
    "last_stated",
    "message_ids",
    "evidence",
    "subject_concept_id",
    "value_concept_id",
    "run_id",
)


def has_facts(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'facts'").fetchone() is not None


def write_mentions(
    conn: sqlite3.Connection, cache_key: str, segment_id: str, facts: Sequence[dict[str, Any]], run_id: str
) -> None:
    """Replace one extraction's fact mentions (inside the caller's transaction). `facts`: Fact dumps."""
    conn.execute("DELETE FROM fact_mentions WHERE cache_key = ?", (cache_key,))
    conn.executemany(
        "INSERT INTO fact_mentions (cache_key, ordinal, segment_id, message_id, subject, attribute, value, polarity,"
        " text, confidence, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                cache_key,
                ordinal,
                segment_id,
                fact["evidence"]["message_id"],
                fact["subject"],
                fact["attribute"],
                fact["value"],
                fact["polarity"],
                fact["evidence"]["text"],
                fact["confidence"],
                run_id,
            )
            for ordinal, fact in enumerate(facts)
        ],
    )


@dataclass(frozen=True, slots=True)
class Mention:
    """One current statement of a fact, with where it was said (time filled in from archive.db)."""

    mention_id: str  # cache_key:ordinal
    segment_id: str
    message_id: str
    subject: str
    attribute: str
    value: str
    polarity: str
    text: str
    confidence: float


def current_mentions(conn: sqlite3.Connection) -> list[Mention]:
    """Every fact mention of every current segment's current extraction, in a stable order."""
    rows = conn.execute(
        "SELECT m.cache_key || ':' || m.ordinal, m.segment_id, m.message_id, m.subject, m.attribute, m.value,"
        " m.polarity, m.text, m.confidence FROM fact_mentions m"
        " JOIN segment_extractions se ON se.cache_key = m.cache_key AND se.segment_id = m.segment_id"
        " JOIN current_segments s ON s.segment_id = m.segment_id"
        " ORDER BY m.cache_key, m.ordinal"
    )
    return [
        Mention(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5]), str(r[6]), str(r[7]), float(r[8]))
        for r in rows
    ]


def load_facts(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """Every stored fact row by fact_id (message_ids and evidence as lists)."""
    found: dict[str, dict[str, Any]] = {}
    for row in conn.execute(f"SELECT {', '.join(FACT_COLUMNS)} FROM facts ORDER BY fact_id"):
        values = dict(zip(FACT_COLUMNS, row, strict=True))
        values["message_ids"] = json.loads(values["message_ids"])
        values["evidence"] = json.loads(values["evidence"])
        found[values["fact_id"]] = values
    return found


def upsert_facts(conn: sqlite3.Connection, rows: Iterable[dict[str, Any]]) -> None:
    marks = ", ".join("?" * len(FACT_COLUMNS))
    updates = ", ".join(f"{c} = excluded.{c}" for c in FACT_COLUMNS[1:])
    values = [
        [json.dumps(row[c], ensure_ascii=False) if c in ("message_ids", "evidence") else row[c] for c in FACT_COLUMNS]
        for row in rows
    ]
    conn.executemany(
        f"INSERT INTO facts ({', '.join(FACT_COLUMNS)}) VALUES ({marks}) ON CONFLICT (fact_id) DO UPDATE SET {updates}",
        values,
    )


def add_changes(
    conn: sqlite3.Connection, run_id: str, changes: Sequence[tuple[str, str, str, Any, Any]], dry: bool
) -> None:
    """Append (kind, target, reason, before, after) rows to the garden log of `run_id`."""
    start = conn.execute("SELECT COALESCE(MAX(ordinal) + 1, 0) FROM garden_changes WHERE run_id = ?", (run_id,))
    first = int(start.fetchone()[0])
    conn.executemany(
        "INSERT INTO garden_changes (run_id, ordinal, kind, target, reason, before, after, dry_run)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (run_id, first + i, kind, target, reason, _json(before), _json(after), int(dry))
            for i, (kind, target, reason, before, after) in enumerate(changes)
        ],
    )


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
