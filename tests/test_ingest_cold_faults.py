"""Ingest faults a cold try found (session 33): invalid UTF-8 in an export's first record, the counts of a file read
twice for its bad bytes, a file whose every message id was taken, one conversation object given as an export, and a
JSONL line of unknown shape. Real files under tmp_path, the real stage and SQLite."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from test_ingest_stage import dump_tables, ingest, make_chatgpt_export

# The counts of a file that say nothing of how it was read (the notes name the replaced bytes)
_COUNTS = (
    "files",
    "files_failed",
    "files_partial",
    "conversations_written",
    "messages_read",
    "conversations_known_by_bytes",
    "messages_inserted",
    "messages_updated",
    "messages_unchanged",
    "messages_retired",
    "quarantined",
    "timestamps_dropped",
)
BAD = b"\xff\xfe"
REPLACED = "\ufffd\ufffd".encode()


def _with_bad_bytes(export: list[dict[str, Any]], marker: str) -> bytes:
    """The export's JSON with invalid UTF-8 bytes in place of `marker` (once)."""
    text = json.dumps(export, ensure_ascii=False).encode("utf-8")
    assert marker.encode() in text
    return text.replace(marker.encode(), BAD, 1)


def _counts(result: Any) -> dict[str, int]:
    return {name: result.counts[name] for name in _COUNTS}


def _rows(archive: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    tables = dump_tables(archive)
    del tables["sources"]  # the two files' bytes differ, so do their sha256 and size
    return tables


def test_invalid_utf8_in_the_first_records_title_is_replaced_as_in_a_later_record(tmp_path: Path) -> None:
    """Bad bytes before the first record's format keys (its title) no longer fail detection: the file arrives whole,
    the bytes as U+FFFD, with the note, as when they are in a later record."""
    export = make_chatgpt_export(4)
    export[0]["title"] = "TITLE0"
    path = tmp_path / "conversations.json"
    path.write_bytes(_with_bad_bytes(export, "TITLE0"))
    archive, result = ingest(tmp_path / "data", path)
    assert result.counts["files_failed"] == 0
    assert result.counts["conversations_written"] == 4
    title = archive.execute("SELECT title FROM conversations WHERE id = 'c0'").fetchone()[0]
    assert title == "\ufffd\ufffd"
    assert any("2 invalid UTF-8 byte sequence(s) replaced with U+FFFD" in note for note in result.notes)


def test_invalid_utf8_first_in_a_single_claude_conversation_or_a_jsonl_line_is_replaced(tmp_path: Path) -> None:
    """The same for an export that is one object (a Claude conversation whose summary comes before its keys) and for
    a JSONL file whose one line has its text before its keys."""
    claude = {
        "summary": "SUMMARY",
        "uuid": "k1",
        "name": "a trip",
        "chat_messages": [{"uuid": "k1-m1", "sender": "human", "text": "hello"}],
    }
    one = tmp_path / "claude.json"
    one.write_bytes(json.dumps(claude).encode().replace(b"SUMMARY", BAD))
    jsonl = tmp_path / "chat.jsonl"
    line = {"text": "TEXT", "conversation_id": "j1", "id": "m1", "role": "user"}
    jsonl.write_bytes(json.dumps(line).encode().replace(b"TEXT", BAD) + b"\n")
    archive, result = ingest(tmp_path / "data", one, jsonl)
    assert result.counts["files_failed"] == 0
    assert result.counts["conversations_written"] == 2
    text = archive.execute("SELECT text FROM messages WHERE conversation_id = 'j1'").fetchone()[0]
    assert text == "\ufffd\ufffd"


def test_a_file_read_again_for_invalid_utf8_counts_as_one_read(tmp_path: Path) -> None:
    """Bad bytes in a later record: the conversations, messages, quarantine rows and dropped timestamps before them
    (written by the first pass) count once, not zero or twice: the counts and rows are those of the same file with the
    bytes already replaced."""
    export = make_chatgpt_export(6)
    export[0]["mapping"]["c0-m1"]["message"]["author"] = "nobody"  # a quarantined node before the bad bytes
    export[1]["mapping"]["c1-m0"]["message"]["create_time"] = "not a date"  # a dropped timestamp
    export[4]["mapping"]["c4-m2"]["message"]["content"]["parts"] = ["MARK"]
    bad = tmp_path / "bad" / "conversations.json"
    bad.parent.mkdir()
    bad.write_bytes(_with_bad_bytes(export, "MARK"))
    clean = tmp_path / "clean" / "conversations.json"
    clean.parent.mkdir()
    clean.write_bytes(bad.read_bytes().replace(BAD, REPLACED))

    for batch_size in (1, 2000):  # the first pass wrote several batches, or none before the bad record's
        archive, result = ingest(tmp_path / f"bad{batch_size}", bad, batch_size=batch_size)
        clean_archive, clean_result = ingest(tmp_path / f"clean{batch_size}", clean, batch_size=batch_size)
        assert _counts(result) == _counts(clean_result)
        assert result.counts["conversations_written"] == 6
        assert result.counts["quarantined"] == 1
        assert result.counts["timestamps_dropped"] == 1
        assert _rows(archive) == _rows(clean_archive)


def test_a_jsonl_file_read_again_for_invalid_utf8_counts_its_bad_lines_once(tmp_path: Path) -> None:
    """A JSONL line quarantined before the line with bad bytes is counted once (the first pass wrote its row)."""
    lines = [
        json.dumps({"conversation_id": "j1", "role": "user"}).encode(),  # quarantined: no id, no text
        json.dumps({"conversation_id": "j1", "id": "m1", "role": "user", "text": "hi"}).encode(),
        json.dumps({"conversation_id": "j1", "id": "m2", "role": "assistant", "text": "MARK"}).encode(),
    ]
    bad = tmp_path / "bad" / "chat.jsonl"
    bad.parent.mkdir()
    bad.write_bytes(b"\n".join(lines).replace(b"MARK", BAD) + b"\n")
    clean = tmp_path / "clean" / "chat.jsonl"
    clean.parent.mkdir()
    clean.write_bytes(bad.read_bytes().replace(BAD, REPLACED))
    archive, result = ingest(tmp_path / "bad-data", bad)
    clean_archive, clean_result = ingest(tmp_path / "clean-data", clean)
    assert _counts(result) == _counts(clean_result)
    assert result.counts["quarantined"] == 1
    assert _rows(archive) == _rows(clean_archive)
