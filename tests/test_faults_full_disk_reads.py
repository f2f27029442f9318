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


def test_read_only_commands_answer_on_a_full_disk(full_disk: tuple[Path, str], tmp_path: Path) -> None:  # noqa: F811
    """After a run, the disk fills up and the -shm index is gone (none can be made): `archive stats` and
    `staging runs` exit 0 with what the run wrote, and `staging failures` answers too."""
    mount_point, kind = full_disk
    data_dir = mount_point / "data"
    env = process_env(tmp_path / "prefect")
    export = write_chats(tmp_path / "small.jsonl", 3)
    command = [*chatmem_command(), "--data-dir", str(data_dir)]
    done = subprocess.run(
        [*command, "-q", "run", str(export), "--only", "ingest"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
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
