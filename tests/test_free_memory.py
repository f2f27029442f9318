"""The runner gives a stage's freed memory back to the OS (clients/free_memory.py)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from clients import free_memory

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmRSS and malloc_trim are Linux's")


def resident_mib() -> float:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def test_the_pages_a_closed_sqlite_cache_leaves_resident_are_given_back(tmp_path: Path) -> None:
    """SQLite's page cache allocates page by page: once its connection closes, glibc keeps most of those pages
    resident (fragmented heaps). give_back returns them."""
    db = tmp_path / "big.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
        conn.executemany("INSERT INTO t (body) VALUES (?)", ((f"{i:08d}" * 80,) for i in range(150_000)))
    conn.close()
    before = resident_mib()
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA cache_size = -262144")  # 256 MiB, more than the ~100 MiB file: every page stays cached
    # the pages are allocated between rows read out (a stage keeps some of what it reads): those pin the heap
    kept = [row for i, row in enumerate(conn.execute("SELECT body FROM t")) if i % 100 == 0]
    conn.close()
    left = resident_mib() - before
    assert free_memory.give_back()
    after = resident_mib() - before
    assert left > 40, f"the closed cache left only {left:.0f} MiB: nothing to measure here"
    assert after < left / 2, f"{left:.0f} MiB resident after the close, {after:.0f} MiB after give_back"
    assert len(kept) == 1500


def test_a_stage_run_ends_with_the_memory_given_back(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """run_stage calls give_back once a stage has finished, failed or been skipped (its databases closed)."""
    from flows import stage_runner

    calls: list[bool] = []
    monkeypatch.setattr(stage_runner, "give_back", lambda: calls.append(True) or True)
    monkeypatch.setattr(stage_runner, "fingerprint_of", _raise)
    monkeypatch.setattr(stage_runner, "run_context", lambda run_id: _Context(tmp_path))
    with pytest.raises(RuntimeError, match="stage failed"):
        stage_runner.run_stage(stage_runner.spec("segment"), "r1")
    assert calls == [True]


def _raise(*args: object, **kwargs: object) -> None:
    raise RuntimeError("stage failed")


class _Context:
    def __init__(self, data_dir: Path) -> None:
        from contracts.settings import Settings

        self.settings = Settings(data_dir=data_dir)
        self.exports: list[str] = []
        self.force_format = None
