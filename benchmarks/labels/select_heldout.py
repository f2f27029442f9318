"""Re-derive the held-out label set's conversation ids (stdlib only).

Usage: python benchmarks/labels/select_heldout.py [SHARED_DATA_DIR]
SHARED_DATA_DIR defaults to /work/shared/data. The demo zip is read from demo/ beside this repo root.
Eligibility is the "text message" rule of benchmarks/labels/README.md ("Selection rule").
"""

import json
import os
import random
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/data"

SPARK = "exports/chatgpt/spark-first/conversations.json"
RAIN = "exports/chatgpt/rainchinchao/conversations.json"
DEMO = "demo/longmemeval-demo.zip"


def load(source):
    if source == DEMO:
        with zipfile.ZipFile(os.path.join(ROOT, DEMO)) as z:
            return json.loads(z.read("conversations.json"))
    with open(os.path.join(DATA, source), encoding="utf-8") as f:
        return json.load(f)


def conv_id(c):
    return c.get("conversation_id") or c["id"]


def path_messages(c):
    """Messages on the current_node -> root path, in root-to-leaf order."""
    mapping = c.get("mapping") or {}
    out, node = [], c.get("current_node")
    while node:
        n = mapping.get(node) or {}
        if n.get("message"):
            out.append(n["message"])
        node = n.get("parent")
    return out[::-1]


def is_text_message(m):
    role = (m.get("author") or {}).get("role")
    if role not in ("user", "assistant"):
        return False
    content = m.get("content") or {}
    if content.get("content_type") not in ("text", "multimodal_text"):
        return False
    parts = [p for p in content.get("parts") or [] if isinstance(p, str) and p.strip()]
    if not parts:
        return False
    if m.get("recipient", "all") != "all":
        return False
    return not (m.get("metadata") or {}).get("is_visually_hidden_from_conversation")


def text_messages(c):
    return [m for m in path_messages(c) if is_text_message(m)]


def user_texts(c):
    return [
        "\n".join(p for p in m["content"]["parts"] if isinstance(p, str))
        for m in text_messages(c)
        if m["author"]["role"] == "user"
    ]


def dev_ids():
    with open(os.path.join(HERE, "dev_labels.json"), encoding="utf-8") as f:
        return set(json.load(f)["conversations"])


def eligible(source, min_text, exclude):
    ids = [conv_id(c) for c in load(source) if len(text_messages(c)) >= min_text]
    return sorted(i for i in ids if i not in exclude)


def select():
    dev = dev_ids()
    spark = eligible(SPARK, 4, dev)
    demo = eligible(DEMO, 4, dev)
    rain = eligible(RAIN, 2, dev)
    return {
        SPARK: (len(spark), random.Random(40).sample(spark, 28)),
        DEMO: (len(demo), random.Random(42).sample(demo, 12)),
        RAIN: (len(rain), rain[:4]),
    }


if __name__ == "__main__":
    for source, (n, ids) in select().items():
        print(f"{source}: {n} eligible after removing dev ids, {len(ids)} picked")
        for i in ids:
            print("  " + i)
