"""Issue 22: generic JSONL ids are unambiguous. (`a:b`, `c`) and (`a`, `b:c`) were both stored as `a:b:c`, and the
second conversation lost its message as "already belongs to another conversation"."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from flows.cli import cli
from ingest.jsonl import scoped_id


def test_conversation_and_message_ids_with_colons_never_share_an_archive_id(tmp_path: Path) -> None:
    """Both messages arrive, each in its own conversation, nothing quarantined; a plain id keeps its old form."""
    lines = [
        {"conversation_id": "a:b", "id": "c", "role": "user", "text": "in conversation a:b"},
        {"conversation_id": "a", "id": "b:c", "role": "user", "text": "in conversation a"},
        {"conversation_id": "trip", "id": "1", "role": "user", "text": "a plain id"},
        {"conversation_id": "50%", "id": "x", "role": "user", "text": "a percent sign"},
        {"conversation_id": "50%25", "id": "x", "role": "user", "text": "an escape look-alike"},
    ]
    export = tmp_path / "ids.jsonl"
    export.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    data_dir = tmp_path / "data"
    result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "run", str(export), "--only", "ingest"])
    assert result.exit_code == 0, result.output
    conn = sqlite3.connect(f"file:{data_dir / 'archive.db'}?mode=ro", uri=True)
    try:
        stored = set(conn.execute("SELECT conversation_id, uuid, text FROM messages"))
        quarantined = conn.execute("SELECT reason FROM quarantine").fetchall()
    finally:
        conn.close()
    assert quarantined == []
    assert stored == {
        ("a:b", "a%3Ab:c", "in conversation a:b"),
        ("a", "a:b:c", "in conversation a"),
        ("trip", "trip:1", "a plain id"),  # unchanged: archives made before keep their ids
        ("50%", "50%25:x", "a percent sign"),
        ("50%25", "50%2525:x", "an escape look-alike"),
    }


def test_the_scoped_id_is_split_by_its_first_colon() -> None:
    """The conversation part never holds a colon, so the id can be read back unambiguously."""
    for conversation, message in [("a:b", "c"), ("a", "b:c"), ("%3A", "x"), (":", ":")]:
        head, _, tail = scoped_id(conversation, message).partition(":")
        assert head.replace("%3A", ":").replace("%25", "%") == conversation and tail == message
