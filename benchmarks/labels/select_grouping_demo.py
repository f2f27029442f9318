"""Select the 160 demo conversations for the blind `topic_grouping_demo` reference grouping.

Reproducible, standard library only. Reads `demo/longmemeval-demo.zip` -> `conversations.json`, counts each
conversation's "text messages" along the `current_node` -> root path (the rule in README.md, "Selection rule"),
keeps those with >= 4, drops every id already labelled in `dev_labels.json` or `heldout_labels.json` (only
their keys are read), sorts the rest and samples 160 with `random.Random(51)`.

Run from the repository root: `python benchmarks/labels/select_grouping_demo.py` prints one id per line.
"""

import json
import random
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LABELS = ROOT / "benchmarks" / "labels"
DEMO_ZIP = ROOT / "demo" / "longmemeval-demo.zip"
SEED = 51
N_PICK = 160
MIN_TEXT_MESSAGES = 4


def path_to_root(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """Messages on the current_node -> root path, oldest first (the branch the user last saw)."""
    mapping = conv["mapping"]
    node_id = conv.get("current_node")
    out = []
    while node_id is not None:
        node = mapping[node_id]
        if node.get("message"):
            out.append(node["message"])
        node_id = node.get("parent")
    return list(reversed(out))


def is_text_message(msg: dict[str, Any]) -> bool:
    """README.md's "text message": user/assistant prose addressed to all, visible in the conversation."""
    if msg.get("author", {}).get("role") not in ("user", "assistant"):
        return False
    content = msg.get("content") or {}
    if content.get("content_type") not in ("text", "multimodal_text"):
        return False
    if not any(isinstance(p, str) and p.strip() for p in content.get("parts") or []):
        return False
    if msg.get("recipient", "all") != "all":
        return False
    return not (msg.get("metadata") or {}).get("is_visually_hidden_from_conversation")


def conv_id(conv: dict[str, Any]) -> str:
    return str(conv.get("conversation_id") or conv["id"])


def load_demo() -> list[dict[str, Any]]:
    with zipfile.ZipFile(DEMO_ZIP) as zf:
        convs: list[dict[str, Any]] = json.loads(zf.read("conversations.json"))
    return convs


def labelled_ids() -> set[str]:
    ids: set[str] = set()
    for name in ("dev_labels.json", "heldout_labels.json"):
        ids.update(json.loads((LABELS / name).read_text())["conversations"].keys())
    return ids


def select() -> list[str]:
    convs = load_demo()
    taken = labelled_ids()
    eligible = sorted(
        conv_id(c)
        for c in convs
        if sum(is_text_message(m) for m in path_to_root(c)) >= MIN_TEXT_MESSAGES and conv_id(c) not in taken
    )
    return random.Random(SEED).sample(eligible, N_PICK)


if __name__ == "__main__":
    for cid in select():
        print(cid)
