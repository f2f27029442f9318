"""How close a patched recall index answers to one built from scratch (memory/index_patch.py keeps the earlier
index's k-means lists and coarse projection instead of training them again; memory/vector_segments.py).

    python benchmarks/bench_patched_recall.py DATA_DIR [--queries 100] [--seed 1] [--json OUT.json]

Opens the data dir's stored index as `chatmem recall` does (after a scheduled run it is the patched one), builds
the same run's index from scratch in memory (memory.index.load_index, its pre-pass trained anew), and asks both
the same queries: the first 12 words of user messages drawn from archive.db with the seed. Prints one JSON line:
the share of queries whose ranked content ids are identical, the mean overlap of their top 10 (|A & B| / 10), and
the stored index's segments. Below `recall.prepass_from` content both indexes score every content node and every
answer is identical.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contracts.memory import RecallRequest  # noqa: E402
from contracts.settings import Settings  # noqa: E402
from memory.candidates import prepare  # noqa: E402
from memory.index import load_index  # noqa: E402
from memory.mapped import Rows  # noqa: E402
from memory.service import Memory  # noqa: E402
from staging.db import connect_readonly  # noqa: E402


def queries(settings: Settings, count: int, seed: int) -> list[str]:
    archive = connect_readonly(settings.archive_path)
    try:
        texts = [
            str(r[0])
            for r in archive.execute(
                "SELECT text FROM messages WHERE role = 'user' AND length(text) > 40 ORDER BY uuid"
            )
        ]
    finally:
        archive.close()
    chosen = random.Random(seed).sample(texts, min(count, len(texts)))
    return [" ".join(t.split()[:12]) for t in chosen]


def ranked(memory: Memory, query: str) -> list[str]:
    return [p.content_id for p in memory.recall(RecallRequest(query=query, budget_tokens=800)).pieces]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    settings = Settings(data_dir=args.data_dir)
    stored = Memory.open(settings)
    archive, staging = connect_readonly(settings.archive_path), connect_readonly(settings.staging_path)
    try:
        index = load_index(archive, staging, stored.settings, stored.embedder, run_id=stored.index.run_id)
    finally:
        archive.close()
        staging.close()
    if index.size >= stored.settings.recall.prepass_from:
        prepare(index)
    fresh = Memory(stored.settings, index, stored.embedder)
    asked = queries(settings, args.queries, args.seed)
    same, overlap = 0, 0.0
    for query in asked:
        a, b = ranked(stored, query), ranked(fresh, query)
        same += a == b
        overlap += len(set(a[:10]) & set(b[:10])) / max(1, min(10, len(a), len(b)))
    dense = stored.index.dense
    report = {
        "content": stored.index.size,
        "queries": len(asked),
        "identical": round(same / max(1, len(asked)), 3),
        "top10_overlap": round(overlap / max(1, len(asked)), 3),
        "segments": len(dense.segments) if isinstance(dense, Rows) else 0,
        "segment_rows": [len(s) for s in dense.segments] if isinstance(dense, Rows) else [],
    }
    print(json.dumps(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
