"""A larger data dir for bookkeeping benchmarks, made from a built one by replicating its rows in SQL.

    python benchmarks/scale_up_data_dir.py SOURCE_DATA_DIR TARGET_DATA_DIR [--times 20]

TARGET gets SOURCE's archive.db and staging.db (an SQLite backup: SOURCE is only read), brought to this code's
schema, and then every row of the tables below copied `times - 1` more times under fresh ids: copy k appends
`~k` to every id column (a message's uuid, conversation_id and parent_id, a segment's id and its first and last
message, a concept's id, title key and merged_into, ...), so each copy joins to itself exactly as the original
rows do (a segment's messages, an extraction's segment, a concept's evidence). A 50k build replicated 20x is a
1M-row archive and staging whose tables every fingerprint and digest reads at full size, for the price of a few
minutes of SQL instead of an hour-long pipeline build.

What it is not: a pipeline-built 1M archive. Texts, concepts and segments repeat (20 copies of the same 50k
conversations), so it serves to time what scans or counts rows (the runner's bookkeeping, benchmarks/
bench_runner_overhead.py), not anything whose cost depends on what the rows say (extraction, clustering, recall
quality). The run ledger (runs, stage_runs, ingest_files) and the sources are not copied: the copies belong to
the same runs and the same dump. A table with rows that is not listed here is refused rather than left at its
original size.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from staging.archive import open_archive  # noqa: E402
from staging.ledger import open_staging  # noqa: E402

# Per table: the columns that hold an id (suffixed `~k` in copy k; NULL stays NULL). Columns not named are copied
# as they are, except an INTEGER PRIMARY KEY (a new row number).
ARCHIVE_IDS: dict[str, tuple[str, ...]] = {
    "conversations": ("id", "current_node"),
    "messages": ("uuid", "conversation_id", "parent_id"),
    "quarantine": ("locator", "conversation_id"),
}
STAGING_IDS: dict[str, tuple[str, ...]] = {
    "segment_conversations": ("conversation_id",),
    "segments": ("segment_id", "conversation_id", "first_message_id", "last_message_id"),
    "segment_messages": ("segment_id", "message_id"),
    "extractions": ("cache_key", "segment_id"),
    "segment_extractions": ("segment_id", "cache_key"),
    "mapper_decisions": ("cache_key", "segment_id"),
    "concepts": ("concept_id", "title_key", "merged_into"),
    "concept_evidence": ("concept_id", "message_id", "segment_id"),
    "concept_transitions": ("concept_id", "other_id"),
    "concept_inputs": ("input_key", "segment_id", "concept_id"),
    "fact_mentions": ("cache_key", "segment_id", "message_id"),
    "embedded_segments": ("segment_id",),
    "embedding_items": ("item_id",),
}
# Kept as they are: SQLite's and the migrations' own, the ledger, the dump, what triggers fill.
NOT_COPIED = frozenset(
    {
        "schema_migrations",
        "runs",
        "stage_runs",
        "ingest_files",
        "sources",
        "archive_changes",
        "archive_epochs",  # tokens, not data: the copy's own writes add more
        "segment_mark",  # the base's mark, kept: the copies' rows are past it, so they are read as new
        "messages_fts",
        "messages_fts_data",
        "messages_fts_idx",
        "messages_fts_docsize",
        "messages_fts_config",
    }
)


def backup(source: Path, target: Path) -> None:
    reader = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    writer = sqlite3.connect(target)
    try:
        reader.backup(writer)
    finally:
        reader.close()
        writer.close()


def replicate(conn: sqlite3.Connection, ids: dict[str, tuple[str, ...]], times: int) -> dict[str, int]:
    """Copy every row of the listed tables `times - 1` more times (one INSERT ... SELECT per table, in one
    transaction); refuse a table with rows that is neither listed nor NOT_COPIED. Returns the rows per table."""
    listed = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    tables = [str(r[0]) for r in listed]
    unknown = [
        t for t in tables if t not in ids and t not in NOT_COPIED and conn.execute(f'SELECT 1 FROM "{t}"').fetchone()
    ]
    if unknown:
        raise SystemExit(f"tables with rows this script does not know how to replicate: {', '.join(unknown)}")
    counts: dict[str, int] = {}
    conn.execute("BEGIN IMMEDIATE")
    for table in tables:
        if table not in ids:
            continue
        info = list(conn.execute(f'PRAGMA table_info("{table}")'))
        columns = [str(c[1]) for c in info]
        missing = set(ids[table]) - set(columns)
        if missing:
            raise SystemExit(f"{table} has no column {', '.join(sorted(missing))}")
        exprs = []
        for _, name, declared, _, _, pk in info:
            if name in ids[table]:
                exprs.append(f"t.\"{name}\" || '~' || k.n")
            elif pk == 1 and str(declared).upper() == "INTEGER" and sum(c[5] > 0 for c in info) == 1:
                exprs.append("NULL")
            else:
                exprs.append(f't."{name}"')
        started = time.perf_counter()
        conn.execute(
            f"WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < ?)"
            f' INSERT INTO "{table}" ({", ".join(f"{chr(34)}{c}{chr(34)}" for c in columns)})'
            f' SELECT {", ".join(exprs)} FROM k CROSS JOIN "{table}" AS t',
            (times - 1,),
        )
        counts[table] = int(conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])
        print(f"  {table}: {counts[table]:,} rows ({time.perf_counter() - started:.0f} s)", flush=True)
    conn.execute("COMMIT")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="a built data dir (only read)")
    parser.add_argument("target", type=Path, help="a new data dir (must not exist)")
    parser.add_argument("--times", type=int, default=20, help="copies of every row, the original included")
    args = parser.parse_args()
    if args.target.exists():
        raise SystemExit(f"{args.target} exists: give a new directory")
    args.target.mkdir(parents=True)
    for name, opener, ids in (("archive.db", open_archive, ARCHIVE_IDS), ("staging.db", open_staging, STAGING_IDS)):
        backup(args.source / name, args.target / name)
        conn = opener(args.target / name)  # today's schema, before the copies (triggers included)
        try:
            print(f"{name}: x{args.times}", flush=True)
            replicate(conn, ids, args.times)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()


if __name__ == "__main__":
    main()
