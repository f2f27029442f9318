"""A service's next full export repeats most conversations byte for byte: ingest counts those without parsing
them (ingest/raw_skip.py, the `raw_digests` table of staging/archive_digests.py), and the archive ends exactly as
a run that parses every conversation leaves it.

Real stage (ingest, through the stage runner), real SQLite; the ChatGPT parser's per-conversation function is
wrapped to count what was parsed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from stage_support import ingest_stage

from contracts.settings import Settings
from ingest import chatgpt
from ingest.sources import sha256_file
from staging.archive import open_archive
from staging.ledger import open_run, open_staging
from tests.test_ingest_stage import make_chatgpt_export


def ingest(data_dir: Path, export: Path, run_id: str, *, force: bool = False) -> dict[str, Any]:
    settings = Settings(data_dir=data_dir)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        open_run(staging, stages=["ingest"], exports=[str(export)], settings={}, code_version="test", run_id=run_id)
        result = ingest_stage.run(archive, staging, run_id=run_id, settings=settings, exports=[export], force=force)
        assert result.status == "succeeded", result
        return result.counts
    finally:
        archive.close()
        staging.close()


def archive_state(data_dir: Path) -> dict[str, list[tuple[object, ...]]]:
    """What a reader of the archive sees: conversations, messages, quarantine (not sources or digests)."""
    conn = sqlite3.connect(data_dir / "archive.db")
    try:
        return {
            "conversations": [
                tuple(r)
                for r in conn.execute(
                    "SELECT id, title, created_at, updated_at, current_node, row_hash, message_count"
                    " FROM conversations ORDER BY id"
                )
            ],
            "messages": [
                tuple(r)
                for r in conn.execute(
                    "SELECT uuid, conversation_id, parent_id, role, text, seq, is_active FROM messages ORDER BY uuid"
                )
            ],
            "quarantine": [tuple(r) for r in conn.execute("SELECT locator, reason FROM quarantine ORDER BY 1, 2")],
        }
    finally:
        conn.close()


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the conversations the ChatGPT parser reads, in order."""
    seen: list[str] = []
    real = chatgpt.parse_conversation

    def counting(record: object, index: int) -> Any:
        seen.append(record.get("id") if isinstance(record, dict) else "?")
        return real(record, index)

    monkeypatch.setattr(chatgpt, "parse_conversation", counting)
    return seen


def added_turn(conversation: dict[str, Any], text: str) -> dict[str, Any]:
    """The conversation continued by one user turn (a continued conversation in the next export)."""
    leaf = conversation["current_node"]
    new = f"{leaf}-next"
    node = json.loads(json.dumps(conversation["mapping"][leaf]))
    node.update(id=new, parent=leaf, children=[])
    node["message"].update(id=new, content={"content_type": "text", "parts": [text]})
    node["message"]["author"]["role"] = "user"
    conversation["mapping"][leaf]["children"].append(new)
    conversation["mapping"][new] = node
    conversation["current_node"] = new
    conversation["update_time"] += 10
    return conversation


def write(path: Path, conversations: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(conversations), encoding="utf-8")
    return path


def test_the_next_export_parses_only_what_changed_and_the_archive_is_as_a_full_parse(
    tmp_path: Path, parsed: list[str]
) -> None:
    conversations = make_chatgpt_export(6, turns=4)
    first = write(tmp_path / "day1.json", conversations)
    counts = ingest(tmp_path / "data", first, "r1")
    assert counts["conversations_known_by_bytes"] == 0 and len(parsed) == 6

    conversations[2] = added_turn(conversations[2], "and one more question")
    conversations.append(make_chatgpt_export(1, prefix="new")[0])
    second = write(tmp_path / "day2.json", conversations)
    before = tmp_path / "before"
    shutil.copytree(tmp_path / "data", before)
    parsed.clear()
    counts = ingest(tmp_path / "data", second, "r2")
    assert sorted(parsed) == ["c2", "new0"]  # the five others are known by their bytes
    assert counts["conversations_known_by_bytes"] == 5
    assert counts["messages_read"] == 6 * 4 + 1 + 4
    assert (counts["messages_inserted"], counts["messages_unchanged"]) == (5, 24)

    parsed.clear()
    full = ingest(before, second, "r2", force=True)  # the same run, every conversation parsed
    assert len(parsed) == 7 and full["conversations_known_by_bytes"] == 0
    assert {k: v for k, v in full.items() if k != "conversations_known_by_bytes"} == {
        k: v for k, v in counts.items() if k != "conversations_known_by_bytes"
    }
    assert archive_state(tmp_path / "data") == archive_state(before)

    parsed.clear()
    third = write(tmp_path / "day3.json", conversations[::-1])  # the continued and the new one are known now
    counts = ingest(tmp_path / "data", third, "r3")
    assert parsed == [] and counts["conversations_known_by_bytes"] == 7 and counts["messages_unchanged"] == 29


def test_a_conversation_changed_in_the_archive_is_parsed_again_and_restored(tmp_path: Path, parsed: list[str]) -> None:
    conversations = make_chatgpt_export(3, turns=2)
    ingest(tmp_path / "data", write(tmp_path / "a.json", conversations), "r1")
    clean = archive_state(tmp_path / "data")
    conn = sqlite3.connect(tmp_path / "data" / "archive.db")
    with conn:
        conn.execute("UPDATE messages SET role = 'system' WHERE uuid = 'c1-m1'")  # the digest goes with it
    conn.close()
    parsed.clear()
    counts = ingest(tmp_path / "data", write(tmp_path / "b.json", conversations[::-1]), "r2")  # other file bytes
    assert parsed == ["c1"] and counts["conversations_known_by_bytes"] == 2 and counts["messages_updated"] == 1
    assert archive_state(tmp_path / "data") == clean


def test_a_conversation_twice_in_one_dump_ends_as_a_full_parse_leaves_it(tmp_path: Path, parsed: list[str]) -> None:
    """The newer copy first, then the bytes the archive knows: the known bytes must not be skipped, since the
    first copy changed what the archive holds for that conversation."""
    conversations = make_chatgpt_export(3, turns=2)
    ingest(tmp_path / "data", write(tmp_path / "a.json", conversations), "r1")
    shutil.copytree(tmp_path / "data", tmp_path / "other")
    old = json.loads(json.dumps(conversations[0]))
    newer = added_turn(json.loads(json.dumps(conversations[0])), "a later turn")
    both = write(tmp_path / "b.json", [newer, old, conversations[1], conversations[2]])
    parsed.clear()
    counts = ingest(tmp_path / "data", both, "r2")
    assert parsed == ["c0", "c0"] and counts["conversations_known_by_bytes"] == 2
    ingest(tmp_path / "other", both, "r2", force=True)
    assert archive_state(tmp_path / "data") == archive_state(tmp_path / "other")


def test_an_archive_without_raw_digests_records_them_on_its_next_read(tmp_path: Path, parsed: list[str]) -> None:
    """An archive from before `raw_digests` (migration 6) parses the next dump whole once, then knows it."""
    conversations = make_chatgpt_export(4, turns=2)
    ingest(tmp_path / "data", write(tmp_path / "a.json", conversations), "r1")
    conn = sqlite3.connect(tmp_path / "data" / "archive.db")
    with conn:
        conn.execute("DELETE FROM raw_digests")
    conn.close()
    counts = ingest(tmp_path / "data", write(tmp_path / "b.json", conversations[::-1]), "r2")
    assert counts["conversations_known_by_bytes"] == 0 and counts["messages_unchanged"] == 8
    parsed.clear()
    counts = ingest(tmp_path / "data", write(tmp_path / "c.json", conversations[1:] + conversations[:1]), "r3")
    assert parsed == [] and counts["conversations_known_by_bytes"] == 4 and counts["messages_unchanged"] == 8


def test_a_dump_is_hashed_once_per_process_until_its_bytes_change(tmp_path: Path) -> None:
    """A watch run hashes each dump to find the new ones, then ingests them: the second hash is remembered, and
    a file rewritten in place (same size, its modification time put back) is hashed again."""
    dump = write(tmp_path / "dump.json", make_chatgpt_export(2))
    first = sha256_file(dump)
    assert sha256_file(dump) == first == hashlib.sha256(dump.read_bytes()).hexdigest()
    before = dump.stat()
    dump.write_bytes(dump.read_bytes().replace(b"turn 0", b"TURN 0"))
    os.utime(dump, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert dump.stat().st_size == before.st_size
    assert sha256_file(dump) == hashlib.sha256(dump.read_bytes()).hexdigest() != first


def test_a_conversation_with_a_quarantined_node_is_parsed_again_so_each_dump_keeps_its_quarantine_rows(
    tmp_path: Path, parsed: list[str]
) -> None:
    """Quarantine rows belong to the dump that held the bad record: a full parse writes them again for every
    dump, so the conversation whose parse quarantines a node is never known by its bytes."""
    conversations = make_chatgpt_export(3, turns=2)
    conversations[1]["mapping"]["c1-m1"]["message"]["author"] = "not an object"  # this node only is quarantined
    ingest(tmp_path / "data", write(tmp_path / "a.json", conversations), "r1")
    shutil.copytree(tmp_path / "data", tmp_path / "other")
    parsed.clear()
    again = write(tmp_path / "b.json", conversations[::-1])
    counts = ingest(tmp_path / "data", again, "r2")
    assert parsed == ["c1"] and counts["conversations_known_by_bytes"] == 2 and counts["quarantined"] == 1
    ingest(tmp_path / "other", again, "r2", force=True)

    def per_source(data_dir: Path) -> list[tuple[object, ...]]:
        conn = sqlite3.connect(data_dir / "archive.db")
        try:
            sql = "SELECT s.path, q.locator, q.reason FROM quarantine q JOIN sources s ON s.id = q.source_id"
            return conn.execute(sql + " ORDER BY 1, 2").fetchall()
        finally:
            conn.close()

    assert per_source(tmp_path / "data") == per_source(tmp_path / "other") and len(per_source(tmp_path / "data")) == 2
    assert archive_state(tmp_path / "data") == archive_state(tmp_path / "other")


def test_a_dropped_timestamp_is_counted_on_every_read_as_a_full_parse_counts_it(
    tmp_path: Path, parsed: list[str]
) -> None:
    conversations = make_chatgpt_export(3, turns=2)
    conversations[2]["mapping"]["c2-m0"]["message"]["create_time"] = "n/a"  # dropped, stored as null
    ingest(tmp_path / "data", write(tmp_path / "a.json", conversations), "r1")
    parsed.clear()
    counts = ingest(tmp_path / "data", write(tmp_path / "b.json", conversations[::-1]), "r2")
    assert parsed == ["c2"] and counts["timestamps_dropped"] == 1 and counts["conversations_known_by_bytes"] == 2


def test_an_earlier_copy_is_not_recorded_for_the_rows_a_later_copy_left(tmp_path: Path, parsed: list[str]) -> None:
    """One dump holds the conversation twice, the later copy (with a quarantined node, so unrecorded) wins: the
    earlier copy's bytes must not be known as the rows the later copy left, or the next dump that holds only the
    earlier bytes would skip them where a full parse writes them."""
    conversations = make_chatgpt_export(2, turns=2)
    earlier = json.loads(json.dumps(conversations[0]))
    later = added_turn(json.loads(json.dumps(conversations[0])), "a later turn")
    later["mapping"]["c0-m0"]["message"]["author"] = "not an object"
    ingest(tmp_path / "data", write(tmp_path / "a.json", [earlier, later, conversations[1]]), "r1")
    shutil.copytree(tmp_path / "data", tmp_path / "other")
    parsed.clear()
    only_earlier = write(tmp_path / "b.json", [conversations[1], earlier])
    ingest(tmp_path / "data", only_earlier, "r2")
    assert parsed == ["c0"]
    ingest(tmp_path / "other", only_earlier, "r2", force=True)
    assert archive_state(tmp_path / "data") == archive_state(tmp_path / "other")
