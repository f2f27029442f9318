"""archive.db writes: idempotent, incremental, nothing lost, collisions quarantined."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from contracts.records import ExportConversation, ExportMessage, ExportSource, QuarantineRecord
from ingest.tree import DraftMessage, build_thread
from staging.archive import ArchiveWriter, archive_stats, open_archive
from staging.migrations import ARCHIVE


def _conversation(
    cid: str, turns: list[tuple[str, str | None, str]], *, leaf: str | None = None, updated: int = 1
) -> ExportConversation:
    drafts = [
        DraftMessage(
            uuid=u,
            parent_ref=p,
            role="user",
            author=None,
            content_type="text",
            text=t,
            created_at=datetime(2024, 1, 1, 0, i, tzinfo=UTC),
        )
        for i, (u, p, t) in enumerate(turns)
    ]
    thread = build_thread(cid, drafts, current_leaf=leaf)
    assert not thread.quarantined
    return ExportConversation(
        id=cid,
        title=cid,
        created_at=None,
        updated_at=datetime(2024, 1, updated, tzinfo=UTC),
        current_node=thread.current_node,
        messages=thread.messages,
    )


@pytest.fixture
def archive(tmp_path: Path) -> sqlite3.Connection:
    return open_archive(tmp_path / "archive.db")


def _source(writer: ArchiveWriter, sha: str) -> int:
    return writer.begin_source(ExportSource(path=f"{sha}.json", sha256=sha, format="jsonl", size_bytes=1))


def _snapshot(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    return [
        tuple(r)
        for r in conn.execute(
            "SELECT uuid, conversation_id, parent_id, text, is_active, seq, content_hash FROM messages ORDER BY uuid"
        )
    ]


def test_same_batch_twice_changes_nothing(archive: sqlite3.Connection) -> None:
    """Writing the same conversations again inserts and updates nothing."""
    writer = ArchiveWriter(archive)
    sid = _source(writer, "a")
    conv = _conversation("c1", [("m1", None, "hi"), ("m2", "m1", "hello")])
    first, _ = writer.write_batch(sid, "jsonl", [conv], [])
    before = _snapshot(archive)
    second, _ = writer.write_batch(sid, "jsonl", [conv], [])
    assert (first.inserted, first.conversations) == (2, 1)
    assert (second.inserted, second.updated, second.unchanged, second.conversations) == (0, 0, 2, 0)
    assert _snapshot(archive) == before


def test_newer_dump_adds_new_messages_and_moves_the_active_path(archive: sqlite3.Connection) -> None:
    """A newer dump that branches and extends a conversation adds only new rows and re-marks the path."""
    writer = ArchiveWriter(archive)
    old = _conversation("c1", [("m1", None, "q"), ("m2", "m1", "a1")], updated=1)
    writer.write_batch(_source(writer, "old"), "jsonl", [old], [])
    new = _conversation(
        "c1",
        [("m1", None, "q"), ("m2", "m1", "a1"), ("m3", "m1", "a2"), ("m4", "m3", "more")],
        leaf="m4",
        updated=2,
    )
    counts, _ = writer.write_batch(_source(writer, "new"), "jsonl", [new], [])
    assert counts.inserted == 2
    assert counts.updated == 1  # m2 left the active path
    rows = {r["uuid"]: r for r in archive.execute("SELECT * FROM messages")}
    assert [u for u in ("m1", "m3", "m4") if rows[u]["is_active"]] == ["m1", "m3", "m4"]
    assert rows["m2"]["is_active"] == 0
    chain = archive.execute(
        "SELECT uuid, prev_id, next_id FROM message_chronology WHERE conversation_id='c1' ORDER BY seq"
    ).fetchall()
    assert [tuple(r) for r in chain] == [("m1", None, "m3"), ("m3", "m1", "m4"), ("m4", "m3", None)]


def test_message_missing_from_newer_dump_is_kept_inactive(archive: sqlite3.Connection) -> None:
    """Nothing is deleted: a message a newer dump drops stays in the archive, inactive, after the others."""
    writer = ArchiveWriter(archive)
    writer.write_batch(
        _source(writer, "old"),
        "jsonl",
        [_conversation("c1", [("m1", None, "q"), ("m2", "m1", "gone later")])],
        [],
    )
    counts, _ = writer.write_batch(
        _source(writer, "new"), "jsonl", [_conversation("c1", [("m1", None, "q")], updated=2)], []
    )
    assert counts.retired == 1
    rows = {r["uuid"]: (r["is_active"], r["seq"]) for r in archive.execute("SELECT * FROM messages")}
    assert rows == {"m1": (1, 0), "m2": (0, 1)}
    assert archive.execute("SELECT message_count FROM conversations").fetchone()[0] == 2


def test_older_dump_after_newer_one_adds_but_does_not_rewind(archive: sqlite3.Connection) -> None:
    """An older dump ingested later may add messages it alone has, but never moves the active path back."""
    writer = ArchiveWriter(archive)
    writer.write_batch(
        _source(writer, "new"),
        "jsonl",
        [_conversation("c1", [("m1", None, "q"), ("m3", "m1", "new answer")], updated=5)],
        [],
    )
    before = _snapshot(archive)
    counts, _ = writer.write_batch(
        _source(writer, "old"),
        "jsonl",
        [_conversation("c1", [("m1", None, "q"), ("m2", "m1", "old")], updated=1)],
        [],
    )
    assert counts.inserted == 1 and counts.updated == 0
    after = {r[0]: r for r in _snapshot(archive)}
    assert {r[0]: r for r in before}.items() <= after.items()
    assert after["m2"][4] == 0  # inactive
    seqs = [r[0] for r in archive.execute("SELECT seq FROM messages WHERE conversation_id='c1'")]
    assert len(seqs) == len(set(seqs)) == 3


def test_message_id_owned_by_another_conversation_is_quarantined(archive: sqlite3.Connection) -> None:
    """A duplicate message id across conversations is quarantined with a reason, never overwritten."""
    writer = ArchiveWriter(archive)
    sid = _source(writer, "a")
    writer.write_batch(sid, "jsonl", [_conversation("c1", [("dup", None, "first owner")])], [])
    counts, collisions = writer.write_batch(
        sid, "jsonl", [_conversation("c2", [("dup", None, "intruder"), ("m9", None, "fine")])], []
    )
    assert len(collisions) == 1 and "already belongs to conversation 'c1'" in collisions[0].reason
    assert counts.quarantined == 1 and counts.inserted == 1
    assert archive.execute("SELECT text FROM messages WHERE uuid='dup'").fetchone()[0] == "first owner"
    assert archive_stats(archive)["quarantined"] == 1


def test_quarantine_rows_are_idempotent(archive: sqlite3.Connection) -> None:
    """The same quarantined record written twice (a re-run) is stored once."""
    writer = ArchiveWriter(archive)
    sid = _source(writer, "a")
    record = QuarantineRecord(locator="line 3", reason="not JSON", raw="{oops")
    writer.write_batch(sid, "jsonl", [], [record])
    writer.write_batch(sid, "jsonl", [], [record])
    assert archive_stats(archive)["quarantined"] == 1


def test_schema_migrates_once_and_reopens(tmp_path: Path) -> None:
    """Opening archive.db twice keeps data and the schema version."""
    conn = open_archive(tmp_path / "a.db")
    writer = ArchiveWriter(conn)
    writer.write_batch(_source(writer, "a"), "jsonl", [_conversation("c1", [("m1", None, "x")])], [])
    conn.close()
    again = open_archive(tmp_path / "a.db")
    assert again.execute("PRAGMA user_version").fetchone()[0] == len(ARCHIVE)
    assert archive_stats(again)["messages"] == 1
    assert again.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_message_rows_hold_utc_times_and_content_hash(archive: sqlite3.Connection) -> None:
    """Stored created_at is ISO-8601 UTC and content_hash is the sha256 of the text."""
    import hashlib

    writer = ArchiveWriter(archive)
    writer.write_batch(_source(writer, "a"), "jsonl", [_conversation("c1", [("m1", None, "héllo")])], [])
    row = archive.execute("SELECT created_at, content_hash FROM messages").fetchone()
    assert row["created_at"] == "2024-01-01T00:00:00+00:00"
    assert row["content_hash"] == hashlib.sha256("héllo".encode()).hexdigest()


def test_export_message_rejects_unknown_fields() -> None:
    """Contracts are strict: an unknown field is an error, not a silent drop."""
    with pytest.raises(ValueError, match="extra"):
        ExportMessage(
            uuid="m",
            parent_id=None,
            role="user",
            author=None,
            content_type="text",
            text="t",
            created_at=None,
            is_active=True,
            is_hidden=False,
            seq=0,
            bogus=1,
        )  # type: ignore[call-arg]


def test_lone_surrogate_is_stored_as_replacement_character(archive: sqlite3.Connection) -> None:
    """Half an emoji escaped in the export ("\\ud83d") is stored as U+FFFD instead of failing the batch."""
    writer = ArchiveWriter(archive)
    conversation = _conversation("c1", [("m1", None, "cut emoji \ud83d here")])
    counts, _ = writer.write_batch(_source(writer, "a"), "jsonl", [conversation], [])
    assert counts.inserted == 1
    assert archive.execute("SELECT text FROM messages").fetchone()[0] == "cut emoji \ufffd here"


def test_same_conversation_twice_in_one_batch_is_written_once(archive: sqlite3.Connection) -> None:
    """A conversation repeated inside one file is upserted, not inserted twice."""
    writer = ArchiveWriter(archive)
    first = _conversation("c1", [("m1", None, "q")], updated=1)
    second = _conversation("c1", [("m1", None, "q"), ("m2", "m1", "a")], updated=2)
    counts, collisions = writer.write_batch(_source(writer, "a"), "jsonl", [first, second], [])
    assert collisions == [] and counts.inserted == 2
    stats = archive_stats(archive)
    assert (stats["conversations"], stats["messages"]) == (1, 2)


def test_an_id_reused_by_two_new_conversations_quarantines_both(archive: sqlite3.Connection) -> None:
    """Three new conversations share one message id in a batch: the first keeps it, two are quarantined (and, left
    with no message, are not stored)."""
    writer = ArchiveWriter(archive)
    batch = [_conversation(cid, [("shared", None, cid)]) for cid in ("c1", "c2", "c3")]
    counts, collisions = writer.write_batch(_source(writer, "a"), "jsonl", batch, [])
    assert sorted(c.conversation_id or "" for c in collisions) == ["c2", "c3"]
    assert counts.inserted == 1 and counts.quarantined == 2
    counts_by_conversation = dict(archive.execute("SELECT id, message_count FROM conversations").fetchall())
    assert counts_by_conversation == {"c1": 1}
    assert counts.conversations == 1


def test_a_dump_continuing_a_conversation_without_its_title_keeps_the_title_and_the_start(
    archive: sqlite3.Connection,
) -> None:
    """A later dump that repeats a conversation without its title (a JSONL file of the new lines only) keeps the
    stored title and the earliest start; a dump that does name a title renames it."""
    writer = ArchiveWriter(archive)
    first = _conversation("c1", [("m1", None, "q"), ("m2", "m1", "a")], updated=1)
    first = first.model_copy(update={"title": "Winter kayaking", "created_at": datetime(2024, 1, 1, tzinfo=UTC)})
    writer.write_batch(_source(writer, "a"), "jsonl", [first], [])
    later = _conversation("c1", [("m1", None, "q"), ("m2", "m1", "a"), ("m3", "m2", "more")], updated=2)
    later = later.model_copy(update={"title": None, "created_at": datetime(2024, 1, 2, tzinfo=UTC)})
    writer.write_batch(_source(writer, "b"), "jsonl", [later], [])
    row = archive.execute("SELECT title, created_at FROM conversations WHERE id = 'c1'").fetchone()
    assert row["title"] == "Winter kayaking" and row["created_at"].startswith("2024-01-01")
    renamed = later.model_copy(update={"title": "Kayaking in winter", "updated_at": datetime(2024, 1, 3, tzinfo=UTC)})
    writer.write_batch(_source(writer, "c"), "jsonl", [renamed], [])
    assert (
        archive.execute("SELECT title FROM conversations WHERE id = 'c1'").fetchone()["title"] == "Kayaking in winter"
    )
