"""A re-run over a built data dir with one small new dump: each stage's time, the run's CPU (issue 12: a re-run with
1k new messages should cost in proportion to what is new, minutes rather than an hour at 1M messages).

    python benchmarks/bench_incremental.py BUILT_DATA_DIR NEW_DUMP --work COPY_DIR [--json OUT.json]

BUILT_DATA_DIR is left as it is: it is copied to COPY_DIR (replaced if present) and `chatmem run NEW_DUMP` runs
there, one process, as a user runs it. Its CPU time (user+system from wait4: a local graph server's JVM is
counted only if the run reaps it) and peak RSS are printed; wall per stage is
stage_runs.duration_s, read once the run has ended. Prints a table and the cluster stage's path (incremental 1: new
segments placed in the saved topic model; 0: tuned and fitted).

Example:
    python benchmarks/bench_incremental.py /work/scale/s13incr/d25k-incr /work/scale/chatgpt-real-new1k-seed2.json \
        --work /work/scale/s13incr/d25k-incr-run
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("built", type=Path, help="a data dir built by `chatmem run` (left untouched)")
    parser.add_argument("new_dump", type=Path, help="the small export to add")
    parser.add_argument("--work", type=Path, required=True, help="where the copy is made and the run happens")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument(
        "--same-target",
        action="store_true",
        help="make the copy's local graph the target the original's manifest names (its key is the graph dir's"
        " absolute path): the copy's load then diffs as an in-place re-run would, instead of sending everything",
    )
    args = parser.parse_args()
    if args.work.exists():
        shutil.rmtree(args.work)
    shutil.copytree(args.built, args.work, symlinks=True)
    staging = args.work / "staging.db"
    if args.same_target:
        _rebase_target(args.built / "graph", args.work / "graph", staging, args.work / "load-memory.json")
    with sqlite3.connect(staging) as conn:
        last_id = int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM stage_runs").fetchone()[0])
    chatmem = Path(sys.executable).parent / "chatmem"
    command = [str(chatmem), "--data-dir", str(args.work), "run", str(args.new_dump), "--json"]
    started = time.perf_counter()
    # Nothing reads staging.db while the run writes it: polling it from another process (the sqlite3 CLI) once
    # cost two runs a "disk I/O error" (/work/notes/scale_findings.md). Stage times come from stage_runs after.
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    rc = os.waitstatus_to_exitcode(status)
    with sqlite3.connect(staging) as conn:
        rows = conn.execute(
            "SELECT stage, status, duration_s, counts FROM stage_runs WHERE id > ? ORDER BY id", (last_id,)
        ).fetchall()
        messages = int(sqlite3.connect(args.work / "archive.db").execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    stages: dict[str, dict[str, Any]] = {}
    for name, status, seconds, counts in rows:
        stages[str(name)] = {
            "status": status,
            "stage_s": round(float(seconds or 0.0), 2),
            "counts": json.loads(counts or "{}"),
        }
    result = {
        "built": str(args.built),
        "new_dump": str(args.new_dump),
        "messages_after": messages,
        "rc": rc,
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mib": round(usage.ru_maxrss / 1024),
        "stages": stages,
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(f"rc {rc}, wall {wall:.1f} s, CPU {result['cpu_s']} s, peak RSS {result['peak_rss_mib']} MiB", end="")
    print(f" ({messages:,} messages after the dump)")
    print("| stage | status | in-stage s |")
    print("|---|---|---:|")
    for name, row in stages.items():
        print(f"| {name} | {row['status']} | {row['stage_s']:.1f} |")
    cluster = stages.get("cluster", {}).get("counts", {})
    print(
        f"cluster: incremental={cluster.get('incremental')} placed={cluster.get('segments_placed')}"
        f" trials_run={cluster.get('trials_run')}"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


def _rebase_target(old_graph: Path, new_graph: Path, staging: Path, loaded: Path) -> None:
    """Rename the local graph target `local:<old graph dir>#db` to the copy's graph dir in the copy's load state."""
    old, new = f"local:{old_graph.resolve()}#", f"local:{new_graph.resolve()}#"
    with sqlite3.connect(staging) as conn:
        for table in ("load_targets", "load_manifest", "load_batches"):
            conn.execute(
                f"UPDATE {table} SET target = ? || substr(target, ?) WHERE target LIKE ?",
                (new, len(old) + 1, old + "%"),
            )
    if loaded.exists():
        found = json.loads(loaded.read_text())
        loaded.write_text(json.dumps({k.replace(old, new, 1): v for k, v in found.items()}))


if __name__ == "__main__":
    main()
