"""The naive ingest chatmem is compared with: load the whole export, walk every mapping, INSERT row by row.

This is the script most people would write first, kept honest: one `json.load`, one INSERT per conversation
and per message through the standard sqlite3 module, one commit at the end (committing per conversation would
only make it slower). It does less than chatmem (no validation, no active path or seq, no content hash, no
quarantine, no idempotent upsert), so the chatmem/baseline ratio understates the difference in work done.

Example:
    python benchmarks/naive_baseline.py benchmarks/out/export-1000000-seed7.json /tmp/naive.db
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE conversations (id TEXT PRIMARY KEY, title TEXT, created_at REAL, updated_at REAL,
                            current_node TEXT);
CREATE TABLE messages (uuid TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, parent_id TEXT,
                       role TEXT NOT NULL, author TEXT, content_type TEXT, text TEXT, created_at REAL);
"""


def load(path: Path) -> Any:
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive, archive.open("conversations.json") as member:
            return json.load(member)
    with path.open("rb") as handle:
        return json.load(handle)


def text_of(content: dict[str, Any]) -> str:
    parts = content.get("parts")
    if isinstance(parts, list):
        return "\n".join(p for p in parts if isinstance(p, str))
    value = content.get("text") or content.get("result") or ""
    return value if isinstance(value, str) else ""


def ingest(export: Path, db_path: Path) -> tuple[int, float]:
    """Returns the number of messages written and the seconds spent in json.load."""
    began = time.perf_counter()
    conversations = load(export)
    load_seconds = time.perf_counter() - began
    conn = sqlite3.connect(db_path)
    conn.executescript(SCHEMA)
    written = 0
    for conv in conversations:
        conv_id = conv.get("conversation_id") or conv["id"]
        conn.execute(
            "INSERT INTO conversations VALUES (?, ?, ?, ?, ?)",
            (
                conv_id,
                conv.get("title"),
                conv.get("create_time"),
                conv.get("update_time"),
                conv.get("current_node"),
            ),
        )
        for node_id, node in conv["mapping"].items():
            message = node.get("message")
            if message is None:
                continue
            conn.execute(
                "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    node_id,
                    conv_id,
                    node.get("parent"),
                    message["author"]["role"],
                    message["author"].get("name"),
                    message["content"].get("content_type"),
                    text_of(message["content"]),
                    message.get("create_time"),
                ),
            )
            written += 1
    conn.commit()
    conn.close()
    return written, load_seconds


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    messages, load_seconds = ingest(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"{messages} messages; json.load took {load_seconds:.1f} s")
