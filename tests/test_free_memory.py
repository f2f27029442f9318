"""The runner gives a stage's freed memory back to the OS (clients/free_memory.py)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clients import free_memory

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or free_memory._malloc_trim() is None,
    reason="VmRSS is Linux's and malloc_trim glibc's",
)


SCRIPT = """
import sqlite3, sys
from pathlib import Path
from clients import free_memory

def resident_mib():
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 1024

before = resident_mib()
conn = sqlite3.connect(sys.argv[1])
conn.execute("PRAGMA cache_size = -262144")  # 256 MiB, more than the file: every page read stays cached
# the pages are allocated between rows read out (a stage keeps some of what it reads): those pin the heap
kept = [row for i, row in enumerate(conn.execute("SELECT body FROM t")) if i % 100 == 0]
conn.close()
left = resident_mib() - before
given = free_memory.give_back()
print(len(kept), given, left, resident_mib() - before)
"""


def test_the_pages_a_closed_sqlite_cache_leaves_resident_are_given_back(tmp_path: Path) -> None:
    """SQLite's page cache allocates page by page: once its connection closes, glibc keeps most of those pages
    resident (fragmented heaps). give_back returns them. In a fresh process: a test worker's heap is not."""
    db = tmp_path / "big.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
        conn.executemany("INSERT INTO t (body) VALUES (?)", ((f"{i:08d}" * 80,) for i in range(150_000)))
    conn.close()
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(db)], cwd=root, capture_output=True, text=True, check=True)
    kept, given, left, after = out.stdout.split()
    assert (kept, given) == ("1500", "True")
    assert float(left) > 40, f"the closed cache left only {float(left):.0f} MiB: nothing to measure here"
    assert float(after) < float(left) / 2, f"{left} MiB resident after the close, {after} MiB after give_back"


def test_a_stage_run_ends_with_the_memory_given_back(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """run_stage calls give_back once a stage has finished, failed or been skipped (its databases closed)."""
    from flows import stage_runner

    calls: list[str] = []

    def opened(open_db: Any) -> Any:
        def wrapped(path: Path) -> Any:
            return _Closing(open_db(path), calls, path.name)

        return wrapped

    monkeypatch.setattr(stage_runner, "open_archive", opened(stage_runner.open_archive))
    monkeypatch.setattr(stage_runner, "open_staging", opened(stage_runner.open_staging))
    monkeypatch.setattr(stage_runner, "give_back", lambda: calls.append("give_back") or True)
    monkeypatch.setattr(stage_runner, "fingerprint_of", _raise)
    monkeypatch.setattr(stage_runner, "run_context", lambda run_id: _Context(tmp_path))
    with pytest.raises(RuntimeError, match="stage failed"):
        stage_runner.run_stage(stage_runner.spec("segment"), "r1")
    assert calls == ["archive.db closed", "staging.db closed", "give_back"]  # after the databases' caches are gone


def _raise(*args: object, **kwargs: object) -> None:
    raise RuntimeError("stage failed")


class _Closing:
    """A connection whose close is recorded."""

    def __init__(self, conn: Any, calls: list[str], name: str) -> None:
        self.conn, self.calls, self.name = conn, calls, name

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)

    def close(self) -> None:
        self.conn.close()
        self.calls.append(f"{self.name} closed")


class _Context:
    def __init__(self, data_dir: Path) -> None:
        from contracts.settings import Settings

        self.settings = Settings(data_dir=data_dir)
        self.exports: list[str] = []
        self.force_format = None
