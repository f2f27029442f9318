"""archive.db's epochs (migration 7, staging/archive_changes.py): a token per write transaction, the newest kept in
every change-log mark, so that a mark is refused on an archive restored from a copy older than it."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from concept_support import conversation, write_archive
from conftest import FIXTURES

from staging import archive_changes
from staging.archive import open_archive
from staging.archive_changes import Mark


def _epochs(path: Path) -> list[str]:
    conn = open_archive(path)
    try:
        return [str(row[0]) for row in conn.execute("SELECT token FROM archive_epochs ORDER BY id")]
    finally:
        conn.close()


def _turns(text: str) -> list[tuple[str, str]]:
    return [("user", f"How do I prune tomato plants? {text}"), ("assistant", "Cut the suckers below the first truss.")]


def test_each_write_that_changes_the_archive_appends_one_token_and_a_repeat_appends_none(tmp_path: Path) -> None:
    path = tmp_path / "archive.db"
    conn = open_archive(path)
    first = conn.execute("SELECT COUNT(*) FROM archive_epochs").fetchone()[0]
    assert first == 1  # the migration's own: a copy from before it opens into an epoch of its own
    write_archive(conn, [conversation("c0", _turns("a"))], tag="dump1")
    write_archive(conn, [conversation("c0", _turns("b"))], tag="dump2")  # an update
    tokens = [row[0] for row in conn.execute("SELECT token FROM archive_epochs ORDER BY id")]
    assert len(tokens) == 3 and len(set(tokens)) == 3
    assert archive_changes.mark(conn).epoch == tokens[-1]
    write_archive(conn, [conversation("c0", _turns("b"))], tag="dump2")  # the same rows again: nothing changes
    assert conn.execute("SELECT COUNT(*) FROM archive_epochs").fetchone()[0] == 3
    conn.close()


def test_a_restored_copy_lacks_the_marks_epoch_and_the_live_archive_keeps_it(tmp_path: Path) -> None:
    path, copy = tmp_path / "archive.db", tmp_path / "copy.db"
    conn = open_archive(path)
    write_archive(conn, [conversation("c0", _turns("a"))], tag="dump1")
    conn.close()
    shutil.copyfile(path, copy)
    conn = open_archive(path)
    write_archive(conn, [conversation("c0", _turns("b"))], tag="dump2")
    since = archive_changes.mark(conn)
    write_archive(conn, [conversation("c1", _turns("c"))], tag="dump3")
    assert archive_changes.comparable(conn, since)  # grown since: trusted
    conn.close()
    restored = open_archive(copy)
    for n in range(3):
        write_archive(restored, [conversation("c0", _turns(f"again {n}"))], tag=f"again{n}")
    now = archive_changes.mark(restored)
    assert (now.origin, now.messages, now.newest) == (since.origin, since.messages, since.newest)
    assert now.version >= since.version  # every older check passes: only the epoch tells
    assert not archive_changes.comparable(restored, since)
    assert archive_changes.comparable(restored, Mark(*since.as_tuple()[:5]))  # a mark from before epochs: trusted
    restored.close()


def test_a_mark_from_before_epochs_were_kept_reads_back_without_one() -> None:
    stored = {"conversations": 3, "messages": 9, "version": 2, "origin": "abc 2026", "newest": "m9"}
    mark = Mark.from_json(stored)
    assert mark is not None and mark.epoch == ""
    assert Mark(*mark.as_tuple()) == mark
    assert Mark.from_json(mark.as_json()) == mark


def test_tokens_past_the_kept_number_are_pruned_and_a_mark_holding_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archive_changes, "KEPT_EPOCHS", 150)
    conn = open_archive(tmp_path / "archive.db")
    write_archive(conn, [conversation("c0", _turns("start"))], tag="start")
    old = archive_changes.mark(conn)
    for n in range(300):
        write_archive(conn, [conversation("c0", _turns(str(n)))], tag=f"d{n}")
    kept = conn.execute("SELECT COUNT(*) FROM archive_epochs").fetchone()[0]
    assert 150 <= kept < 250  # pruned every 100th token, down to the newest 150
    assert not archive_changes.comparable(conn, old)  # its reader reads everything once: nothing lost
    assert archive_changes.comparable(conn, archive_changes.mark(conn))
    conn.close()


def test_an_archive_from_before_epochs_gets_a_token_of_its_own_on_each_copy(tmp_path: Path) -> None:
    """Two copies of one pre-epoch archive.db upgraded apart: different tokens, so a mark taken of one after the
    upgrade is refused on the other."""
    tokens = []
    for name in ("a", "b"):
        path = tmp_path / name / "archive.db"
        path.parent.mkdir()
        with gzip.open(FIXTURES / "datadir_v0" / "archive.db.gz", "rb") as source, path.open("wb") as target:
            shutil.copyfileobj(source, target)
        tokens.append(_epochs(path))
    assert len(tokens[0]) == len(tokens[1]) == 1 and tokens[0] != tokens[1]
