"""One stage's cost per message on a pipeline-built data dir: wall time, ms per 1k messages, peak RSS.

    python benchmarks/bench_stage_scale.py DATA_DIR STAGE [--reset-concepts] [--empty-memory] [--profile OUT.prof]
    python benchmarks/bench_stage_scale.py DATA_DIR extract|embed --reset-cache --workers N
    python benchmarks/bench_stage_scale.py DATA_DIR index        # the recall index (memory.index.load_index)

Build the data dir once (`chatmem --data-dir D run EXPORT --to cues`), keep a copy, then re-run one stage here
as often as needed, at two sizes, to see whether its cost per message grows with the archive (issue 12: no
stage's cost per message at 1M more than 1.5x its cost at 100k). CPU time is printed beside wall time: on a
shared machine it is the figure to compare. The stage runs in this process, without
Prefect, on the data dir's newest run id. `--reset-concepts` empties the concept store first, so the concepts
stage resolves every hypothesis again (it skips the ones it already handled). `--empty-memory` drops and re-creates
the six memory tables first (staging.memory.SCHEMA; seconds, where DELETE of a 250k run's 4M edge rows takes
minutes), so the cues stage writes into empty tables as a fresh run id does. `--profile` writes cProfile stats.
`--reset-cache` empties extract's or embed's cache first, so the stage computes every segment again;
`--workers N` runs its batches on N local worker processes as `chatmem run` does (runner.local_workers; 1: none,
0: one per core); CPU and peak RSS then include the workers'.

Example:
    python benchmarks/bench_stage_scale.py /work/scale/d100k concepts --reset-concepts
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import os
import resource
import sqlite3
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clients.process_batches import process_batches, worker_count  # noqa: E402
from contracts.settings import Settings  # noqa: E402
from flows.registry import spec  # noqa: E402
from flows.stage_runner import run_stage_now  # noqa: E402
from staging import memory as memory_store  # noqa: E402
from staging.archive import open_archive  # noqa: E402
from staging.db import Transaction  # noqa: E402
from staging.ledger import open_staging  # noqa: E402

CONCEPT_TABLES = ("concepts", "concept_evidence", "concept_relations", "concept_transitions", "concept_inputs")
CACHE_TABLES = {
    "extract": ("extractions", "segment_extractions", "mapper_decisions", "fact_mentions"),
    "embed": ("embeddings", "embedding_items", "embedded_segments"),
}


def empty_memory(staging: sqlite3.Connection) -> None:
    """Every memory run's rows gone, the tables as a fresh staging.db has them (DROP frees pages, no per-row work)."""
    with Transaction(staging):
        for table in memory_store.RUN_TABLES:
            staging.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in memory_store.SCHEMA:
            staging.execute(statement)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("stage", help="a stage name (concepts, garden, embed_concepts, cues, ...) or 'index'")
    parser.add_argument("--reset-concepts", action="store_true", help="empty the concept store first")
    parser.add_argument("--empty-memory", action="store_true", help="drop and re-create the memory tables first")
    parser.add_argument("--profile", type=Path, help="write cProfile stats here")
    parser.add_argument("--reset-cache", action="store_true", help="empty extract's or embed's cache first")
    parser.add_argument("--workers", type=int, default=1, help="local worker processes (0: one per core)")
    args = parser.parse_args()
    settings = Settings(data_dir=args.data_dir)
    settings.runner.local_workers = args.workers
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    if args.reset_concepts:
        for table in CONCEPT_TABLES:
            staging.execute(f"DELETE FROM {table}")
        staging.commit()
    if args.reset_cache:
        for table in CACHE_TABLES[args.stage]:
            staging.execute(f"DELETE FROM {table}")
        staging.commit()
    if args.empty_memory:
        empty_memory(staging)
    run_id = staging.execute("SELECT run_id FROM stage_runs ORDER BY started_at DESC LIMIT 1").fetchone()[0]
    profile = cProfile.Profile() if args.profile else None
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_SELF)
    cpu_start = before.ru_utime + before.ru_stime
    if profile:
        profile.enable()
    if args.stage == "index":
        from memory.index import load_index, run_embedder

        keyed, embedder = run_embedder(settings, staging)
        # as memory/index_store.py builds it: texts read a chunk at a time for the key vectors, not kept
        detail = f"size={load_index(archive, staging, keyed, embedder, keep_texts=False).size}"
    else:
        stage = spec(args.stage)
        with process_batches(worker_count(args.workers) if stage.local_pool else 1) as map_batches:
            extra = {"map_batches": map_batches} if stage.local_pool else {}
            result = run_stage_now(stage.name, archive, staging, run_id=run_id, settings=settings, **extra)
            detail = f"counts={result.counts}"
    if profile:
        profile.disable()
        profile.dump_stats(args.profile)
    wall = time.perf_counter() - start
    messages = archive.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)  # the pool's, once it has shut down
    own = usage.ru_utime + usage.ru_stime - cpu_start
    cpu = own + workers.ru_utime + workers.ru_stime  # on a shared machine CPU time, not wall, is the cost
    digest = ""
    if args.stage in CACHE_TABLES:  # what the stage wrote, to compare runs with different worker counts
        with sqlite3.connect(f"file:{settings.staging_path}?mode=ro", uri=True) as reader:
            digest = f" tables_sha256={_digest(reader, CACHE_TABLES[args.stage])}"
    print(
        f"stage={args.stage} messages={messages} workers={args.workers} wall_s={wall:.1f} cpu_s={cpu:.1f}"
        f" (stage process {own:.1f}) cpu_ms_per_1k={1e6 * cpu / max(messages, 1):.0f}"
        f" peak_rss_mib={usage.ru_maxrss / 1024:.0f} worker_peak_rss_mib={workers.ru_maxrss / 1024:.0f}"
        f" load_avg={' '.join(f'{x:.1f}' for x in os.getloadavg())}{digest} {detail}"
    )


def _digest(staging: sqlite3.Connection, tables: tuple[str, ...]) -> str:
    """sha256 of the tables' rows in key order, every column but run_id (each bench run has its own)."""
    digest = hashlib.sha256()
    for table in tables:
        columns = [c[1] for c in staging.execute(f"PRAGMA table_info({table})") if c[1] != "run_id"]
        keys = [c[1] for c in sorted(staging.execute(f"PRAGMA table_info({table})"), key=lambda c: c[5]) if c[5]]
        order = ", ".join(keys or columns)
        for row in staging.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}"):
            digest.update(repr(row).encode())
    return digest.hexdigest()[:16]


if __name__ == "__main__":
    main()
