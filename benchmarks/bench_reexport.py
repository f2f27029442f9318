"""The service's next full export over a built data dir, stage slice by slice: what the cues stage and the whole run
cost, and what the run left in staging.db (issue 23: memory rows shared across runs instead of copied). Not a test.

    python benchmarks/bench_reexport.py BUILT_DATA_DIR EXPORT --work COPY_DIR [--json OUT.json]
    python benchmarks/bench_reexport.py --make-export BASE.json NEW_MESSAGES OUT.json   # the re-export itself
    python benchmarks/bench_reexport.py --make-export OUT.json 1000 NEXT.json --seed 8   # the month after

BUILT_DATA_DIR is left as it is: copied to COPY_DIR (replaced), its local graph target renamed to the copy's (as
bench_incremental.py --same-target: the copy's load diffs as an in-place re-run would). Then, each a `chatmem`
process as a user runs it, CPU (user+system of the process and the children it reaped) and wall from wait4:

1. open staging.db and archive.db read-write once (`staging.ledger.open_staging`, a process of its own: a schema
   migration, if the code has a new one, happens here);
2. `chatmem run EXPORT --to cluster` (a new run R);
3. `chatmem run --run-id R --only cues`;
4. `chatmem run --run-id R --from load`.

Then per memory table the rows stored (every run's together) before and after, the files' sizes, and a digest of
run R's memory (content, cues, tags, edges, merges, in key order, whatever the layout: per-run copies or shared
rows) and of the graph target's manifest (key, row hash): equal digests from two code versions = the same memory
and the same graph rows. `--make-export` writes the re-export (load/bench_load.py's `reexport`: every
conversation again, N new messages, half continuing old conversations, half in new ones).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TABLES = {
    "memory_content": "content_id",
    "memory_cues": "cue_id",
    "memory_tags": "tag_id",
    "memory_edges": "src, dst",
    "memory_merges": "merged_id, original_id",
}


def chatmem(data_dir: Path, *args: str) -> dict[str, Any]:
    command = [str(Path(sys.executable).parent / "chatmem"), "--data-dir", str(data_dir), "-q", *args]
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = child.stdout.read() if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    return {
        "args": " ".join(args),
        "rc": os.waitstatus_to_exitcode(status),
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "out": out,
    }


def open_once(data_dir: Path) -> dict[str, Any]:
    """Step 1: the data dir opened once, in a process of its own (the migrations of the code that runs it)."""
    code = (
        "import sys; from pathlib import Path; from staging.archive import open_archive;"
        " from staging.ledger import open_staging; d = Path(sys.argv[1]);"
        " open_staging(d / 'staging.db').close(); open_archive(d / 'archive.db').close()"
    )
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", code, str(data_dir)])
    _, status, usage = os.wait4(child.pid, 0)
    return {
        "args": "open staging.db and archive.db (migrations)",
        "rc": os.waitstatus_to_exitcode(status),
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
    }


def stored(staging: Path) -> dict[str, int]:
    with sqlite3.connect(staging) as conn:
        found = {t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in TABLES}
        for table in ("memory_runs", "load_manifest", "topic_links", "runs", "stage_runs"):
            found[table] = int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    return found


def digest(staging: Path, run_id: str) -> dict[str, str]:
    """sha256 of run `run_id`'s memory per table (no run columns) and of the load manifest."""
    found: dict[str, str] = {}
    with sqlite3.connect(staging) as conn:
        shared = any(r[1] == "retired_run_id" for r in conn.execute("PRAGMA table_info(memory_content)"))
        live = "run_id <= ? AND (retired_run_id IS NULL OR retired_run_id > ?)" if shared else "run_id = ? AND ? = ?"
        params = (run_id, run_id) if shared else (run_id, 1, 1)
        for table, key in TABLES.items():
            columns = [
                r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[1] not in ("run_id", "retired_run_id")
            ]
            h = hashlib.sha256()
            for row in conn.execute(f"SELECT {', '.join(columns)} FROM {table} WHERE {live} ORDER BY {key}", params):
                h.update(repr(tuple(row)).encode())
            found[table] = h.hexdigest()[:16]
        h = hashlib.sha256()
        layers: dict[str, Any] = {}
        for row in conn.execute("SELECT layer, key, row_hash FROM load_manifest ORDER BY layer, key"):
            h.update(repr(tuple(row)).encode())
            layers.setdefault(str(row[0]), hashlib.sha256()).update(repr(tuple(row)).encode())
        found["load_manifest"] = h.hexdigest()[:16]
        for layer, digest in sorted(layers.items()):  # which graph layers differ, when the whole manifest does
            found[f"load_manifest {layer}"] = digest.hexdigest()[:16]
    return found


def rebase_target(built: Path, work: Path) -> None:
    """The copy's local graph is the target the original's load state names (key: the graph dir's path)."""
    old, new = f"local:{(built / 'graph').resolve()}#", f"local:{(work / 'graph').resolve()}#"
    with sqlite3.connect(work / "staging.db") as conn:
        for table in ("load_targets", "load_manifest", "load_batches"):
            conn.execute(
                f"UPDATE {table} SET target = ? || substr(target, ?) WHERE target LIKE ?",
                (new, len(old) + 1, old + "%"),
            )
    for name in ("load-memory.json", "load-archive.json", "load-staging.json"):
        path = work / name
        if path.exists():
            path.write_text(path.read_text().replace(old, new))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("built", type=Path, nargs="?")
    parser.add_argument("export", type=Path, nargs="?")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--make-export", nargs=3, metavar=("BASE", "NEW_MESSAGES", "OUT"))
    # The new messages' ids come from this seed: a re-export made from an earlier one needs another seed, or its
    # "new" messages are the earlier one's again (ingested already: nothing new, and their conversations clash).
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.make_export:
        from bench_load import reexport

        base, n, out = args.make_export
        continued, added = reexport(Path(base), Path(out), int(n), args.seed)
        print(f"{out}: {n} new messages, {continued} conversations continued, {added} new")
        return
    if args.work.exists():
        shutil.rmtree(args.work)
    shutil.copytree(args.built, args.work, symlinks=True)
    (args.work / "chatmem.lock").unlink(missing_ok=True)
    rebase_target(args.built, args.work)
    staging = args.work / "staging.db"
    steps = [open_once(args.work)]
    before = stored(staging)
    size_before = staging.stat().st_size
    steps.append(chatmem(args.work, "run", str(args.export), "--to", "cluster", "--json"))
    run_id = json.loads(steps[-1]["out"])["run_id"]
    steps.append(chatmem(args.work, "run", "--run-id", run_id, "--only", "cues", "--json"))
    steps.append(chatmem(args.work, "run", "--run-id", run_id, "--from", "load", "--json"))
    with sqlite3.connect(staging) as conn:
        durations = {
            str(s): (str(st), round(float(d or 0), 1))
            for s, st, d in conn.execute("SELECT stage, status, duration_s FROM stage_runs WHERE run_id = ?", (run_id,))
        }
        cues = json.loads(
            conn.execute("SELECT counts FROM stage_runs WHERE run_id = ? AND stage = 'cues'", (run_id,)).fetchone()[0]
        )
    result = {
        "run_id": run_id,
        "steps": [{k: v for k, v in s.items() if k != "out"} for s in steps],
        "stages": durations,
        "cues_counts": cues,
        "stored_before": before,
        "stored_after": stored(staging),
        "staging_bytes": [size_before, staging.stat().st_size],
        "digest": digest(staging, run_id),
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
