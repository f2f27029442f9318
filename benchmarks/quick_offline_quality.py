"""Fast dev loop for the offline extractor: run it over the segments of a data dir (ingest + segment done) and
score each labelled conversation's concepts (evidence = spans, summed per title key), without the later stages.

    python benchmarks/quick_offline_quality.py --data-dir DIR [--only-labelled] [--show 10]

The full measure is benchmarks/bench_graph_quality.py over a data dir built by `chatmem run`; this one skips the
concept store (no entity resolution across segments), so its figures are a close approximation for iteration.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extract.offline import OfflineExtractor
from extract.stage_extract import _inputs
from extract.text import fold
from staging import segments as segment_store
from staging.db import connect_readonly
from staging.graph_quality import Concept, Labels, score_conversation


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--labels", type=Path, default=Path(__file__).parent / "labels" / "dev_labels.json")
    parser.add_argument("--show", type=int, default=10)
    parser.add_argument("--all", action="store_true", help="every conversation, not only the labelled ones")
    args = parser.parse_args()
    labels = Labels.load(args.labels)
    archive, staging = connect_readonly(args.data_dir / "archive.db"), connect_readonly(args.data_dir / "staging.db")
    segs = [
        s for s in segment_store.iter_current_segments(staging) if args.all or s.conversation_id in labels.conversations
    ]
    inputs = _inputs(archive, segs)
    extractor = OfflineExtractor()
    started = time.process_time()
    per_conversation: dict[str, dict[str, Concept]] = {}
    archive_counts: Counter[str] = Counter()
    titles: dict[str, str] = {}
    for segment in inputs:
        output = extractor.extract(segment)
        bucket = per_conversation.setdefault(segment.conversation_id, {})
        for h in output.hypotheses:
            key = fold(h.title)
            found = bucket.setdefault(key, Concept(h.title, list(h.aliases), 0))
            found.evidence += len(h.evidence_spans)
            archive_counts[key] += len(h.evidence_spans)
            titles.setdefault(key, h.title)
    seconds = time.process_time() - started
    scores = [
        score_conversation(c, list(per_conversation.get(c, {}).values()), labels)
        for c in sorted(labels.conversations)
        if c in {s.conversation_id for s in inputs}
    ]
    precisions = [s.precision for s in scores if s.precision is not None]
    print(f"{len(inputs)} segments in {seconds:.1f} CPU-s; conversations {len(scores)}")
    print(
        f"precision@5 {sum(precisions) / max(1, len(precisions)):.3f} (of {len(precisions)} with concepts);"
        f" recall {sum(s.recall for s in scores) / max(1, len(scores)):.3f}"
    )
    top = [titles[k] for k, _ in archive_counts.most_common(30)]
    print("top30:", ", ".join(top))
    print("generic in top30:", [t for t in top if labels.is_generic(t)])
    for s in sorted(scores, key=lambda s: ((s.precision or 0) + s.recall, s.conversation_id))[: args.show]:
        print(
            f"- {s.conversation_id[:10]} p={s.precision} r={s.recall:.2f} top={s.top} wrong={s.wrong} missed={s.missed}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
