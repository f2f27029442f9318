"""Opening another connection must not drop this process's SQLite locks on the database (staging.db, archive.db).

POSIX releases every fcntl lock a process holds on a file when any descriptor of that file is closed. If opening
a connection reads the file with Python's open()/close() (as `check_database` did), a second process that then
closes its own connection takes itself for the last user: it checkpoints and deletes the -wal and -shm under the
first process's live connections. That process's later commits go to an unlinked WAL and are lost to everyone
else; with concurrent readers it shows as SQLITE_IOERR_SHORT_READ or a damaged header. Real files, real processes.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from staging.db import WAL_SIZE_LIMIT, connect, connect_readonly

OTHER_READER = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT COUNT(*) FROM t'); c.close()"
COUNT = "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM t').fetchone()[0])"


def _in_other_process(code: str, db: Path) -> str:
    return subprocess.run([sys.executable, "-c", code, str(db)], check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("second_open", [connect, connect_readonly], ids=["connect", "connect_readonly"])
def test_a_second_connection_keeps_the_wal_of_the_first_alive(
    tmp_path: Path, second_open: Callable[[Path], sqlite3.Connection]
) -> None:
    """A writer's commit after another of its connections opened and another process read is seen by everyone."""
    db = tmp_path / "staging.db"
    writer = connect(db)
    writer.execute("CREATE TABLE t(x INTEGER)")
    writer.execute("INSERT INTO t VALUES (1)")
    second = second_open(db)  # what the ledger, the readers in threads and the inspection commands do
    _in_other_process(OTHER_READER, db)  # e.g. the sqlite3 CLI or `chatmem staging runs`, opened and closed
    assert db.with_name("staging.db-wal").exists(), "another process deleted the WAL the writer still uses"
    writer.execute("INSERT INTO t VALUES (2)")
    assert _in_other_process(COUNT, db).strip() == "2"
    second.close()
    writer.close()


def test_a_connection_opened_after_another_process_closed_reads_the_writers_commits(tmp_path: Path) -> None:
    """The production symptom: a later connect() in the writing process reads, not SQLITE_IOERR_SHORT_READ."""
    db = tmp_path / "staging.db"
    writer = connect(db)
    writer.execute("CREATE TABLE t(x BLOB)")
    writer.executemany("INSERT INTO t VALUES (randomblob(3000))", [()] * 50)
    reader = connect(db)  # a reader in a thread, the write-behind ledger
    _in_other_process(OTHER_READER, db)
    writer.executemany("INSERT INTO t VALUES (randomblob(3000))", [()] * 50)  # frames the wal-index now points at
    late = connect(db)  # the next stage's connection, or the ledger's
    assert tuple(late.execute("SELECT COUNT(*), SUM(LENGTH(x)) FROM t").fetchone()) == (100, 300_000)
    for conn in (late, reader, writer):
        conn.close()


def test_the_wal_shrinks_back_after_a_large_transaction(tmp_path: Path) -> None:
    """A transaction larger than the WAL's working size grows the -wal file; once checkpointed, the next write cuts
    it back to WAL_SIZE_LIMIT instead of keeping the largest size it ever had (the staging.db of a 250k archive
    kept a 3.5 GB WAL for months after an upgrade)."""
    db = tmp_path / "big.db"
    conn = connect(db)
    conn.execute("CREATE TABLE t (v BLOB)")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO t VALUES (zeroblob(1 << 20))", [()] * 96)  # 96 MiB in one transaction
    conn.execute("COMMIT")
    wal = db.with_name(db.name + "-wal")
    assert wal.stat().st_size > WAL_SIZE_LIMIT
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    conn.execute("INSERT INTO t VALUES (x'00')")  # the next write restarts the WAL from its start
    assert wal.stat().st_size <= WAL_SIZE_LIMIT
    conn.close()
