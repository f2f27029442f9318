"""A service's next full export (every conversation again) costs what changed in ingest: a conversation whose every
stored message is in the dump is not read again to retire missing ones (staging/archive_update.py `_retire_missing`: an
index count, no row read); a conversation that lost a message still has it retired, as before.

Real stage (ingest, through the stage runner), real SQLite, statements traced on the archive connection.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stage_support import ingest_stage

from contracts.settings import Settings
from staging.archive import open_archive
from staging.ledger import open_run, open_staging
from tests.test_ingest_stage import make_chatgpt_export

RETIRE_READ = "SELECT uuid, is_active, seq FROM messages WHERE conversation_id"


def ingest_traced(data_dir: Path, export: Path, run_id: str) -> tuple[dict[str, Any], list[str]]:
    settings = Settings(data_dir=data_dir)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    sent: list[str] = []
    try:
        open_run(staging, stages=["ingest"], exports=[str(export)], settings={}, code_version="test", run_id=run_id)
        archive.set_trace_callback(sent.append)
        result = ingest_stage.run(archive, staging, run_id=run_id, settings=settings, exports=[export])
        archive.set_trace_callback(None)
        assert result.status == "succeeded", result
        return result.counts, sent
    finally:
        archive.close()
        staging.close()


def dropped_last_message(conversation: dict[str, Any]) -> dict[str, Any]:
    """The conversation without its last turn (the export of a service that lost it)."""
    mapping = conversation["mapping"]
    leaf = conversation["current_node"]
    parent = mapping[leaf]["parent"]
    mapping[parent]["children"].remove(leaf)
    del mapping[leaf]
    conversation["current_node"] = parent
    return conversation


def test_a_full_reexport_reads_no_messages_to_retire_unless_one_is_missing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    conversations = make_chatgpt_export(6, turns=4)
    first = tmp_path / "first.json"
    first.write_text(json.dumps(conversations), encoding="utf-8")
    counts, _ = ingest_traced(data, first, "r1")
    assert counts["messages_inserted"] == 24

    again = tmp_path / "again.json"  # the same conversations, other bytes: read again, nothing changed
    again.write_text(json.dumps(conversations, indent=1), encoding="utf-8")
    counts, sent = ingest_traced(data, again, "r2")
    assert counts["messages_unchanged"] == 24 and counts["messages_retired"] == 0
    assert not [sql for sql in sent if RETIRE_READ in sql]

    conversations[2] = dropped_last_message(conversations[2])
    lost = tmp_path / "lost.json"
    lost.write_text(json.dumps(conversations), encoding="utf-8")
    counts, sent = ingest_traced(data, lost, "r3")
    assert counts["messages_retired"] == 1
    reads = [sql for sql in sent if RETIRE_READ in sql]
    assert len(reads) == 1 and "'c2'" in reads[0]
    archive = open_archive(data / "archive.db")
    try:
        inactive = archive.execute("SELECT uuid, seq FROM messages WHERE is_active = 0").fetchall()
    finally:
        archive.close()
    assert [tuple(r) for r in inactive] == [("c2-m3", 3)]
