"""Re-derive the conversation ids of the `topic_grouping_spark` reference grouping (stdlib only).

Usage: python benchmarks/labels/select_grouping_spark.py [SHARED_DATA_DIR]
SHARED_DATA_DIR defaults to /work/shared/data. Prints one id per line, sorted.
Eligible: spark-first conversations with >= 2 "text messages" (rule in README.md, "Selection rule"), minus every
id already in dev_labels.json or heldout_labels.json (so the grouping adds conversations no label set holds).
If more than 200 remain, random.Random(50).sample(sorted_ids, 200); else all of them.
"""

import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/data"
SOURCE = "exports/chatgpt/spark-first/conversations.json"
SEED, CAP, MIN_TEXT = 50, 200, 2


def path_messages(conv):
    """Messages on the current_node -> root path, root first."""
    mapping = conv.get("mapping") or {}
    out, node = [], conv.get("current_node")
    while node:
        entry = mapping.get(node) or {}
        if entry.get("message"):
            out.append(entry["message"])
        node = entry.get("parent")
    return out[::-1]


def is_text_message(msg):
    if (msg.get("author") or {}).get("role") not in ("user", "assistant"):
        return False
    content = msg.get("content") or {}
    if content.get("content_type") not in ("text", "multimodal_text"):
        return False
    if not any(isinstance(p, str) and p.strip() for p in content.get("parts") or []):
        return False
    if msg.get("recipient", "all") != "all":
        return False
    return not (msg.get("metadata") or {}).get("is_visually_hidden_from_conversation")


def labelled_ids():
    ids = set()
    for name in ("dev_labels.json", "heldout_labels.json"):
        with open(os.path.join(HERE, name), encoding="utf-8") as f:
            ids |= set(json.load(f)["conversations"])
    return ids


def select():
    with open(os.path.join(DATA, SOURCE), encoding="utf-8") as f:
        convs = json.load(f)
    taken = labelled_ids()
    eligible = sorted(
        c.get("conversation_id") or c["id"]
        for c in convs
        if sum(map(is_text_message, path_messages(c))) >= MIN_TEXT
        and (c.get("conversation_id") or c["id"]) not in taken
    )
    chosen = random.Random(SEED).sample(eligible, CAP) if len(eligible) > CAP else eligible
    return len(convs), len(eligible), sorted(chosen)


if __name__ == "__main__":
    total, n_eligible, chosen = select()
    print(f"# {SOURCE}: {total} conversations, {n_eligible} eligible, {len(chosen)} chosen", file=sys.stderr)
    print("\n".join(chosen))
