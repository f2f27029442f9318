"""The archive's part of every stage fingerprint (staging.segments.archive_fingerprint): which dumps, how many
messages and the largest rowid, read without walking the messages (benchmarks/RESULTS.md: at 1M messages one
SELECT of both aggregates walked every row, 66-98 CPU-ms per stage that reads the archive, on every run)."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from test_migrations import _v0_data_dir

from staging.archive import open_archive
from staging.segments import archive_fingerprint


def _one_select(archive: sqlite3.Connection) -> str:
    """The digest as it was computed before (one SELECT of both aggregates): the skip rule's history matches."""
    shas = [str(r[0]) for r in archive.execute("SELECT sha256 FROM sources ORDER BY sha256")]
    count = archive.execute("SELECT COUNT(*), COALESCE(MAX(rowid), 0) FROM messages").fetchone()
    return hashlib.sha256(("\n".join(shas) + f"\n{count[0]}:{count[1]}").encode()).hexdigest()


def test_the_archive_fingerprint_reads_no_message_row_and_keeps_its_digest(tmp_path: Path) -> None:
    """Same digest as before (stage runs recorded by the old code still match), a new message changes it, and
    no statement it sends walks the messages table: COUNT(*) alone compiles to SQLite's Count of index cells and
    MAX(rowid) to one seek to the last row (no Rewind, the first step of a walk)."""
    archive = open_archive(_v0_data_dir(tmp_path) / "archive.db")
    sent: list[str] = []
    archive.set_trace_callback(sent.append)
    before = archive_fingerprint(archive)
    archive.set_trace_callback(None)
    assert before == _one_select(archive)
    on_messages = [sql for sql in sent if "FROM messages" in sql]
    assert on_messages
    for sql in on_messages:
        opcodes = {str(row[1]) for row in archive.execute("EXPLAIN " + sql)}
        assert "Rewind" not in opcodes, sql
    archive.execute(
        "INSERT INTO messages (uuid, conversation_id, role, content_type, text, is_active, is_hidden, seq,"
        " content_hash, source_id) SELECT 'new-message', conversation_id, 'user', 'text', 'hello', 1, 0, 99, 'h',"
        " source_id FROM messages LIMIT 1"
    )
    assert archive_fingerprint(archive) != before
    assert archive_fingerprint(archive) == _one_select(archive)
