"""Fast dev loop for the offline fact rules: run them (extract/facts.py, then the fact mapper) over the segments of
a data dir (ingest + segment done) and score the labelled conversations' facts, without the later stages.

    python benchmarks/quick_fact_quality.py --data-dir DIR [--dump facts.tsv] [--show 20]

Prints fact recall (the labelled facts found) and fact precision (the facts found in labelled conversations that
match a labelled fact), as benchmarks/bench_graph_quality.py does over a built data dir, and the misses and the
unmatched facts. The garden stage does not run here (a fact it closes still counts), so the figures are a close
approximation for iteration. --dump writes every fact of every conversation (attribute, value, the sentence) as
tab-separated lines, for checking by hand the facts no label covers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extract.fact_mapper import map_raw_facts
from extract.facts import propose_facts
from extract.stage_extract import _inputs
from staging import segments as segment_store
from staging.db import connect_readonly
from staging.graph_quality import Labels, fact_found, fact_precision


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--labels", type=Path, default=Path(__file__).parent / "labels" / "dev_labels.json")
    parser.add_argument("--dump", type=Path, help="write every fact found (all conversations) as TSV")
    parser.add_argument("--show", type=int, default=20)
    args = parser.parse_args()
    labels = Labels.load(args.labels)
    archive, staging = connect_readonly(args.data_dir / "archive.db"), connect_readonly(args.data_dir / "staging.db")
    inputs = _inputs(archive, list(segment_store.iter_current_segments(staging)))
    found: dict[str, list[tuple[str, str]]] = {}
    rows: list[str] = []
    for segment in inputs:
        facts, _ = map_raw_facts(propose_facts(segment), segment)
        for fact in facts:
            found.setdefault(segment.conversation_id, []).append((fact.attribute, fact.value))
            sentence = " ".join(fact.evidence.text.split())
            rows.append(
                f"{segment.conversation_id}\t{fact.subject}\t{fact.attribute}\t{fact.value}\t{fact.polarity}\t{sentence}"
            )
    present = {s.conversation_id for s in inputs}
    wanted = [(c, f) for c in sorted(labels.conversations) if c in present for f in labels.conversations[c]["facts"]]
    hits = [(c, f) for c, f in wanted if fact_found(f, found.get(c, []))]
    precision, total, unmatched = fact_precision(found, labels, present)
    print(f"{len(inputs)} segments; facts found {sum(map(len, found.values()))} ({total} in labelled conversations)")
    print(f"fact recall {len(hits) / max(1, len(wanted)):.3f} ({len(hits)} of {len(wanted)})")
    print(f"fact precision {'n/a' if precision is None else f'{precision:.3f}'} ({total - len(unmatched)} of {total})")
    for c, f in wanted:
        if (c, f) not in hits:
            print(f"- missed {c[:10]} {f['attribute']}: {f['value']}")
    for row in unmatched[: args.show]:
        print(f"- unmatched {row['conversation_id'][:10]} {row['attribute']}: {row['value']}")
    if args.dump:
        args.dump.write_text("\n".join(sorted(rows)) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
