"""The memory rows' history: each row is written once and shared by every run it belongs to (staging.db migration 9).

A row of memory_content, memory_cues, memory_tags, memory_edges or memory_merges carries the run that created it
(`run_id`) and the run that retired it (`retired_run_id`, NULL while it is current), the pattern segments use.
"The memory of run R" is the rows live at R: created at or before R and not retired at or before R
(`LIVE`). Run ids sort by time, and the cues stage writes runs in that order only, so the newest run's memory is
the rows with no retired run (`CURRENT`).

A cues run R writes only what differs from the memory before it: a full build retires every current row and
writes its own; an incremental one retires the rows of the conversations it rebuilds (and cues, tags and cue ->
tag edges that changed) and writes their new rows; everything else is shared, not copied. A run's rows and
retirements commit in one transaction with its memory_runs row, so a killed run leaves either the previous state
or its whole change. A later cues run first undoes the runs newer than its base (runs whose cues stage did not
succeed, and R itself on a re-run): their rows deleted, the rows they retired made current again (`undo`).

Pruning (`prune`, after each successful cues run, `memory.prune_runs`): the memory_runs rows of the runs not kept
go (kept: the new run, the run of the stored recall index, the run each graph target last loaded), and so does
every retired row that no kept run sees. Current rows are never pruned: staging.db holds the current memory once
plus the rows that changed since the oldest kept run, whatever the number of runs.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from staging.db import Transaction

LIVE = "run_id <= ? AND (retired_run_id IS NULL OR retired_run_id > ?)"
"""The rows of the memory of run `?` (the run id bound twice)."""
CURRENT = "retired_run_id IS NULL"
"""The rows of the newest run's memory."""

# table -> (its key columns, its value columns): a run holds at most one row per key
TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "memory_content": (
        ("content_id",),
        (
            "kind",
            "conversation_id",
            "seq",
            "role",
            "author",
            "created_at",
            "day",
            "source",
            "key_text",
            "tokens",
            "merged_into",
        ),
    ),
    "memory_cues": (("cue_id",), ("name", "kind", "concept_type", "df", "idf", "hub")),
    "memory_tags": (("tag_id",), ("kind", "label", "size")),
    "memory_edges": (("src", "dst"), ("kind", "weight")),
    "memory_merges": (("merged_id", "original_id"), ()),
}

SCHEMA = [
    """CREATE TABLE memory_content (
        run_id TEXT NOT NULL,
        content_id TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('message', 'merged')),
        conversation_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        author TEXT,
        created_at TEXT,
        day TEXT,
        source TEXT NOT NULL,
        key_text TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        merged_into TEXT,
        retired_run_id TEXT,
        PRIMARY KEY (content_id, run_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE memory_cues (
        run_id TEXT NOT NULL,
        cue_id TEXT NOT NULL,
        name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('concept', 'keyphrase')),
        concept_type TEXT,
        df INTEGER NOT NULL,
        idf REAL NOT NULL,
        hub INTEGER NOT NULL,
        retired_run_id TEXT,
        PRIMARY KEY (cue_id, run_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE memory_tags (
        run_id TEXT NOT NULL,
        tag_id TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('conversation', 'day', 'month', 'topic', 'role', 'concept_type', 'source')),
        label TEXT NOT NULL,
        size INTEGER NOT NULL,
        retired_run_id TEXT,
        PRIMARY KEY (tag_id, run_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE memory_edges (
        run_id TEXT NOT NULL,
        src TEXT NOT NULL,
        dst TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('cue-content', 'cue-tag', 'tag-content')),
        weight REAL NOT NULL,
        retired_run_id TEXT,
        PRIMARY KEY (src, dst, run_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE memory_merges (
        run_id TEXT NOT NULL,
        merged_id TEXT NOT NULL,
        original_id TEXT NOT NULL,
        retired_run_id TEXT,
        PRIMARY KEY (merged_id, original_id, run_id)
    ) WITHOUT ROWID""",
]
EDGES_BY_DST = "CREATE INDEX memory_edges_by_dst ON memory_edges (dst)"
INDEXES = [
    EDGES_BY_DST,
    "CREATE INDEX memory_content_by_conversation ON memory_content (conversation_id)",
    *(f"CREATE INDEX {table}_retired ON {table} (retired_run_id) WHERE retired_run_id IS NOT NULL" for table in TABLES),
]


def _same(columns: Sequence[str], left: str, right: str) -> str:
    return " AND ".join(f"{left}.{c} IS {right}.{c}" for c in columns) or "1"


def migrate(conn: sqlite3.Connection) -> None:
    """Migration 8 of staging.db: the per-run copies of migration 3's tables become shared rows. Each kept run is
    replayed oldest first: a row equal to the current one is shared, a different or missing one retires it. The
    memory of every run listed in memory_runs reads as it did (tests/test_memory_history.py)."""
    runs = [str(r[0]) for r in conn.execute("SELECT run_id FROM memory_runs ORDER BY run_id")]
    conn.execute("DROP INDEX IF EXISTS memory_edges_by_dst")
    for table in TABLES:
        conn.execute(f"ALTER TABLE {table} RENAME TO {table}_v3")
    for statement in SCHEMA:
        conn.execute(statement)
    for table, (key, values) in TABLES.items():
        columns = ", ".join((*key, *values))
        for run in runs:
            conn.execute(
                f"UPDATE {table} AS n SET retired_run_id = ? WHERE retired_run_id IS NULL AND NOT EXISTS"
                f" (SELECT 1 FROM {table}_v3 AS o WHERE o.run_id = ? AND {_same((*key, *values), 'o', 'n')})",
                (run, run),
            )
            conn.execute(
                f"INSERT INTO {table} (run_id, {columns}) SELECT o.run_id, {columns} FROM {table}_v3 AS o"
                f" WHERE o.run_id = ? AND NOT EXISTS (SELECT 1 FROM {table} AS n WHERE {_same(key, 'n', 'o')}"
                " AND n.retired_run_id IS NULL)",
                (run,),
            )
        conn.execute(f"DROP TABLE {table}_v3")
    for statement in INDEXES:
        conn.execute(statement)


def undo(conn: sqlite3.Connection, run_ids: Iterable[str]) -> None:
    """Take back what runs wrote, newest first: their rows deleted, the rows they retired current again, their
    memory_runs rows deleted. Only for the newest runs (a stack): the caller's transaction."""
    for run_id in sorted(set(run_ids), reverse=True):
        for table in TABLES:
            conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
            conn.execute(
                f"UPDATE {table} INDEXED BY {table}_retired SET retired_run_id = NULL WHERE retired_run_id = ?",
                (run_id,),
            )
        conn.execute("DELETE FROM memory_runs WHERE run_id = ?", (run_id,))


def retire_current(conn: sqlite3.Connection, run_id: str) -> None:
    """A full build: every current row retired by `run_id` (the caller's transaction)."""
    for table in TABLES:
        conn.execute(f"UPDATE {table} SET retired_run_id = ? WHERE {CURRENT}", (run_id,))


def replace(
    conn: sqlite3.Connection,
    table: str,
    run_id: str,
    rows: Iterable[Sequence[object]],
    scope: str,
    params: Sequence[object] = (),
) -> tuple[int, int]:
    """Make the current rows of `table` within `scope` (SQL on its columns, with `params`) equal `rows` (key then
    value columns, each inside the scope) as of run `run_id`: a current row with no equal new row is retired, a
    new row with no equal current row is written; equal rows stay shared. Returns (retired, written)."""
    key, values = TABLES[table]
    columns = (*key, *values)
    conn.execute("DROP TABLE IF EXISTS temp.memory_new")
    conn.execute(f"CREATE TEMP TABLE memory_new ({', '.join(columns)}, PRIMARY KEY ({', '.join(key)})) WITHOUT ROWID")
    marks = ", ".join("?" * len(columns))
    conn.executemany(f"INSERT INTO temp.memory_new VALUES ({marks})", rows)
    before = conn.total_changes
    conn.execute(
        f"UPDATE {table} AS t SET retired_run_id = ? WHERE t.{CURRENT} AND ({scope}) AND NOT EXISTS"
        f" (SELECT 1 FROM temp.memory_new AS n WHERE {_same(columns, 'n', 't')})",
        (run_id, *params),
    )
    retired = conn.total_changes - before
    before = conn.total_changes
    conn.execute(
        f"INSERT INTO {table} (run_id, {', '.join(columns)}) SELECT ?, {', '.join(columns)} FROM temp.memory_new AS n"
        f" WHERE NOT EXISTS (SELECT 1 FROM {table} AS t WHERE {_same(key, 't', 'n')} AND t.{CURRENT})",
        (run_id,),
    )
    written = conn.total_changes - before
    conn.execute("DROP TABLE temp.memory_new")
    return retired, written


def prune(conn: sqlite3.Connection, keep: Iterable[str]) -> list[str]:
    """The memory_runs rows of runs not in `keep`, and every retired row no remaining run sees, in one
    transaction (killed, it is rolled back and the next prune does it). Returns the runs pruned, oldest first.

    Only the retired rows that a pruned run saw can be left unseen (each retired row is seen by a remaining run
    after every prune: when it was retired, by the newest run before its `retired_run_id`, for it was current
    then), and those were retired after the oldest pruned run: the sweep reads the retired rows from there on (by
    the `_retired` index), not every retired row kept (2.8M at 250k messages while a graph target loaded once,
    long ago, holds its run, where a quiet day prunes the run of two days before)."""
    kept = set(keep)
    with Transaction(conn), _page_cache(conn, PRUNE_CACHE_KIB):
        stale = [str(r[0]) for r in conn.execute("SELECT run_id FROM memory_runs ORDER BY run_id") if r[0] not in kept]
        if not stale:
            return []
        conn.executemany("DELETE FROM memory_runs WHERE run_id = ?", ((r,) for r in stale))
        for table in TABLES:
            conn.execute(
                f"DELETE FROM {table} INDEXED BY {table}_retired WHERE retired_run_id IS NOT NULL"
                f" AND retired_run_id > ? AND NOT EXISTS (SELECT 1 FROM memory_runs k WHERE k.run_id >= {table}.run_id"
                f" AND k.run_id < {table}.retired_run_id)",
                (stale[0],),
            )
    return stale


# The prune after a full cues build deletes every row that build replaced (4.3M at 250k messages, ~17M at 1M), in
# the retired index's order, so each delete lands on another page of the table and of its other indexes: with the
# connection's 64 MiB cache (staging/db.py) the pages are written out and read back many times. 1 GiB for the
# prune alone, given back after it: 6M edge rows deleted in 48 s instead of 86 (benchmarks/RESULTS.md, session 21).
PRUNE_CACHE_KIB = 1 << 20


@contextlib.contextmanager
def _page_cache(conn: sqlite3.Connection, kib: int) -> Iterator[None]:
    """SQLite's page cache at `kib` KiB for the block, then as it was (a smaller cache frees the pages above it)."""
    before = int(conn.execute("PRAGMA cache_size").fetchone()[0])
    conn.execute(f"PRAGMA cache_size = -{int(kib)}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA cache_size = {before}")


def rows_by_table(conn: sqlite3.Connection) -> dict[str, int]:
    """How many rows each memory table holds, every run's together (what grows with the data, not the runs)."""
    return {table: int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]) for table in TABLES}
