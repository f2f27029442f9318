"""What full-text search (staging/fts.py) costs the ingest stage, and what a search costs.

Four ingests of the same generated ChatGPT export (benchmarks/gen_chatgpt_export.py), each in its own
subprocess and a fresh data dir, interleaved A B C D A B C D ... so that load on a shared machine hits each alike:

- A `with-fts`: the stage as shipped (each write batch indexes its new messages with one INSERT ... SELECT;
  triggers re-index changed text);
- B `no-fts`: the same stage with no indexing at all (batch indexing off, triggers dropped): the baseline;
- C `row-trigger`: no batch indexing, an AFTER INSERT trigger per message instead (the first design);
- D `bulk-rebuild`: no indexing while ingesting, then one FTS5 'rebuild' at the end.

It reports median seconds per variant, the ratios to the baseline, archive sizes, and the median time of a few
searches (words of various frequencies, a phrase, a prefix) on the finished index.

Example:
    python benchmarks/bench_fts.py                     # 200,000 messages, 3 rounds, appends to RESULTS.md
    python benchmarks/bench_fts.py --messages 20000 --rounds 1 --no-results   # smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
VARIANTS = ("with-fts", "no-fts", "row-trigger", "bulk-rebuild")
TRIGGERS = ("messages_fts_update", "messages_fts_delete")
QUERIES = ("the", "python", "error AND file", '"machine learning"', "optim*")


def child(variant: str, export: Path, data_dir: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from contracts.settings import Settings
    from flows.stage_runner import run_stage_now
    from staging import fts
    from staging.archive import open_archive
    from staging.ledger import open_run, open_staging

    settings = Settings(data_dir=data_dir)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    if variant != "with-fts":
        fts.index_new = lambda conn, after: None  # the writer's batch indexing, off
        for trigger in TRIGGERS:
            archive.execute(f"DROP TRIGGER {trigger}")
    if variant == "row-trigger":
        archive.execute(
            "CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN"
            " INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text); END"
        )
    run_id = open_run(staging, stages=["ingest"], exports=[str(export)], settings={}, code_version="bench")
    start = time.perf_counter()
    result = run_stage_now("ingest", archive, staging, run_id=run_id, settings=settings, exports=[export])
    ingest_s = time.perf_counter() - start
    rebuild_s = 0.0
    if variant == "bulk-rebuild":
        start = time.perf_counter()
        archive.execute("BEGIN IMMEDIATE")
        fts.rebuild(archive)
        archive.execute("COMMIT")
        rebuild_s = time.perf_counter() - start
    searches: dict[str, float] = {}
    hits: dict[str, int] = {}
    if variant != "no-fts":
        for query in QUERIES:
            times = []
            for _ in range(5):
                start = time.perf_counter()
                found = fts.search_messages(archive, query, limit=20)
                times.append(time.perf_counter() - start)
            searches[query] = statistics.median(times)
            hits[query] = archive.execute(
                "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?", (query,)
            ).fetchone()[0]
            assert len(found) <= 20
    archive.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    archive.close()
    staging.close()
    return {
        "messages": result.counts["messages_read"],
        "ingest_s": ingest_s,
        "rebuild_s": rebuild_s,
        "total_s": ingest_s + rebuild_s,
        "db_bytes": settings.archive_path.stat().st_size,
        "search_s": searches,
        "hits": hits,
    }


def measure(variant: str, export: Path, data_dir: Path) -> dict[str, Any]:
    shutil.rmtree(data_dir, ignore_errors=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", variant, str(export), str(data_dir)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{done.stderr}")
    line = next(x for x in done.stdout.splitlines() if x.startswith("BENCH "))
    return dict(json.loads(line[6:]))


def export_for(messages: int, seed: int) -> Path:
    sys.path.insert(0, str(HERE))
    from gen_chatgpt_export import generate

    path = OUT / f"export-{messages}-seed{seed}.json"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        generate(partial, messages, seed)
        partial.rename(path)
    return path


def report(args: argparse.Namespace, runs: dict[str, list[dict[str, Any]]], load: tuple[float, ...]) -> str:
    median = {v: statistics.median(r["total_s"] for r in runs[v]) for v in VARIANTS}
    base = median["no-fts"]
    messages = runs["with-fts"][0]["messages"]
    lines = [
        f"# Full-text search: cost to ingest ({messages:,} messages), and search latency",
        "",
        "Written by `benchmarks/bench_fts.py`: the ingest stage on one generated ChatGPT export, each variant in its"
        f" own process and data dir, {args.rounds} interleaved round(s), medians. Baseline: the same stage with"
        " no indexing. row-trigger: one FTS5 insert per message from an AFTER INSERT trigger (the first design).",
        "",
        "| variant | ingest s | FTS rebuild s | total s | msg/s | vs no-fts | archive MiB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for variant in VARIANTS:
        rows = runs[variant]
        ingest = statistics.median(r["ingest_s"] for r in rows)
        rebuild = statistics.median(r["rebuild_s"] for r in rows)
        size = statistics.median(r["db_bytes"] for r in rows) / 2**20
        lines.append(
            f"| {variant} | {ingest:.1f} | {rebuild:.1f} | {median[variant]:.1f} | {messages / median[variant]:,.0f}"
            f" | {median[variant] / base:.2f}x | {size:,.0f} |"
        )
    searched = runs["with-fts"][0]
    lines += ["", "Search (median of 5, top 20 by rank, snippet included), on the with-fts archive:", ""]
    lines += ["| query | matching messages | ms |", "|---|---:|---:|"]
    lines += [f"| `{q}` | {searched['hits'][q]:,} | {searched['search_s'][q] * 1000:.1f} |" for q in QUERIES]
    lines += [
        "",
        f"Machine: {platform.processor() or 'unknown'}, {os.cpu_count()} cores, python {platform.python_version()},"
        f" sqlite {sqlite3.sqlite_version}, load average at start {' '.join(f'{x:.2f}' for x in load)},"
        f" {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        "",
        f"Command: `python benchmarks/bench_fts.py --messages {args.messages} --rounds {args.rounds}`",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        figures = child(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
        print("BENCH " + json.dumps(figures))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=200_000, help="messages in the generated export")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the three variants")
    parser.add_argument("--no-results", action="store_true", help="print only; do not append to RESULTS.md")
    args = parser.parse_args()
    export = export_for(args.messages, args.seed)
    load = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    for round_no in range(args.rounds):
        for variant in VARIANTS:
            runs[variant].append(measure(variant, export, OUT / f"fts-{variant}"))
            print(f"round {round_no + 1} {variant}: {runs[variant][-1]['total_s']:.1f} s", flush=True)
    text = report(args, runs, load)
    print(text)
    if not args.no_results:
        with (HERE / "RESULTS.md").open("a", encoding="utf-8") as handle:
            handle.write("\n" + text)
    for variant in VARIANTS:
        shutil.rmtree(OUT / f"fts-{variant}", ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
