"""A full SQLite temporary directory (issue 23): a full cues build sorts its edges in a temporary table, which
SQLite keeps in its own temporary directory (`SQLITE_TMPDIR`, else `TMPDIR`, else /var/tmp, /usr/tmp, /tmp, the
working directory), not in the data dir. The one line the user reads names both places with the room left on
each, and how to move the temporary one (staging/space.py).

The CLI test fills a real 1 MiB tmpfs mounted for it (root only; said as a skip reason elsewhere); the message
tests run everywhere on an SQLITE_FULL raised by SQLite itself (a capped temporary database).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_support import chatmem_command, process_env, said_lines, write_chats
from stage_support import ingest_stage

from contracts.settings import Settings
from staging import memory as store
from staging.archive import open_archive
from staging.db import describe_storage_failure, storage_error
from staging.ledger import open_run, open_staging
from staging.memory import ContentRow
from staging.space import size_text, sqlite_temp_dir

RUN = "r20260101T000000-aaaaaa"


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB filesystem, unmounted after the test."""
    mount_point = tmp_path / "small-tmp"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root only): {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


@pytest.mark.slow
def test_a_cues_build_that_fills_sqlites_temporary_directory_names_it_in_one_line(
    small_tmpfs: Path, tmp_path: Path
) -> None:
    """`chatmem stage cues` with SQLITE_TMPDIR on a 1 MiB disk (6,000 messages: the pending edges outgrow the
    temporary database's page cache): exit 1, one line naming SQLite's temporary directory as full (0 bytes free),
    the data dir's disk with its room, SQLITE_TMPDIR and the re-run command; the run is failed, not succeeded."""
    data_dir = tmp_path / "data"
    settings = Settings(data_dir=data_dir)
    export = write_chats(tmp_path / "chats.jsonl", 1000)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        open_run(staging, stages=["ingest"], exports=[str(export)], settings={}, code_version="test", run_id=RUN)
        assert ingest_stage.run(archive, staging, run_id=RUN, settings=settings, exports=[export]).status == "succeeded"
    finally:
        archive.close()
        staging.close()
    env = process_env(tmp_path / "prefect", SQLITE_TMPDIR=str(small_tmpfs))
    command = [*chatmem_command(), "--data-dir", str(data_dir), "stage", "cues", "--run-id", RUN]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)
    assert result.returncode == 1, result.stderr[-2000:]
    lines = said_lines(result.stderr)  # the run's progress lines aside
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    line = lines[0]
    assert "the disk is full" in line and "SQLITE_FULL" in line
    assert f"its temporary directory ({small_tmpfs}: 0 bytes free;" in line, line
    assert f"the data dir's disk ({data_dir}: " in line and "set SQLITE_TMPDIR to a directory with room" in line
    assert f"re-run: chatmem --data-dir {data_dir} stage cues --run-id {RUN}" in line
    with sqlite3.connect(f"file:{settings.staging_path}?mode=ro", uri=True) as conn:
        status = conn.execute("SELECT status FROM stage_runs WHERE run_id = ? AND stage = 'cues'", (RUN,)).fetchone()
    assert status[0] in ("failed", "interrupted")


def _content(uuid: str) -> ContentRow:
    return ContentRow(uuid, "message", "c1", 0, "user", None, None, None, "jsonl", f"user: {uuid}", 3)


def _fill_temporary_store(staging: sqlite3.Connection) -> sqlite3.OperationalError:
    """SQLite's own SQLITE_FULL from a full build's pending edges, the temporary database capped at 16 pages."""
    staging.execute("PRAGMA temp.max_page_count = 16")
    with pytest.raises(sqlite3.OperationalError, match="full") as failed, store.RunWriter(staging, RUN) as writer:
        content = [_content(f"m{i:04d}") for i in range(1000)]
        writer.add(content, [(f"concept:{k}", c.content_id, "cue-content", 0.5) for k in range(8) for c in content], [])
        writer.finish({})
    return failed.value


def test_a_full_temporary_store_names_the_data_dir_and_sqlites_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The line for a real SQLITE_FULL names staging.db, the data dir's disk and the temporary directory SQLite
    uses here (SQLITE_TMPDIR when set), each with its free space, and SQLITE_TMPDIR as the way to move it."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    temp = tmp_path / "sqlite-tmp"
    temp.mkdir()
    monkeypatch.setenv("SQLITE_TMPDIR", str(temp))
    staging = open_staging(data_dir / "staging.db")
    line = describe_storage_failure(_fill_temporary_store(staging), staging)
    free = size_text(shutil.disk_usage(temp).free).split()[1]  # the unit; the amount moves with the shared disk
    assert line.startswith(f"{data_dir / 'staging.db'}: the disk is full (database or disk is full"), line
    assert f"the data dir's disk ({data_dir}: " in line and f"its temporary directory ({temp}, the same disk: " in line
    assert f" {free} free;" in line and "set SQLITE_TMPDIR to a directory with room" in line
    assert "\n" not in line
    cli_line = str(storage_error(_fill_temporary_store(staging), None, data_dir=data_dir))  # the CLI's, outside a stage
    assert (
        cli_line.startswith(f"{data_dir} (archive.db / staging.db): the disk is full")
        and f"its temporary directory ({temp}, " in cli_line
    )


def test_sqlites_temporary_directory_is_chosen_as_sqlite_chooses_it(tmp_path: Path) -> None:
    """SQLITE_TMPDIR first, then TMPDIR, then /var/tmp, /usr/tmp, /tmp and the working directory: the first that is
    a directory this process may write; a variable naming no directory (or a file) is passed over."""
    first, second = tmp_path / "first", tmp_path / "second"
    second.mkdir()
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert sqlite_temp_dir({"SQLITE_TMPDIR": str(second), "TMPDIR": str(tmp_path)}) == second
    assert sqlite_temp_dir({"SQLITE_TMPDIR": str(first), "TMPDIR": str(second)}) == second
    assert sqlite_temp_dir({"SQLITE_TMPDIR": str(a_file), "TMPDIR": str(second)}) == second
    fallback = next(Path(d) for d in ("/var/tmp", "/usr/tmp", "/tmp") if os.access(d, os.W_OK | os.X_OK))
    assert sqlite_temp_dir({"SQLITE_TMPDIR": "", "TMPDIR": str(first)}) == fallback
    assert size_text(0) == "0 bytes" and size_text(1536) == "1.5 KiB" and size_text(3 * 1024**4) == "3.0 TiB"
