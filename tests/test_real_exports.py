"""Every real export under ../shared/data/exports goes through the ingest stage with nothing lost.

The expected message count of each file is computed here independently, with the standard library's json
and the format's own structure, not with chatmem's parsers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from stage_support import ingest_run
from test_detect import EXPORTS, SHARED, SHARED_EXPECTED

from contracts.errors import StageError
from contracts.settings import Settings
from staging.archive import archive_stats, open_archive
from staging.ledger import open_run, open_staging

SUPPORTED = {p: fmt for p, fmt in SHARED_EXPECTED.items() if fmt in ("chatgpt", "claude", "librechat", "chatbotui")}


def independent_count(fmt: str, data: Any) -> int:
    """Messages in an export, counted from its raw structure."""
    if fmt == "chatgpt":
        return sum(1 for c in data for node in c["mapping"].values() if node.get("message") is not None)
    if fmt == "claude":
        conversations = data if isinstance(data, list) else [data]
        return sum(len(c["chat_messages"]) for c in conversations)
    if fmt == "librechat":

        def walk(messages: list[dict[str, Any]]) -> int:
            return sum(1 + walk(m.get("children") or []) for m in messages)

        return walk(data["messages"])
    if fmt == "chatbotui":
        history = data["history"] if isinstance(data, dict) else data
        return sum(len(c["messages"]) for c in history)
    raise AssertionError(fmt)


def _ingest(data_dir: Path, path: Path) -> tuple[dict[str, int], Any]:
    settings = Settings(data_dir=data_dir)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    run_id = open_run(staging, stages=["ingest"], exports=[str(path)], settings={}, code_version="test")
    result = ingest_run(archive, staging, run_id=run_id, settings=settings, exports=[path])
    return archive_stats(archive), result


@pytest.mark.parametrize("relative", sorted(SUPPORTED), ids=sorted(SUPPORTED))
def test_real_export_arrives_whole(relative: str, tmp_path: Path) -> None:
    """Archive message count equals the file's own count, and nothing good is quarantined."""
    path = EXPORTS / relative
    if not SHARED.is_dir():
        pytest.skip("../shared/data is absent (CI always has it)")
    expected = independent_count(SUPPORTED[relative], json.loads(path.read_bytes()))
    stats, result = _ingest(tmp_path, path)
    assert stats["messages"] == expected
    assert stats["quarantined"] == 0 and result.counts["files_failed"] == 0
    assert stats["conversations"] >= 1


def test_every_real_export_is_ingested_once_in_one_run_and_again_for_free(tmp_path: Path) -> None:
    """All real exports in one run: counts add up; a second run skips every file and changes nothing."""
    paths = [EXPORTS / p for p in sorted(SUPPORTED)]
    if not SHARED.is_dir():
        pytest.skip("../shared/data is absent (CI always has it)")
    settings = Settings(data_dir=tmp_path)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    first = ingest_run(
        archive,
        staging,
        run_id=open_run(staging, stages=["ingest"], exports=[], settings={}, code_version="t"),
        settings=settings,
        exports=paths,
    )
    stats = archive_stats(archive)
    second = ingest_run(
        archive,
        staging,
        run_id=open_run(staging, stages=["ingest"], exports=[], settings={}, code_version="t"),
        settings=settings,
        exports=paths,
    )
    assert first.counts["messages_read"] >= stats["messages"] > 0
    assert second.status == "skipped" and archive_stats(archive) == stats


def test_the_redacted_skeleton_fails_with_one_line_naming_the_file(tmp_path: Path) -> None:
    """The invalid export (placeholders, not JSON) is a clear one-line error naming the file."""
    path = EXPORTS / "chatgpt/invalid-skeleton/sample/conversations.json"
    if not SHARED.is_dir():
        pytest.skip("../shared/data is absent (CI always has it)")
    with pytest.raises(StageError) as error:
        _ingest(tmp_path, path)
    message = str(error.value)
    assert str(path) in message and "\n" not in message and "invalid JSON" in message
