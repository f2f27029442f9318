"""The memory prune after a full cues build, with the connection's page cache and with the prune's own (issue 23).
Not a test.

    python benchmarks/bench_prune_cache.py --rows 6000000 --work /tmp/prune   # ~3 min to build, then two prunes

A real staging.db (every migration) gets ROWS memory_edges rows of run r1 retired by run r2 and ROWS current rows of
r2 (random cue and message keys, as a full build writes them), then is copied twice; each copy runs
`staging.memory_history.prune(keep={r2})`, which deletes r1's rows, twice with `PRUNE_CACHE_KIB` at the connection's
64 MiB (staging/db.py) and twice as shipped, alternated. Prints each time and the ratio (the same machine and run).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from staging import memory_history
from staging.ledger import open_staging


def build(path: Path, rows: int) -> None:
    open_staging(path).close()  # every migration: the real tables and indexes
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous = OFF")  # the build is not measured: as fast as it goes
    conn.execute("PRAGMA cache_size = -2097152")
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


def prune(base: Path, copy: Path, cache_kib: int) -> tuple[float, float, int]:
    """(wall s, CPU s, rows deleted) of one prune of a fresh copy of `base` with this page cache."""
    shutil.copy(base, copy)
    conn = open_staging(copy)
    memory_history.PRUNE_CACHE_KIB = cache_kib
    before = conn.execute("SELECT COUNT(*) FROM memory_edges").fetchone()[0]
    started, cpu = time.perf_counter(), time.process_time()
    memory_history.prune(conn, {"r2"})
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    deleted = before - conn.execute("SELECT COUNT(*) FROM memory_edges").fetchone()[0]
    conn.close()
    copy.unlink()
    return seconds, cpu, deleted


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
    times: dict[int, list[tuple[float, float]]] = {65536: [], shipped: []}
    deleted: set[int] = set()
    for kib in (65536, shipped, shipped, 65536):  # alternated: neither always runs first
        wall, cpu, rows = prune(base, args.work / "copy.db", kib)
        times[kib].append((wall, cpu))
        deleted.add(rows)
        print(f"{kib // 1024:>5} MiB cache: {wall:.1f} s wall, {cpu:.1f} CPU-s", flush=True)
    assert len(deleted) == 1
    old, new = (sum(w for w, _ in times[k]) for k in (65536, shipped))
    print(f"prune of {deleted.pop():,} rows, wall of two each: 64 MiB / {shipped // 1024} MiB = {old / new:.2f}")


if __name__ == "__main__":
    main()
