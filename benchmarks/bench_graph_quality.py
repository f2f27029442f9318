"""Score a data dir's concepts, topics and facts against the blind labels (issue 20's measures).

    python benchmarks/bench_graph_quality.py --data-dir DIR [--labels benchmarks/labels/dev_labels.json]
        [--out result.json] [--show 10]

Build the data dir first from the labelled exports (benchmarks/labels/README.md lists them), e.g.
`chatmem --data-dir DIR run --to cluster <the exports>`. Prints the measures against their targets
(precision@5 >= 0.80, concept recall >= 0.60, generic share of the top 30 <= 5 %, topic AMI >= 0.60, largest
topic <= 25 % of conversations) and the worst conversations, so a change can be judged by eye as well.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from staging.graph_quality import Labels, score_data_dir

TARGETS = {
    "precision_at_5": (">=", 0.80),
    "concept_recall": (">=", 0.60),
    "generic_share_top30": ("<=", 0.05),
    "topic_ami": (">=", 0.60),
    "largest_topic_share": ("<=", 0.25),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--labels", type=Path, default=Path(__file__).parent / "labels" / "dev_labels.json")
    parser.add_argument("--out", type=Path, help="write every figure (and per-conversation detail) as JSON")
    parser.add_argument("--show", type=int, default=8, help="how many worst conversations to print")
    args = parser.parse_args()
    labels = Labels.load(args.labels)
    result = score_data_dir(args.data_dir, labels)
    print(
        f"data dir {args.data_dir}: {result['conversations_scored']} of {result['conversations_labelled']}"
        f" labelled conversations present, {result['conversations_without_concepts']} without any concept"
    )
    for name, (op, target) in TARGETS.items():
        value = result[name]
        ok = value is not None and (value >= target if op == ">=" else value <= target)
        shown = "n/a" if value is None else f"{value:.3f}"
        print(f"  {name:22s} {shown:>7s}   target {op} {target:.2f}   {'met' if ok else 'NOT met'}")
    print(f"  precision@5 counting conversations without concepts as 0: {result['precision_at_5_all'] or 0:.3f}")
    print(
        f"  topics {result['topics']}; facts labelled {result['facts_labelled']}, found {result['facts_found']},"
        f" fact recall {result['fact_recall'] if result['fact_recall'] is None else round(result['fact_recall'], 3)}"
    )
    print(f"  archive top 30: {', '.join(result['archive_top30'])}")
    print(f"  generic among them: {', '.join(result['archive_top30_generic']) or '-'}")
    worst = sorted(
        result["per_conversation"], key=lambda s: ((s["precision"] or 0) + s["recall"], s["conversation_id"])
    )
    for row in worst[: args.show]:
        print(
            f"  - {row['conversation_id'][:12]} p={row['precision']} r={row['recall']:.2f} top={row['top']}"
            f" wrong={row['wrong']} missed={row['missed']}"
        )
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
