"""Faults a cold try found (session 34) that stood past their first run: a file cut short said so once (exit 1, then 0
and "nothing new"), a forced re-read counted its standing quarantine rows as 0, invalid UTF-8 in a file cut short lost
its note and named an offset in the repaired text. Real files under tmp_path, the real CLI, stage and SQLite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
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


@pytest.mark.prefect
def test_a_file_cut_short_exits_1_at_every_run_while_it_stays_cut(tmp_path: Path) -> None:
    """A scheduled `chatmem run` over a file cut short sees the fault at every run, not once: the re-run reads it
    again (what arrived is not written again: known by its bytes), says it cut short with what the archive holds and
    exits 1, as a file that failed does. Before, the re-run said "nothing new" and exited 0. The whole file, once
    there, arrives and the runs exit 0."""
    path, whole = _cut(tmp_path / "conversations.json")
    data_dir = tmp_path / "data"
    first = _chatmem(data_dir, "-q", "run", path, "--only", "ingest")
    assert first.exit_code == 1 and f"{whole} complete conversation(s) arrived" in first.stdout, first.output
    for _ in range(2):
        again = _chatmem(data_dir, "-q", "run", path, "--only", "ingest")
        assert again.exit_code == 1, again.output
        assert "nothing new:" not in again.stdout and "but 1 file cut short (exit code 1)" in again.stdout
        assert "nothing new before the cut" in again.stdout and "1 file cut short in run" in again.stderr
    counts = _ingest_counts(_chatmem(data_dir, "-q", "run", path, "--only", "ingest", "--json"))
    assert counts["counts"]["conversations_known_by_bytes"] == whole and counts["counts"]["messages_inserted"] == 0
    assert counts["counts"]["quarantined"] == 1 and [f["status"] for f in counts["files"]] == ["partial"]
    path.write_text(json.dumps(make_chatgpt_export(whole + 1)), encoding="utf-8")  # the whole download
    done = _chatmem(data_dir, "-q", "run", path, "--only", "ingest")
    assert done.exit_code == 0, done.output
    assert _chatmem(data_dir, "-q", "run", path, "--only", "ingest").stdout.startswith("nothing new:")
