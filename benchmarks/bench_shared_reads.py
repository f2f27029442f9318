"""The whole-store reads the middle stages repeat every run (issue 23), timed alone on a read-only data dir, each
with a sha256 of what it returns: old code vs new on the same files. Not a test.

    python benchmarks/bench_shared_reads.py DATA_DIR [--repeat N] [--only NAME ...]

Reads: `load_concepts` (the concepts, garden, embed_concepts, cluster and cues stages), `concept_loop` (the
concepts stage's ConceptLoop.__init__: the store and the resolver's name indexes), `plan_garden` (the garden
stage's plan, the part before its writes), `live_concepts` (embed_concepts), `name_index` (extract),
`active_paths` (segment: every conversation's visible messages) and `current_segments` (extract). CPU is
time.process_time around each call; nothing is written (the files are opened read-only, immutable). Old code: put a
`git archive` of it first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def sha(value: object) -> str:
    return hashlib.sha256(repr(value).encode("utf-8", "backslashreplace")).hexdigest()[:16]


def resolver_state(loop: Any) -> object:
    """Everything the resolver decides from, in a canonical order (sets sorted)."""
    resolver = loop.resolver
    entries = {
        k: (e.concept_id, e.type, sorted(e.names.items()), sorted(e.keys)) for k, e in sorted(resolver._entries.items())
    }
    keys = {
        k: sorted(repr(tuple(sorted(p) if isinstance(p, frozenset) else p for p in key)) for key in v)
        for k, v in sorted(resolver._index_keys.items())
    }
    index = sorted(
        (repr(tuple(sorted(p) if isinstance(p, frozenset) else p for p in k)), sorted(v))
        for k, v in resolver._index.items()
    )
    return (sorted(resolver.exact.items()), entries, index, keys, sorted(resolver._typos._words), loop.concepts)


def reads(data_dir: Path) -> dict[str, Callable[[], object]]:
    from contracts.settings import Settings
    from extract.concept_loop import ConceptLoop
    from extract.resolve import SIMILARITIES
    from garden.stage import plan_garden
    from staging import concepts as concept_store
    from staging import segments as segment_store

    settings = Settings(data_dir=data_dir)
    archive, staging = connect(settings.archive_path), connect(settings.staging_path)

    def concept_loop() -> object:
        similarity = SIMILARITIES[settings.concepts.similarity]
        return resolver_state(ConceptLoop(staging, "R", settings.concepts, similarity))

    def garden() -> object:
        plan = plan_garden(archive, staging, settings, run_id="R", now="2030-01-01T00:00:00+00:00")
        return (plan.fact_rows, plan.concepts, plan.fact_changes, sorted(plan.counts.items()))

    def live_concepts() -> object:
        from cluster.stage_embed_concepts import live_concepts

        return live_concepts(staging)

    return {
        "load_concepts": lambda: concept_store.load_concepts(staging),
        "concept_loop": concept_loop,
        "plan_garden": garden,
        "live_concepts": live_concepts,
        "name_index": lambda: concept_store.name_index(staging),
        "active_paths": lambda: list(segment_store.iter_active_paths(archive)),
        "current_segments": lambda: list(segment_store.iter_current_segments(staging)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    found: dict[str, Any] = {}
    for name, read in reads(args.data_dir).items():
        if args.only and name not in args.only:
            continue
        seconds, digest = [], ""
        for _ in range(args.repeat):
            used = time.process_time()
            value = read()
            seconds.append(round(time.process_time() - used, 2))
            digest = sha(value)
        found[name] = {"cpu_s": seconds, "sha256": digest}
        print(json.dumps({name: found[name]}), flush=True)


if __name__ == "__main__":
    main()
