"""Segmentation (extract.segment, pure) and the segment stage (extract.stage_segment) on real SQLite files."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from concept_support import Dbs, Msg, conversation, open_dbs, write_archive
from stage_support import stage_segment

from contracts.errors import StageError
from extract.segment import PathMessage, SegmentParams, segment_conversation
from extract.text import estimate_tokens
from staging import segments as segment_store
from staging.ledger import open_run

GARDEN = "My vegetable garden has tomatoes and peppers; the tomato plants need staking and compost in the garden beds."
GARDEN_REPLY = "For tomato plants in garden beds, stake early, add compost, and water the tomatoes deeply twice a week."
TAXES = "Separate question: how do I file quarterly estimated taxes as a freelancer with income from two clients?"
TAXES_REPLY = "Freelancers pay quarterly estimated taxes with Form 1040-ES; total the income from both clients first."


def _path(*texts: tuple[str, str]) -> list[PathMessage]:
    return [
        PathMessage(f"m{i}", role, text, f"2024-01-01T00:0{i}:00+00:00", f"h{i}")
        for i, (role, text) in enumerate(texts)
    ]


def test_token_estimate_is_a_quarter_of_the_characters_rounded_up() -> None:
    """The budget's cheap estimate: ceil(len / 4), at least 1."""
    assert [estimate_tokens(t) for t in ("", "abc", "abcd", "abcde", "x" * 400)] == [1, 1, 1, 2, 100]


def test_segments_stay_within_the_token_budget_and_cover_the_path_in_order() -> None:
    """Every segment fits the budget (a lone message may exceed it), and the segments tile the path."""
    path = _path(
        *[("user" if i % 2 == 0 else "assistant", f"message {i} " + "word " * (20 + 7 * i)) for i in range(12)]
    )
    drafts = segment_conversation("c", path, SegmentParams(max_tokens=120, min_tokens=0, shift_threshold=0))
    assert [m for d in drafts for m in d.message_ids] == [m.uuid for m in path]
    for draft in drafts:
        assert draft.token_estimate <= 120 or len(draft.message_ids) == 1
    assert {d.boundary for d in drafts[1:]} == {"budget"}


def test_a_topic_shift_cuts_before_the_user_turn_that_changes_the_subject() -> None:
    """Garden talk then taxes talk: two segments, the second starting at the taxes question."""
    path = _path(("user", GARDEN), ("assistant", GARDEN_REPLY), ("user", TAXES), ("assistant", TAXES_REPLY))
    drafts = segment_conversation("c", path, SegmentParams(max_tokens=1000, min_tokens=10))
    assert [d.message_ids for d in drafts] == [("m0", "m1"), ("m2", "m3")]
    assert drafts[1].boundary == "topic"


def test_no_topic_cut_before_min_tokens() -> None:
    """A shift inside a segment still under min_tokens does not cut it."""
    path = _path(("user", GARDEN), ("assistant", GARDEN_REPLY), ("user", TAXES), ("assistant", TAXES_REPLY))
    assert len(segment_conversation("c", path, SegmentParams(max_tokens=1000, min_tokens=500))) == 1


def test_a_reply_that_overflows_takes_its_question_along() -> None:
    """When the budget cuts before an answer, its question moves to the new segment with it."""
    path = _path(("user", "a " * 100), ("assistant", "b " * 100), ("user", "c " * 100), ("assistant", "d " * 100))
    drafts = segment_conversation("c", path, SegmentParams(max_tokens=130, min_tokens=0, shift_threshold=0))
    assert [d.message_ids for d in drafts] == [("m0", "m1"), ("m2", "m3")]


def test_segmentation_is_deterministic_and_ids_depend_on_conversation_and_ends() -> None:
    """Same input, same segments; the id changes with the conversation id, the content hash with the text."""
    path = _path(("user", GARDEN), ("assistant", GARDEN_REPLY), ("user", TAXES), ("assistant", TAXES_REPLY))
    params = SegmentParams(max_tokens=1000, min_tokens=10)
    first, again = segment_conversation("c", path, params), segment_conversation("c", path, params)
    assert first == again
    assert first[0].segment_id != segment_conversation("other", path, params)[0].segment_id
    edited = [path[0], PathMessage("m1", "assistant", "changed", path[1].created_at, "other-hash"), *path[2:]]
    assert segment_conversation("c", edited, params)[0].content_hash != first[0].content_hash


def test_appending_messages_keeps_the_earlier_segments() -> None:
    """Boundaries depend only on nearby messages: a longer conversation keeps its earlier segments as they were."""
    turns = [("user", GARDEN), ("assistant", GARDEN_REPLY), ("user", TAXES), ("assistant", TAXES_REPLY)]
    params = SegmentParams(max_tokens=1000, min_tokens=10)
    before = segment_conversation("c", _path(*turns), params)
    after = segment_conversation("c", _path(*turns, ("user", GARDEN), ("assistant", GARDEN_REPLY)), params)
    assert after[0] == before[0]


def test_stage_segments_the_visible_active_path_only(tmp_path: Path) -> None:
    """Hidden and inactive messages are in no segment; membership rows list the rest in order."""
    dbs = open_dbs(tmp_path)
    messages = [
        Msg("system", "hidden context", hidden=True),
        Msg("user", GARDEN),
        Msg("assistant", "an abandoned branch", active=False),
        Msg("assistant", GARDEN_REPLY),
    ]
    write_archive(dbs.archive, [conversation("c1", messages)])
    result = stage_segment.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings)
    members = dbs.staging.execute("SELECT message_id FROM segment_messages ORDER BY segment_id, position").fetchall()
    assert [m[0] for m in members] == ["c1-m1", "c1-m3"]
    assert result.counts["segments_written"] == 1 and result.counts["messages_segmented"] == 2
    row = dbs.staging.execute("SELECT * FROM segments").fetchone()
    assert (row["first_message_id"], row["last_message_id"]) == ("c1-m1", "c1-m3")
    assert row["first_time"] < row["last_time"] and row["token_estimate"] > 0


def test_stage_rerun_on_unchanged_archive_does_no_work(tmp_path: Path) -> None:
    """Same archive, second run: skipped, nothing written, rows keep the run that made them."""
    dbs = open_dbs(tmp_path)
    write_archive(dbs.archive, [conversation("c1", [("user", GARDEN), ("assistant", GARDEN_REPLY)])])
    first = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=first, settings=dbs.settings)
    again = stage_segment.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings)
    assert again.status == "skipped" and again.counts["conversations_unchanged"] == 1
    assert again.counts["segments_written"] == 0
    assert {r[0] for r in dbs.staging.execute("SELECT run_id FROM segments")} == {first}


def test_stage_resegments_only_changed_conversations_and_retires_stale_segments(tmp_path: Path) -> None:
    """A newer dump changes one conversation: its old segment is retired, the other conversation is untouched."""
    dbs = open_dbs(tmp_path, segment={"min_tokens": 10})
    garden = conversation("c1", [("user", GARDEN), ("assistant", GARDEN_REPLY)])
    taxes = conversation("c2", [("user", TAXES), ("assistant", TAXES_REPLY)])
    write_archive(dbs.archive, [garden, taxes], tag="dump1")
    stage_segment.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings)
    edited = conversation("c1", [("user", GARDEN), ("assistant", "Short answer now.")])
    write_archive(dbs.archive, [edited], tag="dump2")
    result = stage_segment.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings)
    assert result.counts["conversations_segmented"] == 1 and result.counts["conversations_unchanged"] == 1
    # Same first and last message: the same segment id, updated in place with the new content hash.
    assert result.counts["segments_written"] == 1 and result.counts["segments_retired"] == 0
    longer = conversation("c1", [("user", GARDEN), ("assistant", "Short answer now."), ("user", "More?")])
    write_archive(dbs.archive, [longer], tag="dump3")
    result = stage_segment.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings)
    assert result.counts["segments_retired"] == 1 and result.counts["segments_current"] == 2


def test_current_segments_are_read_in_pages_that_leave_no_cursor_open(tmp_path: Path) -> None:
    """Paged reading gives the same segments as one page, and between pages no read pins the WAL (a checkpoint
    that truncates it succeeds), so a stage writing while it iterates does not grow the WAL without bound."""
    dbs = open_dbs(tmp_path)
    chats = [conversation(f"c{i}", [("user", GARDEN), ("assistant", GARDEN_REPLY)]) for i in range(5)]
    write_archive(dbs.archive, chats)
    stage_segment.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings)
    whole = list(segment_store.iter_current_segments(dbs.staging, page_conversations=1000))
    checkpoints = []
    paged = []
    other = sqlite3.connect(dbs.settings.staging_path)
    for segment in segment_store.iter_current_segments(dbs.staging, page_conversations=2):
        paged.append(segment)
        dbs.staging.execute("CREATE TABLE IF NOT EXISTS scratch (x)")
        dbs.staging.execute("INSERT INTO scratch VALUES (1)")  # the caller writes while it iterates
        checkpoints.append(other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0])  # 0 = not busy
    other.close()
    assert paged == whole and len(whole) == 5
    assert [s.conversation_id for s in paged] == [f"c{i}" for i in range(5)]
    assert checkpoints == [0] * 5


SEGMENT_TABLES = {
    "segments": "SELECT * FROM segments ORDER BY segment_id",
    "segment_messages": "SELECT * FROM segment_messages ORDER BY segment_id, message_id",
    "segment_conversations": "SELECT * FROM segment_conversations ORDER BY conversation_id",
}


def _tables(staging: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    return {name: [tuple(r) for r in staging.execute(sql)] for name, sql in SEGMENT_TABLES.items()}


def _run(dbs: Dbs, run_id: str) -> str:
    open_run(dbs.staging, stages=["segment"], exports=[], settings={}, code_version="t", run_id=run_id)
    return run_id


def _topics(n: int) -> list[tuple[str, str]]:
    return [("user", f"{GARDEN} ({n})"), ("assistant", GARDEN_REPLY), ("user", TAXES), ("assistant", TAXES_REPLY)]


def test_a_run_reads_only_the_conversations_the_archive_changed_and_writes_what_a_full_read_writes(
    tmp_path: Path,
) -> None:
    """After a first run (every conversation read, the archive's mark kept), the next dump edits one conversation,
    hides a message of another, continues a third and adds a new one: the run reads those 4 of 9, and its
    segments, memberships and fingerprints are those of the same run reading all 9 (the mark dropped)."""
    rows: dict[str, dict[str, list[tuple[object, ...]]]] = {}
    for how in ("scoped", "full"):
        dbs = open_dbs(tmp_path / how, segment={"min_tokens": 10})
        write_archive(dbs.archive, [conversation(f"c{n}", _topics(n)) for n in range(8)], tag="dump1")
        first = stage_segment.run(dbs.archive, dbs.staging, run_id=_run(dbs, "r1"), settings=dbs.settings)
        assert first.counts["conversations_read"] == 8 and first.counts["conversations_segmented"] == 8
        hidden = [Msg(role, text, hidden=i == 1) for i, (role, text) in enumerate(_topics(3))]
        write_archive(
            dbs.archive,
            [
                conversation("c1", [*_topics(1)[:3], ("assistant", "Short answer now.")]),
                conversation("c3", hidden),
                conversation("c5", [*_topics(5), ("user", "And what about mulch for the tomato beds?")]),
                conversation("c8", _topics(8)),
            ],
            tag="dump2",
        )
        if how == "full":
            dbs.staging.execute("DELETE FROM segment_mark")  # as a data dir from before the mark: reads all
            dbs.staging.commit()
        result = stage_segment.run(dbs.archive, dbs.staging, run_id=_run(dbs, "r2"), settings=dbs.settings)
        assert result.counts["conversations"] == 9 and result.counts["conversations_segmented"] == 4
        assert result.counts["conversations_unchanged"] == 5
        assert result.counts["conversations_read"] == (4 if how == "scoped" else 9)
        rows[how] = _tables(dbs.staging)
        again = stage_segment.run(dbs.archive, dbs.staging, run_id=_run(dbs, "r3"), settings=dbs.settings)
        assert again.status == "skipped" and again.counts["conversations_read"] == 0  # nothing changed since
    assert rows["scoped"] == rows["full"]
    written = {r[0] for r in rows["scoped"]["segment_conversations"] if r[3] == "r2"}  # (id, fingerprint, n, run)
    assert written == {"c1", "c3", "c5", "c8"}


def test_other_segment_parameters_or_force_read_every_conversation(tmp_path: Path) -> None:
    """The mark holds for the parameters it was taken with; --force reads everything and keeps a new mark."""
    dbs = open_dbs(tmp_path / "data", segment={"min_tokens": 10})
    write_archive(dbs.archive, [conversation(f"c{n}", _topics(n)) for n in range(3)], tag="dump1")
    stage_segment.run(dbs.archive, dbs.staging, run_id=_run(dbs, "r1"), settings=dbs.settings)
    other = open_dbs(tmp_path / "data", segment={"min_tokens": 20})
    changed = stage_segment.run(other.archive, other.staging, run_id=_run(other, "r2"), settings=other.settings)
    assert changed.counts["conversations_read"] == 3
    forced = stage_segment.run(
        other.archive, other.staging, run_id=_run(other, "r3"), settings=other.settings, force=True
    )
    assert forced.counts["conversations_read"] == 3
    after = stage_segment.run(other.archive, other.staging, run_id=_run(other, "r4"), settings=other.settings)
    assert after.counts["conversations_read"] == 0


def test_a_full_read_stopped_part_way_leaves_no_mark_to_trust(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Other parameters read everything and rewrite the segments; a run stopped before its new mark must not leave
    the old one: back on the old parameters, the next run reads every conversation again (the review's case)."""
    data = tmp_path / "data"
    dbs = open_dbs(data, segment={"min_tokens": 10})
    write_archive(dbs.archive, [conversation(f"c{n}", _topics(n)) for n in range(3)], tag="dump1")
    stage_segment.run(dbs.archive, dbs.staging, run_id=_run(dbs, "r1"), settings=dbs.settings)
    other = open_dbs(data, segment={"max_tokens": 40})

    def killed(*_: object) -> None:
        raise RuntimeError("killed before the mark")

    monkeypatch.setattr(segment_store, "write_mark", killed)
    with pytest.raises(StageError):
        stage_segment.run(other.archive, other.staging, run_id=_run(other, "r2"), settings=other.settings)
    monkeypatch.undo()
    back = open_dbs(data, segment={"min_tokens": 10})
    result = stage_segment.run(back.archive, back.staging, run_id=_run(back, "r3"), settings=back.settings)
    assert result.counts["conversations_read"] == 3 and result.counts["conversations_segmented"] == 3


def test_another_archive_than_the_marks_is_read_whole(tmp_path: Path) -> None:
    """The mark names the archive it was taken of (its first source): a new archive.db in the same data dir, even
    one grown past the mark's rowids, is read whole."""
    data = tmp_path / "data"
    dbs = open_dbs(data, segment={"min_tokens": 10})
    write_archive(dbs.archive, [conversation(f"c{n}", _topics(n)) for n in range(3)], tag="dump1")
    stage_segment.run(dbs.archive, dbs.staging, run_id=_run(dbs, "r1"), settings=dbs.settings)
    dbs.archive.close()
    dbs.settings.archive_path.unlink()
    fresh = open_dbs(data, segment={"min_tokens": 10})
    write_archive(fresh.archive, [conversation(f"c{n}", _topics(n)) for n in range(5)], tag="another")
    result = stage_segment.run(fresh.archive, fresh.staging, run_id=_run(fresh, "r2"), settings=fresh.settings)
    assert result.counts["conversations_read"] == 5 and result.counts["conversations_segmented"] == 2


def test_an_archive_restored_from_an_older_copy_that_grew_back_is_read_whole(tmp_path: Path) -> None:
    """archive.db put back from a copy older than the mark, then written again past the mark's rowids: the same
    origin and larger numbers, but another message where the mark's newest was (staging/archive_changes.py
    `Mark.newest`), so the run reads every conversation instead of trusting the change log."""
    data = tmp_path / "data"
    dbs = open_dbs(data, segment={"min_tokens": 10})
    write_archive(dbs.archive, [conversation(f"c{n}", _topics(n)) for n in range(3)], tag="dump1")
    dbs.archive.close()
    backup = tmp_path / "archive-backup.db"
    shutil.copyfile(dbs.settings.archive_path, backup)
    dbs = open_dbs(data, segment={"min_tokens": 10})
    write_archive(dbs.archive, [conversation("c3", _topics(3))], tag="dump2")
    stage_segment.run(dbs.archive, dbs.staging, run_id=_run(dbs, "r1"), settings=dbs.settings)
    dbs.archive.close()
    shutil.copyfile(backup, dbs.settings.archive_path)  # the older copy: c0-c2 only
    restored = open_dbs(data, segment={"min_tokens": 10})
    write_archive(restored.archive, [conversation(f"n{n}", _topics(n)) for n in range(3)], tag="dump3")
    result = stage_segment.run(
        restored.archive, restored.staging, run_id=_run(restored, "r2"), settings=restored.settings
    )
    assert result.counts["conversations_read"] == 6 == result.counts["conversations"]
    assert result.counts["conversations_segmented"] == 3  # n0-n2; c0-c2 as they were


def test_an_archive_restored_from_a_copy_older_than_updates_alone_is_read_whole(tmp_path: Path) -> None:
    """Only updates between the copy and the mark (no new message): the restored archive has the mark's origin,
    rowids and newest message, and the updates after the restore bring the change log past the mark's version
    again. The copy lacks the mark's epoch token (staging/archive_changes.py `Mark.epoch`), so the run reads every
    conversation: c0's segments go back to the text the archive holds again, which the change log alone misses."""
    data = tmp_path / "data"
    dbs = open_dbs(data, segment={"min_tokens": 10})
    write_archive(dbs.archive, [conversation(f"c{n}", _topics(n)) for n in range(3)], tag="dump1")
    stage_segment.run(dbs.archive, dbs.staging, run_id=_run(dbs, "r1"), settings=dbs.settings)
    dbs.archive.close()
    backup = tmp_path / "archive-backup.db"
    shutil.copyfile(dbs.settings.archive_path, backup)
    dbs = open_dbs(data, segment={"min_tokens": 10})
    edited = conversation("c0", [*_topics(0)[:3], ("assistant", "Short answer now.")])
    write_archive(dbs.archive, [edited], tag="dump2")
    stage_segment.run(dbs.archive, dbs.staging, run_id=_run(dbs, "r2"), settings=dbs.settings)
    at_mark = dbs.archive.execute("SELECT MAX(version) FROM archive_changes").fetchone()[0]
    dbs.archive.close()
    shutil.copyfile(backup, dbs.settings.archive_path)  # c0 as dump1 wrote it
    restored = open_dbs(data, segment={"min_tokens": 10})
    for n in (1, 2):  # updates only, as many as it takes to pass the mark's version again
        write_archive(
            restored.archive, [conversation(f"c{n}", [*_topics(n)[:3], ("assistant", "Now short.")])], tag=f"dump3-{n}"
        )
    assert restored.archive.execute("SELECT MAX(version) FROM archive_changes").fetchone()[0] >= at_mark
    result = stage_segment.run(
        restored.archive, restored.staging, run_id=_run(restored, "r3"), settings=restored.settings
    )
    assert result.counts["conversations_read"] == 3 == result.counts["conversations"]
    assert result.counts["conversations_segmented"] == 3  # c1, c2 edited; c0 back to dump1's text
    c0 = [row for row in _tables(restored.staging)["segment_conversations"] if row[0] == "c0"]
    assert [row[3] for row in c0] == ["r3"]


def test_a_mark_stored_before_it_kept_its_newest_message_is_still_trusted(tmp_path: Path) -> None:
    """A segment_mark written by the code before `Mark.newest` (no such key): accepted as it was, so an upgraded data
    dir reads only what changed on its next day, not everything."""
    data = tmp_path / "data"
    dbs = open_dbs(data, segment={"min_tokens": 10})
    write_archive(dbs.archive, [conversation(f"c{n}", _topics(n)) for n in range(3)], tag="dump1")
    stage_segment.run(dbs.archive, dbs.staging, run_id=_run(dbs, "r1"), settings=dbs.settings)
    dbs.staging.execute("UPDATE segment_mark SET archive_mark = json_remove(archive_mark, '$.newest')")
    dbs.staging.commit()
    write_archive(dbs.archive, [conversation("c3", _topics(3))], tag="dump2")
    result = stage_segment.run(dbs.archive, dbs.staging, run_id=_run(dbs, "r2"), settings=dbs.settings)
    assert result.counts["conversations_read"] == 1 and result.counts["conversations"] == 4
