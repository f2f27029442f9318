"""The ingest stage end to end on files: zips, bad files among good ones, re-runs, kills."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from stage_support import ingest_run

from contracts.errors import StageError
from contracts.records import ExportSource
from contracts.settings import IngestSettings, Settings
from ingest.chatgpt import parse as parse_chatgpt
from ingest.sources import sha256_file
from staging.archive import ArchiveWriter, archive_stats, open_archive
from staging.ledger import open_run, open_staging

ROOT = Path(__file__).resolve().parents[1]


def make_chatgpt_export(conversations: int, turns: int = 4, *, prefix: str = "c") -> list[dict[str, Any]]:
    """A small, valid ChatGPT export: a null root, a hidden system message, then alternating turns."""
    out = []
    for c in range(conversations):
        cid = f"{prefix}{c}"
        mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        parent = "root"
        for t in range(turns):
            mid = f"{cid}-m{t}"
            role = "user" if t % 2 == 0 else "assistant"
            mapping[mid] = {
                "id": mid,
                "parent": parent,
                "children": [],
                "message": {
                    "id": mid,
                    "author": {"role": role, "name": None, "metadata": {}},
                    "create_time": 1_700_000_000 + c * 100 + t,
                    "content": {"content_type": "text", "parts": [f'turn {t} of {cid}: hello "world" ✓']},
                    "status": "finished_successfully",
                    "metadata": {},
                    "recipient": "all",
                },
            }
            mapping[parent]["children"].append(mid)
            parent = mid
        out.append(
            {
                "title": f"conversation {c}",
                "create_time": 1_700_000_000 + c * 100,
                "update_time": 1_700_000_000 + c * 100 + turns,
                "mapping": mapping,
                "current_node": parent,
                "conversation_id": cid,
                "id": cid,
            }
        )
    return out


def ingest(
    data_dir: Path, *exports: Path, batch_size: int = 2000, force: bool = False
) -> tuple[sqlite3.Connection, Any]:
    settings = Settings(data_dir=data_dir, ingest=IngestSettings(batch_size=batch_size))
    archive = open_archive(settings.archive_path)
    staging = open_staging(settings.staging_path)
    run_id = open_run(
        staging,
        stages=["ingest"],
        exports=[str(p) for p in exports],
        settings=settings.public_dump(),
        code_version="test",
    )
    return archive, ingest_run(archive, staging, run_id=run_id, settings=settings, exports=list(exports), force=force)


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def dump_tables(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    return {
        "conversations": [tuple(r) for r in conn.execute("SELECT * FROM conversations ORDER BY id")],
        "messages": [tuple(r) for r in conn.execute("SELECT * FROM messages ORDER BY uuid")],
        "quarantine": [tuple(r)[1:] for r in conn.execute("SELECT * FROM quarantine ORDER BY locator, reason")],
        "sources": [tuple(r)[1:6] for r in conn.execute("SELECT * FROM sources ORDER BY sha256")],
    }


def test_same_dump_twice_is_skipped_and_changes_nothing(tmp_path: Path) -> None:
    """Idempotent ingest: the second run skips the file by sha256 and every table is unchanged."""
    export = write_json(tmp_path / "conversations.json", make_chatgpt_export(3))
    archive, first = ingest(tmp_path / "data", export)
    before = dump_tables(archive)
    archive, second = ingest(tmp_path / "data", export)
    assert first.counts["messages_inserted"] == 12
    assert second.status == "skipped" and second.counts["files_skipped"] == 1
    assert dump_tables(archive) == before


def test_a_dump_given_twice_in_one_run_is_recorded_as_ingested(tmp_path: Path) -> None:
    """The same file twice in one run (a path twice; a folder and its conversations.json): its conversations arrive
    once, and the ledger's row says ingested, not the second sight's "skipped, already ingested"."""
    folder = tmp_path / "export"
    folder.mkdir()
    export = write_json(folder / "conversations.json", make_chatgpt_export(2))
    for given in ([export, export], [folder, export]):
        data = tmp_path / f"data-{len(list(tmp_path.iterdir()))}"
        archive, result = ingest(data, *given)
        assert result.counts["messages_inserted"] == 8 and archive_stats(archive)["conversations"] == 2
        with sqlite3.connect(data / "staging.db") as staging:
            rows = staging.execute("SELECT path, status, messages_inserted FROM ingest_files").fetchall()
        assert rows == [(str(export), "ingested", 8)], rows


def test_newer_dump_extends_conversations_incrementally(tmp_path: Path) -> None:
    """A newer dump adds only new messages: old ones are unchanged, the new conversation arrives."""
    old = write_json(tmp_path / "old.json", make_chatgpt_export(2, turns=2))
    newer = make_chatgpt_export(3, turns=4)
    for conversation in newer:
        conversation["update_time"] += 1000
    new = write_json(tmp_path / "new.json", newer)
    ingest(tmp_path / "data", old)
    archive, result = ingest(tmp_path / "data", new)
    assert result.counts["messages_inserted"] == 12 - 4
    assert result.counts["messages_unchanged"] == 4 and result.counts["messages_updated"] == 0
    assert archive_stats(archive)["messages"] == 12


def test_zip_with_side_files_is_read_without_extracting(tmp_path: Path) -> None:
    """A downloaded .zip (any name) is detected by its bytes; side files are noted, not parsed."""
    dump = tmp_path / "export-2024"  # no extension on purpose: detection is by content
    with zipfile.ZipFile(dump, "w", zipfile.ZIP_DEFLATED) as archive_zip:
        archive_zip.writestr("conversations.json", json.dumps(make_chatgpt_export(2)))
        archive_zip.writestr("message_feedback.json", "[]")
    archive, result = ingest(tmp_path / "data", dump)
    assert archive_stats(archive)["messages"] == 8
    assert any("message_feedback.json" in note for note in result.notes)
    assert not (tmp_path / "conversations.json").exists()


@pytest.mark.parametrize(
    ("member", "expected"),
    [
        ("../../evil/conversations.json", "zip-slip"),
        ("/abs/conversations.json", "zip-slip"),
        ("notes.txt", "no conversations.json"),
    ],
)
def test_unsafe_or_useless_zip_is_refused_with_the_file_named(tmp_path: Path, member: str, expected: str) -> None:
    """Zip-slip paths and zips without conversations.json fail the file with a one-line reason."""
    dump = tmp_path / "bad.zip"
    with zipfile.ZipFile(dump, "w") as archive_zip:
        archive_zip.writestr(member, json.dumps(make_chatgpt_export(1)))
    with pytest.raises(StageError) as error:
        ingest(tmp_path / "data", dump)
    assert expected in str(error.value) and str(dump) in str(error.value)
    assert "\n" not in str(error.value)


def test_zip_bomb_is_refused_by_declared_size_and_ratio(tmp_path: Path) -> None:
    """A member that expands far beyond its compressed size is refused before it is read."""
    dump = tmp_path / "bomb.zip"
    with zipfile.ZipFile(dump, "w", zipfile.ZIP_DEFLATED) as archive_zip:
        archive_zip.writestr("conversations.json", b"[" + b" " * (50 * 1024 * 1024) + b"]")
    with pytest.raises(StageError, match="zip bomb"):
        ingest(tmp_path / "data", dump)


def test_bad_file_fails_alone_and_good_files_still_arrive(tmp_path: Path) -> None:
    """One malformed file among good ones: the good ones are ingested and the stage succeeds, so the run goes on
    with them; the bad one is recorded failed with its reason (the CLI then exits 1 naming it)."""
    good = write_json(tmp_path / "good.json", make_chatgpt_export(2))
    bad = tmp_path / "bad.json"
    bad.write_text("[{ this is not json", encoding="utf-8")
    archive, result = ingest(tmp_path / "data", good, bad)
    assert result.status == "succeeded" and result.counts["files_failed"] == 1
    assert any("bad.json" in note for note in result.notes)
    assert archive_stats(archive)["messages"] == 8
    staging = open_staging(tmp_path / "data" / "staging.db")
    rows = {row["path"]: row for row in staging.execute("SELECT path, status, detail FROM ingest_files")}
    assert {path: row["status"] for path, row in rows.items()} == {str(good): "ingested", str(bad): "failed"}
    detail = rows[str(bad)]["detail"]  # the reason, as the parser gave it, on one line with where it is
    assert "invalid JSON" in detail and "line 1, column" in detail and "\n" not in detail


def test_a_stage_whose_every_file_failed_fails_naming_them(tmp_path: Path) -> None:
    """Nothing arrived: the stage fails (nothing to go on with), naming the file and how to re-run."""
    bad = tmp_path / "bad.json"
    bad.write_text("[{ this is not json", encoding="utf-8")
    with pytest.raises(StageError) as error:
        ingest(tmp_path / "data", bad)
    assert "bad.json" in str(error.value) and f"fix or remove {bad}, then: " in str(error.value.rerun_hint)
    staging = open_staging(tmp_path / "data" / "staging.db")
    assert staging.execute("SELECT status FROM stage_runs").fetchone()["status"] == "failed"


def test_removing_one_of_the_failed_files_as_the_hint_says_leaves_the_other_failing(tmp_path: Path) -> None:
    """Every file failed. The one removed (as the hint says: "fix or remove the file") is left out, said so; the
    other, still broken, fails the stage again, naming it alone: nothing arrived, the run has nothing to go on
    with. Both removed, the stage is done with nothing to read."""
    settings = Settings(data_dir=tmp_path / "data")
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    bad, worse = tmp_path / "bad.json", tmp_path / "worse.json"
    bad.write_text("[{ this is not json", encoding="utf-8")
    worse.write_text("not json at all", encoding="utf-8")
    exports = [bad, worse]
    run_id = open_run(staging, stages=["ingest"], exports=list(map(str, exports)), settings={}, code_version="test")
    with pytest.raises(StageError):
        ingest_run(archive, staging, run_id=run_id, settings=settings, exports=exports)
    bad.unlink()
    with pytest.raises(StageError) as again:
        ingest_run(archive, staging, run_id=run_id, settings=settings, exports=exports)
    assert "worse.json" in str(again.value) and "bad.json" not in str(again.value)
    worse.unlink()
    done = ingest_run(archive, staging, run_id=run_id, settings=settings, exports=exports)
    assert done.status == "skipped" and all("removed after it failed" in note for note in done.notes), done.notes


def test_truncated_file_keeps_every_complete_conversation(tmp_path: Path) -> None:
    """A dump cut mid-record keeps the conversations before the cut and quarantines the remainder."""
    text = json.dumps(make_chatgpt_export(5))
    cut = tmp_path / "cut.json"
    cut.write_text(text[: int(len(text) * 0.7)], encoding="utf-8")
    archive, result = ingest(tmp_path / "data", cut)
    stats = archive_stats(archive)
    assert 1 <= stats["conversations"] < 5 and stats["messages"] == stats["conversations"] * 4
    assert result.counts["files_partial"] == 1
    reason = archive.execute("SELECT reason FROM quarantine").fetchone()[0]
    assert reason.startswith("unreadable remainder")


def test_invalid_utf8_bytes_are_replaced_and_every_record_kept(tmp_path: Path) -> None:
    """Non-UTF-8 bytes inside one message do not cost the file: they become U+FFFD and are reported."""
    text = json.dumps(make_chatgpt_export(3), ensure_ascii=False).encode("utf-8")
    broken = text.replace(b"turn 1 of c1", b"turn 1 of c1 \xff\xfe latin-1 \xe9t\xe9", 1)
    path = tmp_path / "conversations.json"
    path.write_bytes(broken)
    archive, result = ingest(tmp_path / "data", path)
    assert archive_stats(archive)["messages"] == 12
    text_row = archive.execute("SELECT text FROM messages WHERE uuid = 'c1-m1'").fetchone()[0]
    assert "\ufffd" in text_row and "latin-1" in text_row
    assert any("U+FFFD" in note for note in result.notes)


def test_duplicate_message_ids_across_dumps(tmp_path: Path) -> None:
    """The same messages in two dumps are stored once; a reused id in another conversation is quarantined."""
    first = write_json(tmp_path / "a.json", make_chatgpt_export(2))
    clash = make_chatgpt_export(1, prefix="x")
    clash[0]["mapping"]["x0-m0"]["message"]["id"] = "c0-m0"  # same message id as in conversation c0
    clash[0]["mapping"]["c0-m0"] = clash[0]["mapping"].pop("x0-m0")
    clash[0]["mapping"]["c0-m0"]["id"] = "c0-m0"
    clash[0]["mapping"]["root"]["children"] = ["c0-m0"]
    clash[0]["mapping"]["x0-m1"]["parent"] = "c0-m0"
    second = write_json(tmp_path / "b.json", [*make_chatgpt_export(2), *clash])
    ingest(tmp_path / "data", first)
    archive, result = ingest(tmp_path / "data", second)
    assert result.counts["messages_unchanged"] == 8
    assert result.counts["quarantined"] == 1
    owner = archive.execute("SELECT conversation_id FROM messages WHERE uuid = 'c0-m0'").fetchone()[0]
    assert owner == "c0"
    assert archive_stats(archive)["messages"] == 8 + 3


KILL_SCRIPT = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from contracts.settings import IngestSettings, Settings
from flows.stage_runner import run_stage_now
from staging.archive import open_archive
from staging.ledger import open_run, open_staging
settings = Settings(data_dir=Path(sys.argv[1]), ingest=IngestSettings(batch_size=50))
archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
run_id = open_run(staging, stages=["ingest"], exports=[sys.argv[2]], settings={{}}, code_version="test")
run_stage_now("ingest", archive, staging, run_id=run_id, settings=settings, exports=[Path(sys.argv[2])])
"""


@pytest.mark.slow
def test_sigkill_mid_ingest_then_rerun_equals_a_clean_run(tmp_path: Path) -> None:
    """A run killed with SIGKILL part-way and re-run ends with the same rows and hashes as a clean run."""
    export = write_json(tmp_path / "big.json", make_chatgpt_export(3000, turns=6))
    script = tmp_path / "ingest_script.py"
    script.write_text(KILL_SCRIPT.format(root=str(ROOT)))
    killed_dir = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, str(script), str(killed_dir), str(export)])
    deadline = time.monotonic() + 60
    killed_mid_run = False
    while time.monotonic() < deadline and proc.poll() is None:
        db = killed_dir / "archive.db"
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=1) as peek:
                    count = peek.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
            except sqlite3.OperationalError:
                count = 0
            if count > 0:
                os.kill(proc.pid, signal.SIGKILL)
                killed_mid_run = True
                break
        time.sleep(0.01)
    proc.wait()
    assert killed_mid_run, "the ingest finished before it could be killed; make the export bigger"
    partial = open_archive(killed_dir / "archive.db")
    assert 0 < archive_stats(partial)["messages"] < 18000
    partial.close()

    subprocess.run([sys.executable, str(script), str(killed_dir), str(export)], check=True)
    subprocess.run([sys.executable, str(script), str(tmp_path / "clean"), str(export)], check=True)
    killed = dump_tables(open_archive(killed_dir / "archive.db"))
    clean = dump_tables(open_archive(tmp_path / "clean" / "archive.db"))
    assert killed == clean
    assert len(clean["messages"]) == 18000
    # the indexes a bulk load defers, and the full-text index, end the same too
    killed_index = schema_and_search(open_archive(killed_dir / "archive.db"))
    assert killed_index == schema_and_search(open_archive(tmp_path / "clean" / "archive.db"))
    assert killed_index["fts_rows"] == 18000


def schema_and_search(conn: sqlite3.Connection) -> dict[str, Any]:
    """What a reader of the archive relies on besides the rows: its indexes and its full-text index."""
    return {
        "indexes": sorted(
            r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND sql NOT NULL")
        ),
        "fts_rows": conn.execute("SELECT COUNT(*) FROM messages_fts_docsize").fetchone()[0],
        "found": sorted(r[0] for r in conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'turn'")),
    }


def test_a_bulk_load_killed_before_its_indexes_are_built_leaves_them_rebuilt_on_the_next_open(tmp_path: Path) -> None:
    """An ingest into an empty archive defers its conversation index; if it dies first, the next open builds it."""
    export = write_json(tmp_path / "conversations.json", make_chatgpt_export(40))
    ingest(tmp_path / "clean", export)
    expected = schema_and_search(open_archive(tmp_path / "clean" / "archive.db"))
    assert "messages_by_conversation" in " ".join(expected["indexes"])

    # The state a SIGKILL leaves between two committed batches: rows and their full-text entries, no index.
    settings = Settings(data_dir=tmp_path / "killed")
    archive = open_archive(settings.archive_path)
    writer = ArchiveWriter(archive)
    writer.begin_bulk()
    source_id = writer.begin_source(
        ExportSource(path=str(export), sha256=sha256_file(export), format="chatgpt", size_bytes=1)
    )
    conversations = list(parse_chatgpt(export.open("rb"), name=str(export)))
    writer.write_batch(source_id, "chatgpt", conversations[:25], [])  # type: ignore[arg-type]
    archive.close()
    raw = sqlite3.connect(settings.archive_path)
    assert "messages_by_conversation" not in " ".join(schema_and_search(raw)["indexes"])
    stored = raw.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    assert stored == 25 * 4 and schema_and_search(raw)["fts_rows"] == stored  # what was committed is searchable
    raw.close()

    reopened = open_archive(settings.archive_path)
    plan = " ".join(str(r[-1]) for r in reopened.execute("EXPLAIN QUERY PLAN " + BY_CONVERSATION, ("c1",)))
    assert "messages_by_conversation" in plan
    reopened.close()
    archive, _ = ingest(tmp_path / "killed", export)
    assert dump_tables(archive)["messages"] == dump_tables(open_archive(tmp_path / "clean" / "archive.db"))["messages"]
    assert schema_and_search(archive) == expected


BY_CONVERSATION = "SELECT uuid FROM messages WHERE conversation_id = ? ORDER BY seq"
