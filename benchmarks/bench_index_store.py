"""Open a built data dir's recall index the way `chatmem recall` and the MCP server do, and time it.

    python benchmarks/bench_index_store.py DATA_DIR [QUERY ...]            stored index (built on the first open)
    python benchmarks/bench_index_store.py DATA_DIR --fresh [QUERY ...]    also build in memory (memory.index.
                                                                           load_index, as before the stored index)
                                                                           and check both recall the same

Prints one JSON line: open wall/CPU seconds, peak RSS, per-query recall ms, and with --fresh whether every
recall (ranked content ids, scores, texts, paths) is identical. Run it under /usr/bin/time -v for the process's
peak RSS including the interpreter.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

from contracts.memory import RecallRequest
from contracts.settings import Settings
from memory.candidates import prepare
from memory.index import load_index
from memory.service import Memory
from staging.db import connect_readonly

QUERIES = ["what recipe did I try for banana bread", "how do I fix my bike chain", "what did I decide about the trip"]


def main(argv: list[str]) -> int:
    data_dir, fresh = Path(argv[0]), "--fresh" in argv
    queries = [a for a in argv[1:] if a != "--fresh"] or QUERIES
    settings = Settings(data_dir=data_dir)
    wall, cpu = time.perf_counter(), time.process_time()
    memory = Memory.open(settings)
    report: dict[str, object] = {
        "content": memory.index.size,
        "open_wall_s": round(time.perf_counter() - wall, 2),
        "open_cpu_s": round(time.process_time() - cpu, 2),
        "open_peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }
    answers, latency = [], []
    for query in queries:
        started = time.perf_counter()
        answers.append(memory.recall(RecallRequest(query=query, budget_tokens=800)).model_dump())
        latency.append(round(1000 * (time.perf_counter() - started), 1))
    report["recall_ms"] = latency
    if fresh:
        archive, staging = connect_readonly(settings.archive_path), connect_readonly(settings.staging_path)
        try:
            index = load_index(archive, staging, settings, memory.embedder)
        finally:
            archive.close()
            staging.close()
        if index.size >= settings.recall.prepass_from:
            prepare(index)
        built = Memory(memory.settings, index, memory.embedder)
        same = [
            built.recall(RecallRequest(query=q, budget_tokens=800)).model_dump() == a
            for q, a in zip(queries, answers, strict=True)
        ]
        report["identical_to_fresh_build"] = same
    report["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps(report))
    return 0 if all(report.get("identical_to_fresh_build", [True])) else 1  # type: ignore[union-attr]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
