"""Two data dirs built from the same exports (before and after a keyword or label change): whether every segment's
topic and every conversation's dominant topic are the same (a label rule must move none), and a markdown table of
every topic's label and first keywords, before and after (changed labels marked *).

    python benchmarks/topic_label_diff.py BEFORE_DATA_DIR AFTER_DATA_DIR [--keywords 5]

Reads each data dir's latest cluster run (staging.db, read only)."""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any


def _built(data_dir: Path) -> dict[str, Any]:
    db = sqlite3.connect(f"file:{data_dir / 'staging.db'}?mode=ro", uri=True)
    run = db.execute("SELECT run_id FROM cluster_runs ORDER BY run_id DESC LIMIT 1").fetchone()[0]
    query = "SELECT item_id, topic FROM topic_links WHERE run_id = ? AND kind = 'segment'"
    links = sorted(db.execute(query, (run,)).fetchall())
    conversation = dict(db.execute("SELECT segment_id, conversation_id FROM current_segments").fetchall())
    counts: dict[str, Counter[int]] = defaultdict(Counter)
    for segment, topic in links:
        counts[conversation[segment]][topic] += 1
    dominant = {c: min(n.items(), key=lambda kv: (-kv[1], kv[0]))[0] for c, n in counts.items()}
    query = "SELECT topic, label, keywords FROM topics WHERE run_id = ? ORDER BY topic"
    topics = [(t, label, json.loads(words)) for t, label, words in db.execute(query, (run,))]
    return {"links": links, "dominant": dominant, "topics": topics, "conversations": Counter(dominant.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--keywords", type=int, default=5)
    args = parser.parse_args()
    before, after = _built(args.before), _built(args.after)
    print(f"segments' topics identical: {before['links'] == after['links']} ({len(before['links'])} links); ", end="")
    same = before["dominant"] == after["dominant"]
    print(f"conversations' dominant topics identical: {same} ({len(before['dominant'])} conversations)")
    print("\n| topic | conversations | label before | keywords before | label after | keywords after |")
    print("|---:|---:|---|---|---|---|")
    n = args.keywords
    for (topic, old, old_words), (_, new, new_words) in zip(before["topics"], after["topics"], strict=True):
        mark = " *" if old != new else ""
        row = [str(topic), str(before["conversations"][topic]), old, ", ".join(old_words[:n])]
        print("| " + " | ".join([*row, new + mark, ", ".join(new_words[:n])]) + " |")


if __name__ == "__main__":
    main()
