"""The selection rule the label sets are drawn by (README.md, "Selection rule"), stdlib only.

Shared by select_heldout.py, select_grouping_spark.py and select_grouping_demo.py, which differ only in their
sources, thresholds, exclusions and seeds: one reading of a "text message" keeps the three selections in step.
Those scripts run as `python benchmarks/labels/SCRIPT.py`, so this module is imported as a sibling (`selection`).
"""

import json
import os
import zipfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_DATA = "/work/shared/data"
DEMO = "demo/longmemeval-demo.zip"  # in this repository, not in the shared data

Conversation = dict[str, Any]


def data_dir(argv: list[str]) -> str:
    """The shared data folder: the script's first argument, else DEFAULT_DATA."""
    return argv[1] if len(argv) > 1 else DEFAULT_DATA


def load(source: str, data: str = DEFAULT_DATA) -> list[Conversation]:
    """The conversations of `source`: DEMO (conversations.json in the zip), or an export path under `data`."""
    if source == DEMO:
        with zipfile.ZipFile(os.path.join(ROOT, DEMO)) as z:
            convs: list[Conversation] = json.loads(z.read("conversations.json"))
            return convs
    with open(os.path.join(data, source), encoding="utf-8") as f:
        convs = json.load(f)
        return convs


def conv_id(c: Conversation) -> str:
    return str(c.get("conversation_id") or c["id"])


def path_messages(c: Conversation) -> list[dict[str, Any]]:
    """Messages on the current_node -> root path, root first (the branch the user last saw)."""
    mapping = c.get("mapping") or {}
    out, node = [], c.get("current_node")
    while node:
        entry = mapping.get(node) or {}
        if entry.get("message"):
            out.append(entry["message"])
        node = entry.get("parent")
    return out[::-1]


def is_text_message(m: dict[str, Any]) -> bool:
    """README.md's "text message": user/assistant prose addressed to all, visible in the conversation."""
    if (m.get("author") or {}).get("role") not in ("user", "assistant"):
        return False
    content = m.get("content") or {}
    if content.get("content_type") not in ("text", "multimodal_text"):
        return False
    if not any(isinstance(p, str) and p.strip() for p in content.get("parts") or []):
        return False
    if m.get("recipient", "all") != "all":
        return False
    return not (m.get("metadata") or {}).get("is_visually_hidden_from_conversation")


def text_messages(c: Conversation) -> list[dict[str, Any]]:
    return [m for m in path_messages(c) if is_text_message(m)]


def labelled_ids(*names: str) -> set[str]:
    """The conversation ids already labelled in these label files beside this module (only their keys are read)."""
    ids: set[str] = set()
    for name in names:
        with open(os.path.join(HERE, name), encoding="utf-8") as f:
            ids.update(json.load(f)["conversations"])
    return ids


def eligible(convs: list[Conversation], min_text: int, exclude: set[str]) -> list[str]:
    """The sorted ids of the conversations with at least `min_text` text messages, less those in `exclude`."""
    return sorted(i for i in (conv_id(c) for c in convs if len(text_messages(c)) >= min_text) if i not in exclude)
