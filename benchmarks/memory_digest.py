"""A data dir's newest memory and graph manifest as short sha256 digests, to compare two data dirs that ran the same
days with different code (results must not change). Not a test; read-only.

    python benchmarks/memory_digest.py DATA_DIR [--target-like %s29day-w%]

Per memory table: the rows live at the newest memory run (run columns left out), sorted; the load manifest's
(layer, key, row_hash) of the targets matching --target-like; facts, concepts and topic_link_rows without their run
and time columns. Run ids differ between the two data dirs, the digests must not.
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import sys
from pathlib import Path

MEMORY = ("memory_content", "memory_cues", "memory_tags", "memory_edges", "memory_merges")
OTHERS = ("facts", "concepts", "topic_link_rows")
TIMES = ("created_at", "updated_at", "recorded_at", "invalidated_at")


def _digest(rows: object) -> tuple[int, str]:
    digest, n = hashlib.sha256(), 0
    for row in rows:  # type: ignore[attr-defined]
        digest.update(repr(tuple(row)).encode())
        n += 1
    return n, digest.hexdigest()[:16]


def digests(data_dir: Path, target_like: str) -> list[str]:
    db = sqlite3.connect(f"file:{data_dir / 'staging.db'}?mode=ro", uri=True)
    try:
        run = db.execute("SELECT MAX(run_id) FROM memory_runs").fetchone()[0]
        out = [f"newest memory run {run}"]
        for table in MEMORY:
            cols = ", ".join(
                r[1] for r in db.execute(f"PRAGMA table_info({table})") if r[1] not in ("run_id", "retired_run_id")
            )
            live = "run_id <= ? AND (retired_run_id IS NULL OR retired_run_id > ?)"
            n, h = _digest(db.execute(f"SELECT {cols} FROM {table} WHERE {live} ORDER BY {cols}", (run, run)))
            out.append(f"{table} {n} {h}")
        n, h = _digest(
            db.execute(
                "SELECT layer, key, row_hash FROM load_manifest WHERE target LIKE ? ORDER BY layer, key", (target_like,)
            )
        )
        out.append(f"load_manifest {n} {h}")
        for table in OTHERS:
            names = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
            cols = ", ".join(c for c in names if "run" not in c and c not in TIMES)
            n, h = _digest(db.execute(f"SELECT {cols} FROM {table} ORDER BY {cols}"))
            out.append(f"{table} {n} {h}")
        return out
    finally:
        db.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python benchmarks/memory_digest.py W/data --target-like %W/data%",
    )
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--target-like", default="%", help="the load manifest's targets (SQL LIKE)")
    args = parser.parse_args(argv)
    print("\n".join(digests(args.data_dir, args.target_like)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
