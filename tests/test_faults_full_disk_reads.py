"""Issue 22: on a full disk the read-only commands still answer. A database in WAL mode is read through its -shm
index, which a reader must create or grow; with no room left that failed (SQLITE_IOERR_SHMSIZE) and every
`staging` / `archive` command said "cannot be opened". Real processes on a real full filesystem (a tmpfs the test
mounts; where mounting is not allowed, RLIMIT_FSIZE, a real write limit the kernel enforces)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from fault_support import chatmem_command, process_env, write_chats
from test_faults_state import _limit_file_size, full_disk  # noqa: F401  (the fixture: a real full disk)


def _ingest_three_chats(data_dir: Path, tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """`chatmem run small.jsonl --only ingest` (3 conversations) into `data_dir`: the command and environment."""
    env = process_env(tmp_path / "prefect")
    export = write_chats(tmp_path / "small.jsonl", 3)
    command = [*chatmem_command(), "--data-dir", str(data_dir)]
    done = subprocess.run(
        [*command, "-q", "run", str(export), "--only", "ingest"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return command, env


def test_read_only_commands_answer_on_a_full_disk(full_disk: tuple[Path, str], tmp_path: Path) -> None:  # noqa: F811
    """After a run, the disk fills up and the -shm index is gone (none can be made): `archive stats` and
    `staging runs` exit 0 with what the run wrote, and `staging failures` answers too."""
    mount_point, kind = full_disk
    data_dir = mount_point / "data"
    command, env = _ingest_three_chats(data_dir, tmp_path)
    for index in data_dir.glob("*-shm"):  # nothing has the databases open: as after a reboot, SQLite rebuilds it
        index.unlink()
    limit = None
    if kind == "tmpfs":
        with (mount_point / "filler").open("wb", buffering=0) as filler:  # fill what is left, to the last block
            try:
                while filler.write(b"\0" * 4096):
                    pass
            except OSError:
                pass
        assert shutil.disk_usage(mount_point).free < 4096
    else:
        limit = _limit_file_size  # the -shm index cannot be written past the limit either

    def read(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=120, preexec_fn=limit)

    stats = read("archive", "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["conversations"] == 3
    runs = read("staging", "runs", "--json")
    assert runs.returncode == 0, runs.stderr
    assert [r["stage_status"] for r in json.loads(runs.stdout)] == [{"ingest": "succeeded"}]
    assert read("staging", "failures").returncode == 0


def test_read_only_commands_answer_where_no_wal_index_can_be_made(tmp_path: Path) -> None:
    """A data dir copied with its -wal files but no -shm onto a read-only mount (a backup): SQLite must make the
    -shm to read the WAL and cannot (SQLITE_CANTOPEN), and `archive stats` said "cannot be opened". Here the -shm
    names a path in a folder that does not exist: as on a read-only mount (and as root, whom permissions do not
    stop), it cannot be created. `archive stats` and `staging runs` answer with what the run wrote, WAL included."""
    data_dir = tmp_path / "data"
    _, env = _ingest_three_chats(data_dir, tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(data_dir, copy, ignore=shutil.ignore_patterns("*-shm"))
    assert any(copy.glob("*.db-wal")), "the run's databases keep a -wal: the case this test is about"
    for wal in copy.glob("*.db-wal"):
        wal.with_name(wal.name.removesuffix("-wal") + "-shm").symlink_to(tmp_path / "no-such-folder" / "index")
    command = [*chatmem_command(), "--data-dir", str(copy)]
    stats = subprocess.run([*command, "archive", "stats", "--json"], capture_output=True, text=True, env=env)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["conversations"] == 3
    runs = subprocess.run([*command, "staging", "runs", "--json"], capture_output=True, text=True, env=env)
    assert runs.returncode == 0, runs.stderr
    assert [r["stage_status"] for r in json.loads(runs.stdout)] == [{"ingest": "succeeded"}]
