"""Score a data dir's concepts, topics and facts against the blind labels (issue 20's measures).

    python benchmarks/bench_graph_quality.py --data-dir DIR [--labels benchmarks/labels/dev_labels.json]
        [--out result.json] [--show 10]

Build the data dir first from the labelled exports (benchmarks/labels/README.md lists them): `bash
benchmarks/build_labelled.sh DIR` does it and scores both label sets, or by hand
`chatmem --data-dir DIR run --to cluster <the exports>`. Prints the measures against their targets
(precision@5 >= 0.80, concept recall >= 0.60, generic share of the top 30 <= 5 %, topic AMI >= 0.60, largest
topic <= 25 % of conversations) and the worst conversations, so a change can be judged by eye as well. The same
report: `chatmem --data-dir DIR eval extraction --labels benchmarks/labels/dev_labels.json`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from staging.graph_quality import Labels, report_lines, score_data_dir


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--labels", type=Path, default=Path(__file__).parent / "labels" / "dev_labels.json")
    parser.add_argument("--out", type=Path, help="write every figure (and per-conversation detail) as JSON")
    parser.add_argument("--show", type=int, default=8, help="how many worst conversations to print")
    args = parser.parse_args()
    result = score_data_dir(args.data_dir, Labels.load(args.labels))
    print(f"data dir {args.data_dir}: " + "\n".join(report_lines(result, args.show)))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
