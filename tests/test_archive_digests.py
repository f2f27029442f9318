"""archive.db's conversation digests: a conversation a newer dump repeats unchanged is skipped without reading
its messages, and the archive and the counts are exactly those of the row-by-row comparison."""

from __future__ import annotations

import random
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from contracts.records import ExportConversation, ExportSource
from ingest.tree import DraftMessage, build_thread
from staging.archive import ArchiveWriter, open_archive
from staging.archive_update import WriteCounts
from staging.migrations import ARCHIVE, schema_version


def _conversation(cid: str, turns: list[tuple[str, str]], *, updated: int = 1, title: str = "t") -> ExportConversation:
    """A linear conversation of (uuid, text) turns."""
    drafts = [
        DraftMessage(
            uuid=uuid,
            parent_ref=turns[i - 1][0] if i else None,
            role="user" if i % 2 == 0 else "assistant",
            author=None,
            content_type="text",
            text=text,
            created_at=datetime(2024, 1, 1, 0, i, tzinfo=UTC),
        )
        for i, (uuid, text) in enumerate(turns)
    ]
    thread = build_thread(cid, drafts, current_leaf=None)
    return ExportConversation(
        id=cid,
        title=title,
        created_at=None,
        updated_at=datetime(2024, 1, updated, tzinfo=UTC),
        current_node=thread.current_node,
        messages=thread.messages,
    )


def _source(writer: ArchiveWriter, sha: str) -> int:
    return writer.begin_source(ExportSource(path=f"{sha}.json", sha256=sha, format="jsonl", size_bytes=1))


def _state(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    """Every row the archive holds, but the digests."""
    tables = ("conversations", "messages", "quarantine", "archive_changes")
    state = {t: [tuple(r) for r in conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2")] for t in tables}
    state["sources"] = [tuple(r) for r in conn.execute("SELECT id, sha256, status FROM sources ORDER BY id")]
    state["messages_fts"] = [tuple(r) for r in conn.execute("SELECT rowid, text FROM messages_fts ORDER BY rowid")]
    return state


def _traced(conn: sqlite3.Connection) -> list[str]:
    """The statements `conn` runs from now on, with their parameters."""
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    return statements


def _reads_of(statements: list[str], cid: str) -> list[str]:
    """The reads of messages that name the conversation or one of its messages (uuids start with its id)."""
    return [s for s in statements if s.lstrip().upper().startswith("SELECT") and " messages " in s and cid in s]


def test_an_unchanged_conversation_in_a_newer_dump_is_not_read(tmp_path: Path) -> None:
    """The second dump repeats c1 and extends c2: c1's messages are not read (no SELECT on messages names it),
    its messages count as unchanged, and c2 is compared and written as before."""
    archive = open_archive(tmp_path / "archive.db")
    writer = ArchiveWriter(archive)
    c1 = _conversation("c1", [("c1-a", "hello"), ("c1-b", "hi there")])
    c2 = _conversation("c2", [("c2-a", "question")])
    writer.write_batch(_source(writer, "day1"), "jsonl", [c1, c2], [])
    c2_longer = _conversation("c2", [("c2-a", "question"), ("c2-b", "answer")], updated=2)
    statements = _traced(archive)
    counts, _ = writer.write_batch(_source(writer, "day2"), "jsonl", [c1, c2_longer], [])
    archive.set_trace_callback(None)
    assert (counts.unchanged, counts.inserted, counts.updated, counts.conversations) == (3, 1, 0, 1)
    assert _reads_of(statements, "c2") and not _reads_of(statements, "c1")  # c2's reads show the trace works
    assert archive.execute("SELECT COUNT(*) FROM conversation_digests").fetchone()[0] == 2


def test_a_row_changed_by_hand_drops_the_digest_and_the_dump_restores_it(tmp_path: Path) -> None:
    """Any change to a conversation's rows drops its digest (triggers): the same dump then compares row by row
    and puts the row back, as it did before digests."""
    archive = open_archive(tmp_path / "archive.db")
    writer = ArchiveWriter(archive)
    c1 = _conversation("c1", [("c1-a", "hello"), ("c1-b", "hi there")])
    writer.write_batch(_source(writer, "day1"), "jsonl", [c1], [])
    archive.execute("UPDATE messages SET is_hidden = 1 WHERE uuid = 'c1-b'")
    assert archive.execute("SELECT COUNT(*) FROM conversation_digests").fetchone()[0] == 0
    counts, _ = writer.write_batch(_source(writer, "day2"), "jsonl", [c1], [])
    assert (counts.updated, counts.unchanged) == (1, 1)
    assert archive.execute("SELECT is_hidden FROM messages WHERE uuid = 'c1-b'").fetchone()[0] == 0
    assert archive.execute("SELECT COUNT(*) FROM conversation_digests").fetchone()[0] == 1


def test_an_archive_upgraded_to_digests_compares_once_then_skips(tmp_path: Path) -> None:
    """An archive an older chatmem wrote (schema 4: no digests) gets the table empty: the first dump compares its
    conversations row by row and records their digests, the next one skips them."""
    c1 = _conversation("c1", [("c1-a", "hello"), ("c1-b", "hi there")])
    archive = open_archive(tmp_path / "archive.db")
    writer = ArchiveWriter(archive)
    writer.write_batch(_source(writer, "day1"), "jsonl", [c1], [])
    for (name,) in archive.execute("SELECT name FROM sqlite_master WHERE name LIKE 'conversation_digests%'").fetchall():
        kind = "TABLE" if name == "conversation_digests" else "TRIGGER"
        archive.execute(f"DROP {kind} {name}")  # back to what schema 4 held
    archive.execute("DELETE FROM schema_migrations WHERE version >= 5")
    archive.execute("PRAGMA user_version = 4")
    archive.close()
    archive = open_archive(tmp_path / "archive.db")
    assert schema_version(archive) == len(ARCHIVE) >= 5
    assert archive.execute("SELECT COUNT(*) FROM conversation_digests").fetchone()[0] == 0
    writer = ArchiveWriter(archive)
    statements = _traced(archive)
    first, _ = writer.write_batch(_source(writer, "day2"), "jsonl", [c1], [])
    assert _reads_of(statements, "c1")
    statements.clear()
    second, _ = writer.write_batch(_source(writer, "day3"), "jsonl", [c1], [])
    archive.set_trace_callback(None)
    assert not _reads_of(statements, "c1")
    assert (first.unchanged, second.unchanged, first.updated, second.updated) == (2, 2, 0, 0)


def _random_dumps(seed: int, days: int = 40) -> list[list[ExportConversation]]:
    """Batches of dumps of six conversations: repeated unchanged, extended, edited, shortened (retired
    messages), older dumps after newer ones, a message id of another conversation (a collision), twice in a
    batch, retitled."""
    rng = random.Random(seed)
    versions: dict[str, ExportConversation] = {}
    lengths = {f"c{i}": 1 for i in range(6)}
    batches = []
    for day in range(2, days + 2):
        batch = []
        for cid in sorted(lengths):
            roll = rng.random()
            if cid in versions and roll < 0.45:
                batch.append(versions[cid])  # the same dump again
                continue
            if roll < 0.6:
                lengths[cid] += rng.randint(1, 3)
            elif roll < 0.7:
                lengths[cid] = max(1, lengths[cid] - rng.randint(1, 2))
            turns = [
                (f"{cid}-m{i}", f"{cid} turn {i}" + ("!" if rng.random() < 0.1 else "")) for i in range(lengths[cid])
            ]
            if rng.random() < 0.08:
                other = rng.choice([c for c in lengths if c != cid])
                turns.append((f"{other}-m0", "an id another conversation owns"))
            updated = day if rng.random() < 0.85 else rng.randint(1, day)  # sometimes an older dump
            title = "t" if rng.random() < 0.8 else f"t{day}"
            versions[cid] = _conversation(cid, turns, updated=min(updated, 28), title=title)
            batch.append(versions[cid])
            if rng.random() < 0.05:
                batch.append(versions[cid])
        rng.shuffle(batch)
        batches.append(batch)
    return batches


def test_digests_leave_the_archive_and_the_counts_as_the_row_by_row_comparison_does(tmp_path: Path) -> None:
    """Random dumps written twice over: with digests, and with every digest dropped before each batch (the
    comparison of every row). Every table (messages, conversations, quarantine, change log, search index) and
    every batch's counts are the same."""
    for seed in range(4):
        with_digests = open_archive(tmp_path / f"with-{seed}.db")
        without = open_archive(tmp_path / f"without-{seed}.db")
        writers = ArchiveWriter(with_digests), ArchiveWriter(without)
        skipped = 0
        for day, batch in enumerate(_random_dumps(seed)):
            without.execute("DELETE FROM conversation_digests")
            results: list[WriteCounts] = []
            for writer in writers:
                counts, _ = writer.write_batch(_source(writer, f"day{day}"), "jsonl", batch, [])
                results.append(counts)
            assert results[0] == results[1], (seed, day)
            assert _state(with_digests) == _state(without), (seed, day)
            skipped += results[0].unchanged
        assert skipped > 0
