"""One stage of a run, in this process, through the runner's bookkeeping with no skip rule; and a digest of what
the middle stages hold after a run (issue 23: old code vs new on the same inputs). Not a test.

    python benchmarks/bench_stage_now.py run DATA_DIR RUN_ID STAGE [--json OUT] [--profile OUT.prof] [--export F]
    python benchmarks/bench_stage_now.py digest DATA_DIR RUN_ID

`run`: CPU (getrusage of this process) and wall around `flows.stage_runner.run_stage_now` only: no process
start-up, no Prefect, the stage's own work. Old code: put a `git archive` of it first on PYTHONPATH.
`--export F` (repeatable): the files an ingest reads; a RUN_ID the ledger lacks is opened first. CPU of child
processes (ingest's parse workers) is reported apart.
`digest`: per table, rows and sha256 (run id replaced by R): the concept store, facts, garden changes,
extractions, segments, embeddings, and the run's topic links, map points, topics and cluster_runs row (read
through the views or the per-run tables, whichever the schema has), and the previous cluster run's links.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import resource
import sqlite3
import time
from pathlib import Path
from typing import Any

TABLES = (
    *("concepts", "concept_evidence", "concept_relations", "concept_transitions", "concept_inputs"),
    *("facts", "fact_mentions", "garden_changes", "extractions", "segments", "embedding_items"),
)


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(
    data_dir: Path, run_id: str, stage: str, out: Path | None, profile: Path | None, exports: list[Path] | None = None
) -> dict[str, Any]:
    from contracts.settings import Settings
    from flows.stage_runner import run_stage_now
    from staging.archive import open_archive
    from staging.ledger import open_run, open_staging

    settings = Settings(data_dir=data_dir)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    exports = exports or []
    if staging.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
        paths = [str(p) for p in exports]
        open_run(staging, stages=[stage], exports=paths, settings={}, code_version="bench", run_id=run_id)
    profiler = cProfile.Profile() if profile else None
    started, used, used_children = time.perf_counter(), cpu(), children_cpu()
    if profiler:
        profiler.enable()
    result = run_stage_now(stage, archive, staging, run_id=run_id, settings=settings, exports=exports)
    if profiler:
        profiler.disable()
        profiler.dump_stats(str(profile))
    found = {
        "stage": stage,
        "status": result.status,
        "stage_cpu_s": round(cpu() - used, 2),
        "stage_wall_s": round(time.perf_counter() - started, 2),
        "children_cpu_s": round(children_cpu() - used_children, 2),
        "rows_in": result.rows_in,
        "rows_out": result.rows_out,
        "counts": result.counts,
        "notes": result.notes,
    }
    if stage == "cluster":
        row = staging.execute("SELECT seconds FROM cluster_runs WHERE run_id = ?", (run_id,)).fetchone()
        found["cluster_seconds"] = json.loads(row[0]) if row and row[0] else None
    if out:
        out.write_text(json.dumps(found, indent=1))
    return found


def digest(data_dir: Path, run_id: str) -> dict[str, Any]:
    conn = sqlite3.connect(f"file:{data_dir / 'staging.db'}?mode=ro", uri=True)

    def sha(sql: str, params: tuple[Any, ...] = ()) -> str:
        h, n = hashlib.sha256(), 0
        for row in conn.execute(sql, params):
            h.update(repr(tuple(row)).replace(run_id, "R").encode())
            n += 1
        return f"{n}:{h.hexdigest()[:16]}"

    found: dict[str, Any] = {}
    for table in TABLES:
        try:
            columns = ", ".join(str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})"))
            found[table] = sha(f"SELECT {columns} FROM {table} ORDER BY {columns}")
        except sqlite3.Error as exc:
            found[table] = str(exc)
    links = "SELECT kind, item_id, topic, topic_uid, weight, source FROM topic_links WHERE run_id = ? ORDER BY 1, 2"
    found["topic_links"] = sha(links, (run_id,))
    found["cluster_points"] = sha(
        "SELECT segment_id, x, y, topic FROM cluster_points WHERE run_id = ? ORDER BY segment_id", (run_id,)
    )
    found["topics"] = sha(
        "SELECT topic, topic_uid, label, size, keywords, representatives FROM topics WHERE run_id = ? ORDER BY topic",
        (run_id,),
    )
    found["cluster_runs"] = sha(
        "SELECT status, model, study_name, points, topics, outlier_share, outlier_share_raw, validity, params"
        " FROM cluster_runs WHERE run_id = ?",
        (run_id,),
    )
    previous = conn.execute("SELECT MAX(run_id) FROM cluster_runs WHERE run_id < ?", (run_id,)).fetchone()[0]
    if previous:
        found["topic_links_previous_run"] = sha(links, (previous,))
    for table in ("topic_links", "topic_link_rows", "cluster_points", "cluster_point_rows"):
        try:
            found[f"rows_{table}"] = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        except sqlite3.Error:
            pass
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("run", "digest"))
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("run_id")
    parser.add_argument("stage", nargs="?")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--export", type=Path, action="append", help="a file the ingest stage reads (repeatable)")
    args = parser.parse_args()
    if args.command == "run":
        found = run(args.data_dir, args.run_id, args.stage, args.json, args.profile, args.export)
        print(json.dumps(found, indent=1))
    else:
        print(json.dumps(digest(args.data_dir, args.run_id), indent=1))


if __name__ == "__main__":
    main()
