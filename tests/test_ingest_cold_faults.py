"""Ingest faults a cold try found (session 33): invalid UTF-8 in an export's first record, the counts of a file read
twice for its bad bytes, a file whose every message id was taken, one conversation object given as an export, and a
JSONL line of unknown shape. Real files under tmp_path, the real stage and SQLite."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_ingest_stage import dump_tables, ingest, make_chatgpt_export, write_json

from contracts.errors import StageError
from flows.cli import cli
from staging.archive import archive_stats

ROOT = Path(__file__).resolve().parents[1]

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


def _under_other_ids(export: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The same conversations and messages under other conversation ids (message ids kept)."""
    moved = json.loads(json.dumps(export))
    for conversation in moved:
        conversation["id"] = conversation["conversation_id"] = prefix + conversation["id"]
    return moved


def _empty_conversations(archive: sqlite3.Connection) -> list[str]:
    sql = "SELECT id FROM conversations c WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id)"
    return [row[0] for row in archive.execute(sql)]


def test_a_file_whose_every_message_id_is_taken_writes_nothing_and_says_so(tmp_path: Path) -> None:
    """The same messages under other conversation ids: no conversation of no message is stored, each message is
    quarantined, and the file is no failure (nothing could be read would be wrong: it was read) but a note saying
    nothing new was written."""
    first = write_json(tmp_path / "first.json", make_chatgpt_export(2))
    again = write_json(tmp_path / "again.json", _under_other_ids(make_chatgpt_export(2), "other-"))
    ingest(tmp_path / "data", first)
    archive, result = ingest(tmp_path / "data", again)
    assert _empty_conversations(archive) == []
    assert archive_stats(archive)["conversations"] == 2
    assert result.counts["files_failed"] == 0
    assert result.counts["conversations_written"] == 0
    assert result.counts["quarantined"] == 8
    assert result.counts["messages_inserted"] == 0
    assert [n for n in result.notes if "nothing new written" in n] == [
        f"{again}: nothing new written: all 8 message(s) are already in the archive under other conversation ids"
        " (quarantined, not written again)"
    ]
    status = archive.execute("SELECT status FROM sources WHERE path = ?", (str(again),)).fetchone()[0]
    assert status == "complete"


def test_taken_conversations_beside_new_ones_leave_no_empty_conversation(tmp_path: Path) -> None:
    """In one batch: a taken conversation (twice), a new one after it that shares an id with it, and a new one. The
    new ones arrive whole (the shared id goes to the first new conversation that holds it), the taken one is not
    stored, and the counts say so."""
    first = write_json(tmp_path / "first.json", make_chatgpt_export(1))
    taken = _under_other_ids(make_chatgpt_export(1), "other-")[0]
    sharing = make_chatgpt_export(1, prefix="s")[0]
    node = sharing["mapping"].pop("s0-m3")  # its last message takes the id of the taken conversation's last one
    node["id"] = node["message"]["id"] = "c0-m3"
    sharing["mapping"]["c0-m3"] = node
    sharing["mapping"]["s0-m2"]["children"] = ["c0-m3"]
    sharing["current_node"] = "c0-m3"
    new = make_chatgpt_export(1, prefix="n")[0]
    mixed = write_json(tmp_path / "mixed.json", [taken, sharing, taken, new])
    ingest(tmp_path / "data", first)
    archive, result = ingest(tmp_path / "data", mixed)
    assert _empty_conversations(archive) == []
    counts = dict(archive.execute("SELECT id, message_count FROM conversations").fetchall())
    assert counts == {"c0": 4, "s0": 3, "n0": 4}  # c0-m3 stays c0's
    assert result.counts["conversations_written"] == 2
    assert result.counts["files_failed"] == 0
    # 4 + 4 (the taken conversation's two copies, counted as messages read are) + the shared id
    assert any("9 message(s) already in the archive under other conversation ids" in n for n in result.notes), (
        result.notes
    )
    # read again (--force): the same archive, nothing written
    before = dump_tables(archive)
    archive, again = ingest(tmp_path / "data", mixed, force=True)
    assert dump_tables(archive)["conversations"] == before["conversations"]
    assert dump_tables(archive)["messages"] == before["messages"]
    assert again.counts["conversations_written"] == 0


def _serve_once(watch: Path, data_dir: Path, *more: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`chatmem serve --once` as a user runs it: its own process, every line it writes (logs included)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "flows.cli", "--data-dir", str(data_dir), "serve", "--once", "--watch", str(watch)]
    return subprocess.run([*command, *more], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def test_serve_once_on_a_folder_with_nothing_to_read_creates_nothing_and_says_it_once(tmp_path: Path) -> None:
    """An empty watch folder, and one holding only a file that is no export: one line each, in the words of `chatmem
    run DIR` (the left-out file once: the watch flow logged it again), exit 0, and no data dir: no Prefect state
    was started for nothing to do."""
    empty = tmp_path / "empty"
    empty.mkdir()
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("not an export\n", encoding="utf-8")
    data_dir = tmp_path / "data"
    done = _serve_once(empty, data_dir)
    assert done.returncode == 0, done.stderr
    assert (done.stdout + done.stderr).splitlines() == [
        f"{empty}: no export found in it and 3 levels of subfolders below"
    ]
    done = _serve_once(junk, data_dir)
    assert done.returncode == 0, done.stderr
    said = f"{junk}: no export found in it and 3 levels of subfolders below; left out 1: notes.txt (not an export)"
    assert (done.stdout + done.stderr).splitlines() == [said]
    listed = json.loads(_serve_once(junk, data_dir, "--json").stdout)
    assert listed["left_out"] == [{"path": str(junk / "notes.txt"), "why": "not an export"}]
    assert listed["run_id"] is None and listed["ingested"] == []
    for relative in ("junk", "./junk", "empty/../junk"):  # as typed in the folder above (a traceback once)
        done = _serve_once(Path(relative), data_dir, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert (done.stdout + done.stderr).splitlines() == [said.replace(str(junk), str(Path(relative)))]
    assert not data_dir.exists()


REAL_CHATGPT = ROOT / "tests" / "fixtures" / "exports" / "chatgpt" / "chatgpt2graph" / "conversations.json"


def test_one_chatgpt_conversation_object_is_read_as_an_export_of_that_conversation(tmp_path: Path) -> None:
    """The first conversation of a real ChatGPT export, saved alone as an object (not a list): detected as chatgpt and
    ingested with the same rows as from the list; a node of it that cannot be read is quarantined under the locator
    `conversation` (it was refused whole: "a ChatGPT export is a list of conversations")."""
    conversation = json.loads(REAL_CHATGPT.read_text(encoding="utf-8"))[0]
    alone = write_json(tmp_path / "one.json", conversation)
    listed = write_json(tmp_path / "list.json", [conversation])
    archive, result = ingest(tmp_path / "alone", alone)
    assert result.counts["files_failed"] == 0 and result.counts["conversations_written"] == 1
    assert result.counts["messages_inserted"] > 0
    from_list, _ = ingest(tmp_path / "listed", listed)
    assert _rows(archive) == _rows(from_list)
    node = next(iter(conversation["mapping"]))
    conversation["mapping"][node] = "not a node"
    archive, result = ingest(tmp_path / "bad-node", write_json(tmp_path / "bad-node.json", conversation))
    assert result.counts["conversations_written"] == 1
    [(locator, reason)] = archive.execute("SELECT locator, reason FROM quarantine").fetchall()
    assert (locator, reason) == (f"conversation.mapping[{node}]", "node is a JSON string, not an object")


def test_jsonl_lines_of_unknown_shape_are_refused_naming_the_fields_they_lack(tmp_path: Path) -> None:
    """A .jsonl of messages with no conversation_id: `chatmem run` refuses it naming the field a JSONL line lacks (it
    said only the keys found, "id, role, text", and the formats it could be); one with none of them says so."""
    lines = [{"id": f"m{n}", "role": "user", "text": f"hello {n}"} for n in range(3)]
    no_conversation = tmp_path / "messages.jsonl"
    no_conversation.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    done = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "data"), "run", str(no_conversation)])
    assert done.exit_code == 1, done.output
    assert done.stderr.strip().endswith(
        "; as JSONL, its first line lacks conversation_id (a line needs conversation_id, id, role, text)"
    ), done.stderr
    other = tmp_path / "other.jsonl"
    other.write_text('{"message": "hi", "author": "me"}\n{"message": "ho", "author": "you"}\n', encoding="utf-8")
    done = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "data"), "run", str(other)])
    assert done.stderr.strip().endswith(
        "; as JSONL, its first line has none of the fields a line needs (conversation_id, id, role, text)"
    ), done.stderr


def test_a_jsonl_file_of_no_message_says_why_its_first_bad_line_is_bad(tmp_path: Path) -> None:
    """Every line lacks `id`: the file fails (nothing could be read) and says which field, from its first bad line; a
    line that is no object says what a line needs, in JSON's words (`null`, not Python's `NoneType`)."""
    path = tmp_path / "chat.jsonl"
    lines = [json.dumps({"conversation_id": "j1", "role": "user", "text": f"t{n}"}) for n in range(3)]
    path.write_text("\n".join(["null", *lines]) + "\n", encoding="utf-8")
    with pytest.raises(StageError) as failed:
        ingest(tmp_path / "data", path)
    assert "no line is a JSONL message (4 bad line(s), quarantined; line 1: a JSON null, not an object with" in str(
        failed.value
    )
    good = json.dumps({"conversation_id": "j1", "id": "m1", "role": "user", "text": "hi"})
    path.write_text("\n".join([good, "[1, 2]"]) + "\n", encoding="utf-8")
    archive, _ = ingest(tmp_path / "data2", path)
    [reason] = [row[0] for row in archive.execute("SELECT reason FROM quarantine WHERE locator = 'line 2'")]
    assert reason == "a JSON list, not an object with conversation_id, id, role, text"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(StageError, match=r"quarantined; line 1: missing required field\(s\): id\)"):
        ingest(tmp_path / "data3", path)
