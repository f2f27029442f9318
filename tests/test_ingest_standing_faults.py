"""Faults a cold try found (session 34) that stood past their first run: a file cut short said so once (exit 1, then 0
and "nothing new"), a forced re-read counted its standing quarantine rows as 0, invalid UTF-8 in a file cut short lost
its note and named an offset in the repaired text. Real files under tmp_path, the real CLI, stage and SQLite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from test_ingest_stage import ingest, make_chatgpt_export

from flows.cli import cli


def _cut(path: Path, conversations: int = 6) -> tuple[Path, int]:
    """A ChatGPT export cut short inside its last conversation: (the file, how many conversations are whole)."""
    data = json.dumps(make_chatgpt_export(conversations)).encode()
    last = data.rindex(b'{"id": "c')  # inside the last conversation's mapping: the ones before are whole
    path.write_bytes(data[: last + 40])
    return path, conversations - 1


def _chatmem(data_dir: Path, *args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], catch_exceptions=False)


def _ingest_counts(result: Result) -> dict[str, Any]:
    data = json.loads(result.stdout)
    (stage,) = [s for s in data["stages"] if s["stage"] == "ingest"]
    return {"counts": stage["counts"], "files": data["files"]}


def test_a_forced_re_read_counts_the_quarantine_rows_that_stand(tmp_path: Path) -> None:
    """A file read again on purpose (`--force`) finds its bad records again: its counts say so, though the rows
    (kept by the first read) are not written twice. Before, a forced re-read said "quarantined 0"."""
    path, whole = _cut(tmp_path / "conversations.json")
    archive, first = ingest(tmp_path / "data", path)
    assert first.counts["quarantined"] == 1 and first.counts["conversations_written"] == whole
    archive.close()
    archive, again = ingest(tmp_path / "data", path, force=True)
    assert again.counts["quarantined"] == 1
    assert archive.execute("SELECT COUNT(*) FROM quarantine").fetchone()[0] == 1  # not written twice
