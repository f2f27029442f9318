"""Whether two data dirs hold the same staging tables: a sha256 per table over its rows, the columns that name a run
or a wall-clock time left out (two builds of the same export differ there by construction). Not a test.

    python benchmarks/compare_data_dirs.py DATA_DIR [OTHER_DATA_DIR]

With one data dir: each table's row count and digest. With two: `same`, or `DIFF` with the other's figures. Used for
the Dask check of issue 23 (benchmarks/RESULTS.md, "Session 17"): a run on a LocalCluster against the local run of
the same export. Rows are hashed one by one and the hashes sorted, so row order does not count and no table is held
in memory whole (the embeddings of 250k messages are ~0.5 GB).
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
from pathlib import Path

# Per-run ledgers and timings: they differ between any two runs.
SKIP_TABLES = frozenset(
    {"runs", "stage_runs", "schema_migrations", "cluster_trials", "load_batches", "load_manifest",
     "load_manifest_counts", "load_targets", "llm_calls", "staging_changes", "memory_runs"}
)  # fmt: skip
SKIP_COLUMNS = frozenset(
    {"run_id", "created_run_id", "retired_run_id", "extraction_run_id", "started_at", "finished_at", "recorded_at",
     "updated_at", "invalidated_at", "duration_s", "elapsed_s", "cluster_run_id"}
)  # fmt: skip


def digests(data_dir: Path) -> dict[str, tuple[int, str]]:
    """Table -> (rows, the first 16 hex digits of the digest of its sorted row hashes)."""
    conn = sqlite3.connect(f"file:{data_dir / 'staging.db'}?mode=ro", uri=True)
    try:
        tables = [
            str(r[0])
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        ]
        out = {}
        for table in sorted(set(tables) - SKIP_TABLES):
            columns = [str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})") if r[1] not in SKIP_COLUMNS]
            rows = conn.execute(f"SELECT {', '.join(columns)} FROM {table}")
            hashed = sorted(hashlib.blake2b(repr(row).encode(), digest_size=16).digest() for row in rows)
            whole = hashlib.sha256(b"".join(hashed)).hexdigest()[:16]
            out[table] = (len(hashed), whole)
        return out
    finally:
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("other", type=Path, nargs="?")
    args = parser.parse_args()
    mine = digests(args.data_dir)
    theirs = digests(args.other) if args.other else None
    for table, (rows, digest) in mine.items():
        verdict = ""
        if theirs is not None:
            verdict = "same" if theirs.get(table) == (rows, digest) else f"DIFF {theirs.get(table)}"
        print(f"{table:28} {rows:>10,} {digest} {verdict}")
    if theirs is not None:
        for table in sorted(set(theirs) - set(mine)):
            print(f"{table:28} only in {args.other}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
