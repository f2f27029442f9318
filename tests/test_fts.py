"""staging/fts.py: full-text search over message text, kept in step by ingest, added to existing archives."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from stage_support import ingest_stage

from contracts.settings import Settings
from staging.archive import open_archive
from staging.db import connect
from staging.fts import rebuild, search_messages
from staging.ledger import open_run, open_staging
from staging.migrations import ARCHIVE, migrate


def _ingest(settings: Settings, run_id: str, export: Path) -> None:
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        open_run(staging, stages=["ingest"], exports=[str(export)], settings={}, code_version="t", run_id=run_id)
        ingest_stage.run(archive, staging, run_id=run_id, settings=settings, exports=[export])
    finally:
        archive.close()
        staging.close()


def _write(path: Path, texts: dict[str, str]) -> Path:
    lines = [
        f'{{"conversation_id": "c1", "id": "{mid}", "role": "user", "text": "{text}"}}' for mid, text in texts.items()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _hits(settings: Settings, query: str) -> list[str]:
    conn = sqlite3.connect(settings.archive_path)
    try:
        return [r["uuid"] for r in search_messages(conn, query)]
    finally:
        conn.close()


def test_ingest_keeps_the_index_in_step_with_inserts_and_changed_text(tmp_path: Path) -> None:
    """New messages (new or known conversations) are found at once; changed text is found by its new words only."""
    settings = Settings(data_dir=tmp_path / "data")
    _ingest(settings, "r1", _write(tmp_path / "a.jsonl", {"m1": "my sourdough starter died", "m2": "hello there"}))
    assert _hits(settings, "sourdough") == ["c1:m1"]
    assert _hits(settings, "starter AND died") == ["c1:m1"]
    newer = {"m1": "my rye starter is thriving", "m2": "hello there", "m3": "a new focaccia recipe"}
    _ingest(settings, "r2", _write(tmp_path / "b.jsonl", newer))  # m3: a new message in a known conversation
    assert _hits(settings, "focaccia") == ["c1:m3"]
    assert _hits(settings, "sourdough") == []
    assert _hits(settings, "thriving") == ["c1:m1"]
    assert _hits(settings, "hello") == ["c1:m2"]


def test_an_archive_from_before_the_index_is_indexed_once_when_opened(
    tmp_path: Path, make_jsonl: Callable[..., Path]
) -> None:
    """A v1 archive (no messages_fts) gets the table, its triggers and every existing message on open."""
    path = tmp_path / "data" / "archive.db"
    old = connect(path)
    migrate(old, ARCHIVE[:1])  # the schema as the release before this one wrote it
    old.execute(
        "INSERT INTO sources (id, path, sha256, format, size_bytes, status, imported_at)"
        " VALUES (1, 'x', 'h', 'jsonl', 1, 'complete', 't')"
    )
    old.execute(
        "INSERT INTO conversations (id, format, message_count, source_id, row_hash) VALUES ('c', 'jsonl', 1, 1, 'h')"
    )
    old.execute(
        "INSERT INTO messages (uuid, conversation_id, role, content_type, text, is_active, is_hidden, seq,"
        " content_hash, source_id) VALUES ('c:m', 'c', 'user', 'text', 'an old telescope note', 1, 0, 0, 'h', 1)"
    )
    assert old.execute("PRAGMA user_version").fetchone()[0] == 1
    old.close()
    upgraded = open_archive(path)
    try:
        assert upgraded.execute("PRAGMA user_version").fetchone()[0] == len(ARCHIVE)
        assert [r["uuid"] for r in search_messages(upgraded, "telescope")] == ["c:m"]
        rebuild(upgraded)  # idempotent: a second rebuild finds the same
        assert len(search_messages(upgraded, "telescope")) == 1
    finally:
        upgraded.close()


ODD_TEXT = {
    "m1": "I write c++ at work, my e-mail is short",
    "m2": "the ratio a:b is 3 to 1",
    "m3": "logic gates: AND, OR and NOT",
    "m4": 'she said foo" then left',
}


def test_any_typed_text_searches_as_words_when_it_is_not_fts5(tmp_path: Path) -> None:
    """Text FTS5 cannot parse (a stray quote, a lone operator, c++, a:b, e-mail, #) searches for its words
    instead of raising an SQL error; valid FTS5 (a phrase, prefix*, OR) keeps its meaning."""
    settings = Settings(data_dir=tmp_path / "data")
    lines = [json.dumps({"conversation_id": "c1", "id": k, "role": "user", "text": v}) for k, v in ODD_TEXT.items()]
    (tmp_path / "odd.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _ingest(settings, "r1", tmp_path / "odd.jsonl")
    assert _hits(settings, "c++") == ["c1:m1"]
    assert _hits(settings, "e-mail") == ["c1:m1"]
    assert _hits(settings, "a:b") == ["c1:m2"]
    assert _hits(settings, "AND") == ["c1:m3"]
    assert _hits(settings, 'foo"') == ["c1:m4"]
    assert _hits(settings, "#") == [] and _hits(settings, "") == [] and _hits(settings, "(") == []
    assert _hits(settings, '"logic gates"') == ["c1:m3"]
    assert sorted(_hits(settings, "ratio OR gates")) == ["c1:m2", "c1:m3"]
    assert _hits(settings, "rati*") == ["c1:m2"]
