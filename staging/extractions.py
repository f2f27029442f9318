"""staging.db: extractions (the cache), which extraction is current per segment, and every mapper decision.

- `extractions`: one row per cache key = sha256(segment content_hash, *extractor.cache_key_parts). `status`
  'ok' rows are reused: a re-run with nothing changed makes no extractor call. 'failed' rows are retried on
  the next run. `hypotheses` is the JSON list of ConceptHypothesis after the semantic mapper; `extractor` says
  which extractor produced them ("offline" or "llm"), so offline output is never mistaken for a model's.
- `segment_extractions`: per current segment, the cache key of its extraction (the concepts stage's input).
- `mapper_decisions`: (cache_key, ordinal) -> rule, hypothesis index, field, before, after.

After each extract run `prune` deletes what no current segment would read again: retired segments' extractions
and those of another extractor version (docs/runs.md, "The extraction cache").

`SCHEMA` is migration 2 of staging/migrations.py (frozen: change a table with a new migration there).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from contracts.redact import redact
from staging import facts as fact_store
from staging.db import IN_VALUES, Transaction, json_values

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS extractions (
        cache_key TEXT PRIMARY KEY,
        content_hash TEXT NOT NULL,
        extractor TEXT NOT NULL,
        key_parts TEXT NOT NULL,
        segment_id TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
        hypotheses TEXT,
        hypotheses_proposed INTEGER NOT NULL DEFAULT 0,
        hypotheses_kept INTEGER NOT NULL DEFAULT 0,
        reason TEXT,
        raw_response TEXT,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens INTEGER NOT NULL DEFAULT 0,
        run_id TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS extractions_by_run ON extractions (run_id)",
    """CREATE TABLE IF NOT EXISTS segment_extractions (
        segment_id TEXT PRIMARY KEY,
        cache_key TEXT NOT NULL,
        run_id TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS mapper_decisions (
        cache_key TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        segment_id TEXT NOT NULL,
        hypothesis INTEGER NOT NULL,
        field TEXT NOT NULL,
        rule TEXT NOT NULL,
        before TEXT,
        after TEXT,
        run_id TEXT NOT NULL,
        PRIMARY KEY (cache_key, ordinal)
    )""",
    "CREATE INDEX IF NOT EXISTS mapper_decisions_by_run ON mapper_decisions (run_id, rule)",
]


# A current segment (`s`) whose current extraction is the successful one of its present content under these key
# parts (a JSON list, as `write_batch` stores them): the key this run would compute is already its current one.
EXTRACTED_AS_IS = (
    "EXISTS (SELECT 1 FROM segment_extractions se JOIN extractions e ON e.cache_key = se.cache_key"
    " WHERE se.segment_id = s.segment_id AND e.status = 'ok' AND e.content_hash = s.content_hash"
    " AND e.key_parts = ?)"
)


def stored_parts(parts: Sequence[str]) -> str:
    """Key parts as `extractions.key_parts` holds them."""
    return json.dumps(list(parts))


def cache_key(content_hash: str, parts: Sequence[str]) -> str:
    """The extraction cache key: the segment's content and everything else that changes the output."""
    return hashlib.sha256("\x1f".join((content_hash, *parts)).encode("utf-8")).hexdigest()


@dataclass(slots=True)
class ExtractionRow:
    """One extraction to store, with the mapper's decisions as (hypothesis, field, rule, before, after)."""

    cache_key: str
    content_hash: str
    extractor: str
    key_parts: tuple[str, ...]
    segment_id: str
    status: str  # 'ok' or 'failed'
    hypotheses: str | None  # JSON list of ConceptHypothesis
    hypotheses_proposed: int = 0
    hypotheses_kept: int = 0
    reason: str | None = None
    raw_response: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    decisions: list[tuple[int, str, str, str | None, str | None]] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)  # contracts.facts.Fact dumps (staging.facts)


def cached_ok(conn: sqlite3.Connection, keys: Iterable[str]) -> set[str]:
    """The keys among `keys` that already have a successful extraction."""
    rows = conn.execute(
        f"SELECT cache_key FROM extractions WHERE status = 'ok' AND cache_key IN {IN_VALUES}", (json_values(keys),)
    )
    found = {str(r[0]) for r in rows}
    return found


def write_batch(
    conn: sqlite3.Connection, run_id: str, rows: Sequence[ExtractionRow], current: Sequence[tuple[str, str]]
) -> int:
    """Store new extractions (replacing a failed try), their decisions, and each segment's current key.

    `current` is (segment_id, cache_key) for every segment of the batch that has a successful extraction,
    cached or new. Returns the number of segment_extractions rows that changed.
    """
    columns = [c for c in ExtractionRow.__slots__ if c not in ("decisions", "facts")]
    names = ", ".join((*columns, "run_id"))
    marks = ", ".join("?" * (len(columns) + 1))
    updates = ", ".join(f"{c} = excluded.{c}" for c in (*columns, "run_id") if c != "cache_key")
    with Transaction(conn):
        for row in rows:
            values = [getattr(row, c) for c in columns]
            for text in ("reason", "raw_response"):  # a failure's text may quote what the endpoint was sent
                values[columns.index(text)] = redact(values[columns.index(text)])
            values[columns.index("key_parts")] = stored_parts(row.key_parts)
            conn.execute(
                f"INSERT INTO extractions ({names}) VALUES ({marks}) ON CONFLICT (cache_key) DO UPDATE SET {updates}",
                (*values, run_id),
            )
            conn.execute("DELETE FROM mapper_decisions WHERE cache_key = ?", (row.cache_key,))
            conn.executemany(
                "INSERT INTO mapper_decisions (cache_key, ordinal, segment_id, hypothesis, field, rule, before, after,"
                " run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(row.cache_key, i, row.segment_id, *d, run_id) for i, d in enumerate(row.decisions)],
            )
            fact_store.write_mentions(conn, row.cache_key, row.segment_id, row.facts, run_id)
        before = conn.total_changes
        conn.executemany(
            "INSERT INTO segment_extractions (segment_id, cache_key, run_id) VALUES (?, ?, ?)"
            " ON CONFLICT (segment_id) DO UPDATE SET cache_key = excluded.cache_key, run_id = excluded.run_id"
            " WHERE segment_extractions.cache_key IS NOT excluded.cache_key",
            [(segment_id, key, run_id) for segment_id, key in current],
        )
        return conn.total_changes - before


def prune(conn: sqlite3.Connection, readable: Iterable[Sequence[str]]) -> int:
    """Delete the extractions nothing will read again, with their mapper decisions and fact mentions.

    Kept: the current extraction of every current segment (`segment_extractions`, after `drop_retired`: a segment
    the run could not extract again keeps its older one), and every extraction of a current segment's content whose
    key parts start with one of `readable` (the extractor versions this chatmem can run, whatever their settings:
    another model or `offline_max_concepts` switched back to finds its extractions). Deleted: the extractions of
    content no current segment has (retired segments) and those of other extractor versions (rules, prompt or
    schema of an older chatmem), failed ones included. One transaction; returns the extractions deleted.
    """
    prefixes = sorted({tuple(p) for p in readable})
    # json_extract of several paths is their compact JSON array; of one path, the value itself
    paths = [", ".join(f"'$[{i}]'" for i in range(len(p))) for p in prefixes if p]
    same = "1" if () in prefixes else " OR ".join(f"json_extract(e.key_parts, {path}) = ?" for path in paths) or "0"
    wanted = [] if () in prefixes else [json.dumps(p, separators=(",", ":")) if len(p) > 1 else p[0] for p in prefixes]
    with Transaction(conn):
        stale = [
            str(r[0])
            for r in conn.execute(
                "SELECT e.cache_key FROM extractions e"
                " WHERE e.cache_key NOT IN (SELECT cache_key FROM segment_extractions)"
                f" AND NOT (e.content_hash IN (SELECT content_hash FROM current_segments) AND ({same}))",
                wanted,
            )
        ]
        for table in ("extractions", "mapper_decisions", "fact_mentions"):
            conn.execute(f"DELETE FROM {table} WHERE cache_key IN {IN_VALUES}", (json_values(stale),))
        return len(stale)


def drop_retired(conn: sqlite3.Connection) -> int:
    """Forget the current extraction of segments that are no longer current (their rows stay cached)."""
    with Transaction(conn):
        cursor = conn.execute(
            "DELETE FROM segment_extractions WHERE segment_id NOT IN (SELECT segment_id FROM current_segments)"
        )
        return cursor.rowcount


def changed_since(conn: sqlite3.Connection, run_id: str) -> tuple[int, int]:
    """Segments pointed at their extraction by a run after `run_id` (new or extracted again), and the segments
    with one (run ids sort by time)."""
    row = conn.execute("SELECT COALESCE(SUM(run_id > ?), 0), COUNT(*) FROM segment_extractions", (run_id,)).fetchone()
    return int(row[0]), int(row[1])


@dataclass(frozen=True, slots=True)
class CurrentExtraction:
    segment_id: str
    cache_key: str
    extractor: str


def iter_current(conn: sqlite3.Connection) -> list[CurrentExtraction]:
    """Every current segment's successful extraction, oldest segment first (the concept loop's order).

    Without the hypotheses themselves (`hypotheses_for` loads them a batch at a time).
    """
    cursor = conn.execute(
        "SELECT se.segment_id, se.cache_key, e.extractor FROM segment_extractions se"
        " JOIN extractions e ON e.cache_key = se.cache_key AND e.status = 'ok'"
        " JOIN segments s ON s.segment_id = se.segment_id AND s.retired_run_id IS NULL"
        " ORDER BY s.first_time IS NULL, s.first_time, s.conversation_id, s.ordinal"
    )
    return [CurrentExtraction(str(row[0]), str(row[1]), str(row[2])) for row in cursor]


def hypotheses_for(conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, str]:
    """cache_key -> the JSON list of hypotheses stored for it."""
    rows = conn.execute(
        f"SELECT cache_key, hypotheses FROM extractions WHERE cache_key IN {IN_VALUES}", (json_values(keys),)
    )
    return {str(row[0]): str(row[1] or "[]") for row in rows}
