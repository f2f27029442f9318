"""Whole-process `chatmem recall` against a stored recall index of N content nodes (issue 21: <= 2 s at 1M).
Not a test.

    python benchmarks/bench_recall_scale.py --data-dir D --sizes 250000 1000000 --runs 5 [--write]

D: a copy of a built data dir (the demo). Its stored index is replaced by a generated one of N content nodes
(benchmarks/bench_recall.py's generator: conversations of 20, ~12 Zipf terms per key, 3 cues each, random unit
384-d key vectors, the candidate pre-pass tables), stored under the key of D's latest cues run, so that
`chatmem recall` opens it as its own. No 1M archive is built on this machine (a 1M first build takes about an
hour of both cores); what this measures is what a recall does with a stored index of that size. Per size:

    store             building the generated index, its pre-pass tables, and storing it (s, MB on disk)
    open              a fresh process: memory.index_store reads the stored index (manifest, maps every file)
    first query       in that process, right after the open: the candidate pre-pass, activation and the
                      context (ranked + to_result), every page it touches read from disk for the first time
    whole process     `chatmem --data-dir D recall QUERY`, RUNS times after a warm-up: imports, settings, the
                      query model, the open, D's garden facts, the query and the printing (wall median and max,
                      CPU median: user + system of the process)

The generated content has no text in D's archive: pieces print without text (a text shown is one indexed SELECT
per piece). The terms of the query (t5 t40 t300 t1200) are generated terms of various frequencies.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
QUERY = "t5 t40 t300 t1200 what did I say about them?"
HEADING = "## Recall on stored indexes of 250k and 1M content nodes (issue 21, benchmarks/bench_recall_scale.py)"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

OPEN_AND_QUERY = """
import json, statistics, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from pathlib import Path
from memory import index_store
from memory.answer import Request
from memory.candidates import ranked
from memory.recall import to_result
from memory.recall_settings import light_settings
import numpy as np
t1, c1 = time.perf_counter(), time.process_time()
index = index_store._read(Path(sys.argv[1]), sys.argv[2])
t2, c2 = time.perf_counter(), time.process_time()
settings = light_settings(Path(sys.argv[3]))
rng = np.random.default_rng(3)
times = []
for k in range(6):
    vector = rng.standard_normal(384).astype(np.float32)
    vector /= np.linalg.norm(vector)
    request = Request(query=sys.argv[4] if k == 0 else f"t{5 + k} t{60 + 7 * k} t{400 + k} t{900 + k}")
    a, b = time.perf_counter(), time.process_time()
    view, ranking, _ = ranked(index, request.query, vector, request, settings.recall, limit=1000)
    to_result(view, request, ranking, settings.recall)
    times.append((time.perf_counter() - a, time.process_time() - b))
print(json.dumps({
    "imports_s": [t1 - t0, c1 - c0], "open_s": [t2 - t1, c2 - c1], "first_query_s": times[0],
    "later_query_s": [statistics.median(t for t, _ in times[1:]), statistics.median(c for _, c in times[1:])],
    # VmHWM, not ru_maxrss: Linux carries the parent's high-water mark across fork and exec
    "peak_rss_mib": [int(l.split()[1]) / 1024 for l in open("/proc/self/status") if l.startswith("VmHWM")][0],
}))
"""


def chatmem() -> list[str]:
    script = Path(sys.executable).with_name("chatmem")
    return [str(script)] if script.exists() else [sys.executable, "-m", "flows.cli"]


def drop_caches_of(directory: Path) -> None:
    """Ask the kernel to forget the index's pages (POSIX_FADV_DONTNEED): the first open reads from disk."""
    for path in directory.iterdir():
        with open(path, "rb") as handle:
            os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def store_generated(data_dir: Path, n: int) -> tuple[Path, str, dict[str, float]]:
    from bench_recall import generated_index

    from contracts.settings import Settings
    from memory import index_store
    from memory.candidates import prepare
    from memory.index import key_embedder
    from memory.key_model import for_run
    from staging.db import connect_readonly
    from staging.memory import latest_run

    settings = Settings(data_dir=data_dir)
    staging = connect_readonly(settings.staging_path)
    try:
        run_id = latest_run(staging)
        assert run_id is not None, f"{data_dir} holds no cues run"
        settings = for_run(settings, staging, run_id)
        key = index_store.index_key(staging, settings, key_embedder(settings), run_id)
    finally:
        staging.close()
    root = data_dir / index_store.DIRECTORY
    target = root / f"{run_id}-{key}"
    shutil.rmtree(root, ignore_errors=True)
    started = time.perf_counter()
    index = generated_index(n)
    index.run_id = run_id
    prepare(index)
    built = time.perf_counter() - started
    started = time.perf_counter()
    assert index_store._store(index, root, target, key, reuse="")  # a generated memory: no later run reuses it
    stored = time.perf_counter() - started
    size = sum(p.stat().st_size for p in target.iterdir()) / 1e6
    del index
    return target, key, {"build_s": built, "store_s": stored, "size_mb": size}


def whole_process(data_dir: Path, runs: int) -> dict[str, float]:
    command = [*chatmem(), "--data-dir", str(data_dir), "recall", QUERY, "--budget", "800"]
    walls, cpus = [], []
    for k in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"recall failed ({done.returncode}): {done.stderr[-2000:]}")
        if k:  # the first run warms the page cache and the bytecode cache
            walls.append(wall)
            cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return {"median": statistics.median(walls), "max": max(walls), "cpu": statistics.median(cpus)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data-dir", type=Path, required=True, help="a COPY of a built data dir (its index is replaced)"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[250_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "recall_scale.json")
    parser.add_argument("--reuse", action="store_true", help="measure the index stored by the last run (one size)")
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        load_before = os.getloadavg()[0]
        if args.reuse:
            from memory import index_store

            (target,) = (args.data_dir / index_store.DIRECTORY).iterdir()
            key = json.loads((target / index_store.MANIFEST).read_text())["key"]
            stored = {"size_mb": sum(p.stat().st_size for p in target.iterdir()) / 1e6}
        else:
            target, key, stored = store_generated(args.data_dir, n)
        drop_caches_of(target)
        split = subprocess.run(
            [sys.executable, "-c", OPEN_AND_QUERY, str(target), key, str(args.data_dir), QUERY],
            cwd=ROOT,
            env=ENV,
            capture_output=True,
            text=True,
            check=True,
        )
        measured = json.loads(split.stdout.strip().splitlines()[-1])
        whole = whole_process(args.data_dir, args.runs)
        row = {"content": n, **stored, **measured, "whole": whole, "load": [load_before, os.getloadavg()[0]]}
        print(json.dumps(row), flush=True)
        rows.append(row)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"at": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC", "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
