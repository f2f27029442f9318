"""The memory prune after a full cues build, with the connection's page cache and with the prune's own (issue 23).
Not a test.

    python benchmarks/bench_prune_cache.py --rows 6000000 --work /tmp/prune   # ~3 min to build, then two prunes

A real staging.db (every migration) gets ROWS memory_edges rows of run r1 retired by run r2 and ROWS current rows of
r2 (random cue and message keys, as a full build writes them), then is copied twice; each copy runs
`staging.memory_history.prune(keep={r2})`, which deletes r1's rows, once with `PRUNE_CACHE_KIB` at the connection's
64 MiB (staging/db.py) and once as shipped. Prints both times and their ratio (the same machine, the same run).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from staging import memory_history
from staging.ledger import open_staging


def build(path: Path, rows: int) -> None:
    conn = open_staging(path)
    rnd = random.Random(1)
    for run in ("r1", "r2"):
        conn.execute(
            "INSERT INTO memory_runs (run_id, content, cues, tags, edges, hubs, merged, summary)"
            " VALUES (?, 0, 0, 0, ?, 0, 0, '{}')",
            (run, rows),
        )
    for run, retired in (("r1", "r2"), ("r2", None)):
        edges = (
            (run, f"cue:{rnd.randrange(10**6):07d}", f"msg-{rnd.randrange(16**12):012x}", "cue-content", 0.5, retired)
            for _ in range(rows)
        )
        conn.executemany("INSERT OR IGNORE INTO memory_edges VALUES (?, ?, ?, ?, ?, ?)", edges)
        conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def prune(base: Path, copy: Path, cache_kib: int) -> tuple[float, int]:
    shutil.copy(base, copy)
    conn = open_staging(copy)
    memory_history.PRUNE_CACHE_KIB = cache_kib
    before = conn.execute("SELECT COUNT(*) FROM memory_edges").fetchone()[0]
    started = time.perf_counter()
    memory_history.prune(conn, {"r2"})
    seconds = time.perf_counter() - started
    deleted = before - conn.execute("SELECT COUNT(*) FROM memory_edges").fetchone()[0]
    conn.close()
    copy.unlink()
    return seconds, deleted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="edge rows per run (r1 retired, r2 current)")
    parser.add_argument("--work", type=Path, required=True, help="a directory for the databases (replaced)")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    base = args.work / "base.db"
    started = time.perf_counter()
    build(base, args.rows)
    print(f"built {args.rows:,} + {args.rows:,} edge rows in {time.perf_counter() - started:.0f} s", flush=True)
    shipped = memory_history.PRUNE_CACHE_KIB
    old, deleted = prune(base, args.work / "a.db", 65536)
    new, deleted_again = prune(base, args.work / "b.db", shipped)
    assert deleted == deleted_again
    print(
        f"prune of {deleted:,} rows: 64 MiB cache {old:.1f} s, {shipped // 1024} MiB {new:.1f} s, ratio {old / new:.2f}"
    )


if __name__ == "__main__":
    main()
