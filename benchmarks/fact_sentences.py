"""Score the offline fact rules on single user sentences labelled by hand (benchmarks/labels/fact_sentences.jsonl).

    python benchmarks/fact_sentences.py [--labels FILE] [--show N] [--dump FILE]

Each sentence goes alone through the rules and the fact mapper (as one user message of a one-message segment).
Recall: the labelled facts some proposed fact of that sentence matches (staging.graph_quality.fact_found, the
dev scorer's match: value words, the sentence as the quote); also without the "other" facts, which no rule aims
at. Precision: the proposed facts that match a labelled fact of their sentence. The set was collected with a
broad filter and labelled before the rules were run on it: a measure of how the rules generalise beyond the dev
labels (see benchmarks/labels/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extract.fact_mapper import map_raw_facts
from extract.facts import propose_facts
from extract.types import SegmentInput, SegmentMessage
from staging.graph_quality import fact_found


def facts_of(sentence: str) -> list[tuple[str, str]]:
    message = SegmentMessage(message_id="m", role="user", text=sentence, created_at=None)
    segment = SegmentInput(segment_id="s", conversation_id="c", title=None, messages=(message,), content_hash="h")
    facts, _ = map_raw_facts(propose_facts(segment), segment)
    return [(fact.attribute, fact.value) for fact in facts]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--labels", type=Path, default=Path(__file__).parent / "labels" / "fact_sentences.jsonl")
    parser.add_argument("--show", type=int, default=0, help="list up to N misses and N unmatched facts")
    parser.add_argument("--dump", type=Path, help="write every sentence's proposed facts as JSON lines")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    wanted = found = wanted_core = found_core = proposed = right = 0
    by_attribute: Counter[str] = Counter()
    hit_by_attribute: Counter[str] = Counter()
    misses, unmatched, dump = [], [], []
    for row in rows:
        mine = facts_of(row["sentence"])
        dump.append({"id": row["id"], "facts": mine})
        for label in row["facts"]:
            quoted = dict(label, quote=row["sentence"])
            hit = fact_found(quoted, mine)
            wanted += 1
            found += hit
            by_attribute[label["attribute"]] += 1
            hit_by_attribute[label["attribute"]] += hit
            if label["attribute"] != "other":
                wanted_core += 1
                found_core += hit
            if not hit:
                misses.append(f"{row['id']} {label['attribute']}: {label['value']}  <- {row['sentence'][:120]}")
        for fact in mine:
            proposed += 1
            labels = [dict(label, quote=row["sentence"]) for label in row["facts"]]
            if any(fact_found(label, [fact]) for label in labels):
                right += 1
            else:
                unmatched.append(f"{row['id']} {fact[0]}: {fact[1]}  <- {row['sentence'][:120]}")
    print(f"{len(rows)} sentences, {sum(1 for r in rows if r['facts'])} with facts, {wanted} facts labelled")
    print(f"fact recall {found / wanted:.3f} ({found} of {wanted})")
    print(f"fact recall without 'other' {found_core / wanted_core:.3f} ({found_core} of {wanted_core})")
    print(f"fact precision {right / proposed if proposed else 0:.3f} ({right} of {proposed})")
    print("by attribute: " + ", ".join(f"{a} {hit_by_attribute[a]}/{n}" for a, n in by_attribute.most_common()))
    for title, lines in (("missed", misses), ("unmatched", unmatched)):
        for line in lines[: args.show]:
            print(f"- {title} {line}")
    if args.dump:
        args.dump.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dump), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
