"""A re-run over a built data dir with one small new dump: each stage's wall and CPU time (issue 12: a re-run with
1k new messages should cost in proportion to what is new, minutes rather than an hour at 1M messages).

    python benchmarks/bench_incremental.py BUILT_DATA_DIR NEW_DUMP --work COPY_DIR [--json OUT.json]

BUILT_DATA_DIR is left as it is: it is copied to COPY_DIR (replaced if present) and `chatmem run NEW_DUMP` runs
there, one process, as a user runs it. While it runs, the process's CPU time (/proc, user+system, its own: a local
graph server's JVM is a child and not counted) is sampled twice a second and charged to the stage that
stage_runs says is running; wall per stage is stage_runs.duration_s. Prints a table and the cluster stage's
path (incremental 1: new segments placed in the saved topic model; 0: tuned and fitted).

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

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process so far (fields 14 and 15 of /proc/PID/stat)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return -1.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def running_stage(staging: Path, after_id: int) -> tuple[str | None, int]:
    """The stage stage_runs shows running (or last started) among rows newer than `after_id`."""
    try:
        with sqlite3.connect(f"file:{staging}?mode=ro", uri=True, timeout=1) as conn:
            row = conn.execute(
                "SELECT stage, id FROM stage_runs WHERE id > ? ORDER BY id DESC LIMIT 1", (after_id,)
            ).fetchone()
    except sqlite3.Error:
        return None, after_id
    return (None, after_id) if row is None else (str(row[0]), int(row[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("built", type=Path, help="a data dir built by `chatmem run` (left untouched)")
    parser.add_argument("new_dump", type=Path, help="the small export to add")
    parser.add_argument("--work", type=Path, required=True, help="where the copy is made and the run happens")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    if args.work.exists():
        shutil.rmtree(args.work)
    shutil.copytree(args.built, args.work, symlinks=True)
    staging = args.work / "staging.db"
    with sqlite3.connect(staging) as conn:
        last_id = int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM stage_runs").fetchone()[0])
    chatmem = Path(sys.executable).parent / "chatmem"
    command = [str(chatmem), "--data-dir", str(args.work), "run", str(args.new_dump), "--json"]
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cpu: dict[str, float] = {}
    seen, stage = 0.0, "start-up"
    while child.poll() is None:
        time.sleep(0.5)
        now = cpu_seconds(child.pid)
        if now < 0:
            break
        cpu[stage] = cpu.get(stage, 0.0) + now - seen
        seen = now
        found, _ = running_stage(staging, last_id)
        stage = found or stage
    child.wait()
    wall = time.perf_counter() - started
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
            "cpu_s": round(cpu.get(str(name), 0.0), 1),
            "counts": json.loads(counts or "{}"),
        }
    result = {
        "built": str(args.built),
        "new_dump": str(args.new_dump),
        "messages_after": messages,
        "rc": child.returncode,
        "wall_s": round(wall, 1),
        "cpu_s": round(sum(cpu.values()), 1),
        "start_up_cpu_s": round(cpu.get("start-up", 0.0), 1),
        "stages": stages,
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(f"rc {child.returncode}, wall {wall:.1f} s, CPU {result['cpu_s']} s ({messages:,} messages after the dump)")
    print("| stage | status | in-stage s | CPU s (approx.) |")
    print("|---|---|---:|---:|")
    for name, row in stages.items():
        print(f"| {name} | {row['status']} | {row['stage_s']:.1f} | {row['cpu_s']:.1f} |")
    cluster = stages.get("cluster", {}).get("counts", {})
    print(
        f"cluster: incremental={cluster.get('incremental')} placed={cluster.get('segments_placed')}"
        f" trials_run={cluster.get('trials_run')}"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
