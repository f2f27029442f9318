"""The runner's bookkeeping per pipeline run, before and after the one stage contract (issue 19).

Before (commit a75df1a) every stage computed an input digest of its own when it ran, which the runner then
overwrote, and the runner computed each stage's input fingerprint twice (before it, to decide, and after it, to
stamp). After, the runner computes one fingerprint per stage (ingest's archive part again when it finishes) and
no stage computes any. This script times both on a data dir that holds a full run (read only: work on a copy):

    python benchmarks/bench_runner_overhead.py DATA_DIR [--repeat 3]

The "before" digests are the old code's, inlined here (they are gone from the packages); the cues stage still
reads the live evidence for its graph, so only the JSON dump and hash of it count as thrown away.

The archive's part of a fingerprint (staging.segments.archive_fingerprint) was one SELECT of COUNT(*) and
MAX(rowid), which walks every message row; it is now two statements (a count of index cells and one leaf). The
table shows the runner's fingerprint both ways: "before" and "after (one fingerprint)" with the old archive
part, as a75df1a and the one stage contract had it, and "after, archive part fixed" with today's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clients.embedders import embedder_key  # noqa: E402
from contracts.settings import Settings  # noqa: E402
from extract.segment import SegmentParams  # noqa: E402
from flows import fingerprint as fingerprints  # noqa: E402
from flows.fingerprint import input_fingerprint  # noqa: E402
from flows.registry import STAGES  # noqa: E402
from staging import concepts as concept_store  # noqa: E402
from staging import memory_inputs  # noqa: E402
from staging.archive import open_archive  # noqa: E402
from staging.ledger import open_staging  # noqa: E402


def archive_fingerprint(archive: object) -> str:  # staging.segments.archive_fingerprint before this change
    shas = [str(r[0]) for r in archive.execute("SELECT sha256 FROM sources ORDER BY sha256")]  # type: ignore[attr-defined]
    count = archive.execute("SELECT COUNT(*), COALESCE(MAX(rowid), 0) FROM messages").fetchone()  # type: ignore[attr-defined]
    return hashlib.sha256(("\n".join(shas) + f"\n{count[0]}:{count[1]}").encode()).hexdigest()


def current_segments_digest(staging: object) -> str:  # staging.segments.current_segments_fingerprint, a75df1a
    digest = hashlib.sha256()
    for row in staging.execute(  # type: ignore[attr-defined]
        "SELECT segment_id, content_hash FROM segments WHERE retired_run_id IS NULL ORDER BY segment_id"
    ):
        digest.update(f"{row[0]}:{row[1]}\n".encode())
    return digest.hexdigest()


def current_extractions_digest(staging: object) -> str:  # staging.extractions.current_fingerprint, a75df1a
    digest = hashlib.sha256()
    for row in staging.execute(  # type: ignore[attr-defined]
        "SELECT segment_id, cache_key FROM segment_extractions ORDER BY segment_id"
    ):
        digest.update(f"{row[0]}:{row[1]}\n".encode())
    return digest.hexdigest()


def old_stage_digests(settings: Settings, archive: object, staging: object) -> dict[str, Callable[[], object]]:
    """What each stage computed for itself before it started work (a75df1a), thrown away by the runner."""
    evidence = memory_inputs.live_evidence(staging)  # type: ignore[arg-type]  # the cues stage reads it anyway
    concepts = [c for c in concept_store.load_concepts(staging).values() if c.merged_into is None]  # type: ignore[arg-type]

    def concept_texts() -> str:
        texts = sorted(f"{c.concept_id}\0{c.title}: {c.description}" for c in concepts)
        return hashlib.sha256(chr(1).join(texts).encode()).hexdigest()

    def cues() -> str:
        parts = [evidence, memory_inputs.topic_run(staging), settings.memory.model_dump(mode="json")]  # type: ignore[arg-type]
        digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
        return f"{archive_fingerprint(archive)}:{digest}"  # type: ignore[arg-type]

    config = json.dumps(settings.concepts.model_dump(mode="json"), sort_keys=True)
    return {
        "segment": lambda: archive_fingerprint(archive) + repr(SegmentParams(**settings.segment.model_dump())),  # type: ignore[arg-type]
        "embed": lambda: f"{embedder_key(settings.embed)}:{current_segments_digest(staging)}",
        "extract": lambda: current_segments_digest(staging),
        "concepts": lambda: current_extractions_digest(staging) + config,
        "garden": lambda: hashlib.sha256(current_extractions_digest(staging).encode()).hexdigest(),
        "embed_concepts": concept_texts,
        "cluster": lambda: current_segments_digest(staging),
        "cues": cues,
    }


def timed(work: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best CPU seconds and best wall seconds of `repeat` calls."""
    cpu, wall = [], []
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        work()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), min(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    settings = Settings(data_dir=args.data_dir)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    messages = archive.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    rows = []
    totals = [0.0, 0.0, 0.0]
    digests = old_stage_digests(settings, archive, staging)
    today = fingerprints.archive_fingerprint
    for stage in STAGES:
        fingerprints.archive_fingerprint = archive_fingerprint  # the old archive part (one SELECT)
        fingerprint = timed(lambda s=stage: input_fingerprint(s, settings, archive, staging, []), args.repeat)
        fingerprints.archive_fingerprint = today
        fixed = timed(lambda s=stage: input_fingerprint(s, settings, archive, staging, []), args.repeat)
        own = timed(digests[stage.name], args.repeat) if stage.name in digests else (0.0, 0.0)
        before = 2 * fingerprint[0] + own[0]  # the runner's two fingerprints and the stage's own digest
        after = fingerprint[0]  # one fingerprint (ingest: + its archive part again, under a millisecond)
        figures = (before, after, fixed[0])
        totals = [t + f for t, f in zip(totals, figures, strict=True)]
        rows.append(
            f"| {stage.name} | {fingerprint[0] * 1000:.1f} | {own[0] * 1000:.1f} | "
            + " | ".join(f"{f * 1000:.1f}" for f in figures)
            + " |"
        )
    print(f"{messages:,} messages; CPU ms per stage run, best of {args.repeat}\n")
    print(
        "| stage | one fingerprint | its own digest (before) | before: 2 fingerprints + digest | after: one"
        " fingerprint | after, archive part fixed |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    print("| all stages | | | " + " | ".join(f"{t * 1000:.1f}" for t in totals) + " |")


if __name__ == "__main__":
    main()
