"""Versioned schema migrations: a data dir written by the release before them opens, upgrades and runs.

tests/fixtures/datadir_v0 holds archive.db and staging.db as chatmem wrote them at f78c0db (see its README):
staging.db at user_version 1 with every stage table made by the old `ensure_schema` functions.
"""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import FIXTURES

from contracts.errors import ConfigError
from contracts.settings import Settings
from staging.archive import open_archive
from staging.ledger import open_staging
from staging.migrations import ARCHIVE, STAGING, Migration, migrate, schema_version

V0 = FIXTURES / "datadir_v0"
DATA_TABLES = ("segments", "embeddings", "extractions", "concepts", "topics", "topic_links", "runs", "stage_runs")


def _v0_data_dir(tmp_path: Path) -> Path:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    for name in ("archive.db", "staging.db"):
        with gzip.open(V0 / f"{name}.gz", "rb") as source, (data_dir / name).open("wb") as target:
            shutil.copyfileobj(source, target)
    return data_dir


def _counts(path: Path, tables: tuple[str, ...]) -> dict[str, int]:
    conn = sqlite3.connect(path)
    counts = {table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in tables}
    conn.close()
    return counts


def _schema(conn: sqlite3.Connection) -> dict[str, str]:
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")
    return {name: " ".join(sql.replace("IF NOT EXISTS ", "").split()) for name, sql in rows}


def test_an_old_staging_db_upgrades_in_place_and_keeps_every_row(tmp_path: Path) -> None:
    """staging.db from the old release goes from version 1 to the latest, keeps its rows, and records how."""
    data_dir = _v0_data_dir(tmp_path)
    before = _counts(data_dir / "staging.db", DATA_TABLES)
    assert before["segments"] == 40 and before["concepts"] == 76  # the fixture is what its README says
    old = sqlite3.connect(data_dir / "staging.db")
    assert schema_version(old) == 1
    old.close()

    staging = open_staging(data_dir / "staging.db")
    assert schema_version(staging) == len(STAGING) == STAGING[-1].version
    history = staging.execute("SELECT version, applied_at IS NOT NULL FROM schema_migrations ORDER BY version")
    # v1 predates the history; every later one is applied now
    assert [tuple(row) for row in history] == [(1, 0)] + [(v, 1) for v in range(2, len(STAGING) + 1)]
    staging.close()
    assert _counts(data_dir / "staging.db", DATA_TABLES) == before


def test_an_upgraded_file_has_the_same_schema_as_a_fresh_one(tmp_path: Path) -> None:
    """Old file + migrations == a file created by today's code: same tables, indexes, columns and checks."""
    data_dir = _v0_data_dir(tmp_path)
    upgraded_staging, fresh_staging = open_staging(data_dir / "staging.db"), open_staging(tmp_path / "s.db")
    upgraded_archive, fresh_archive = open_archive(data_dir / "archive.db"), open_archive(tmp_path / "a.db")
    assert _schema(upgraded_staging) == _schema(fresh_staging)
    assert _schema(upgraded_archive) == _schema(fresh_archive)
    assert schema_version(upgraded_archive) == schema_version(fresh_archive) == len(ARCHIVE)
    assert "llm_calls" in _schema(upgraded_staging)  # missing from the offline-only v0 file; made by migration 2


def test_opening_twice_applies_nothing_the_second_time(tmp_path: Path) -> None:
    """Migrations run once: a second open finds the file at the latest version and changes nothing."""
    path = tmp_path / "s.db"
    open_staging(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, STAGING) == []
    assert conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == len(STAGING)


def test_a_file_from_a_newer_chatmem_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    """A schema version above what this code knows is a ConfigError naming the file, not a silent misread."""
    path = tmp_path / "staging.db"
    open_staging(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version=99")
    conn.close()
    with pytest.raises(ConfigError, match=r"staging\.db is at schema version 99.*upgrade chatmem"):
        open_staging(path)


def test_a_failed_migration_leaves_the_file_at_its_old_version(tmp_path: Path) -> None:
    """Each migration is one transaction: a failing one rolls back and the version does not move."""
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)

    def broken(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE half (x)")
        c.execute("SELECT * FROM no_such_table")

    with pytest.raises(sqlite3.OperationalError):
        migrate(conn, [*STAGING, Migration(len(STAGING) + 1, "broken", broken)])
    assert schema_version(conn) == len(STAGING)
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'half'").fetchone() is None


@pytest.mark.prefect
def test_the_pipeline_runs_on_an_upgraded_data_dir(tmp_path: Path, jsonl_export: Path) -> None:
    """A new export goes through ingest..concepts on the old data dir; old and new rows sit side by side."""
    from flows.pipeline import run_pipeline

    data_dir = _v0_data_dir(tmp_path)
    before = _counts(data_dir / "archive.db", ("conversations", "messages"))
    settings = Settings(data_dir=data_dir)
    run_id, results = run_pipeline(settings, [jsonl_export], ["ingest", "segment", "embed", "extract", "concepts"])
    assert [r.status for r in results if r.status == "failed"] == []
    assert results[0].counts["conversations_written"] == 2
    after = _counts(data_dir / "archive.db", ("conversations", "messages"))
    assert after["conversations"] == before["conversations"] + 2 and after["messages"] == before["messages"] + 6
    staging = sqlite3.connect(data_dir / "staging.db")
    assert schema_version(staging) == len(STAGING)
    runs = [row[0] for row in staging.execute("SELECT id FROM runs ORDER BY started_at")]
    assert len(runs) == 2 and runs[-1] == run_id  # the old run's ledger is still there
    segments_by_run = dict(staging.execute("SELECT run_id, COUNT(*) FROM segments GROUP BY run_id").fetchall())
    assert segments_by_run[runs[0]] == 40 and segments_by_run[run_id] >= 2


def test_read_only_commands_upgrade_a_data_dir_an_older_chatmem_wrote(tmp_path: Path) -> None:
    """`staging runs` and `archive stats` on the old data dir answer (no 'no such column'), and leave it upgraded."""
    from click.testing import CliRunner

    from flows.cli import cli
    from staging.migrations import ARCHIVE, STAGING

    data_dir = _v0_data_dir(tmp_path)
    for args in (["staging", "runs", "--json"], ["staging", "failures", "--json"], ["archive", "stats", "--json"]):
        result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    for name, migrations in (("staging.db", STAGING), ("archive.db", ARCHIVE)):
        conn = sqlite3.connect(data_dir / name)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(migrations)
        conn.close()


def test_a_large_file_says_it_is_being_upgraded_and_a_small_or_current_one_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The upgrade of a large data dir takes minutes on whichever command opens it first (a read-only `recall`
    too): that command says so on stderr, once, naming the file and the versions; a current file is silent."""
    from click.testing import CliRunner

    from flows.cli import cli
    from staging import migrations

    data_dir = _v0_data_dir(tmp_path)
    monkeypatch.setattr(migrations, "LARGE_BYTES", 0)  # the fixture is small: any old file counts as large here
    open_staging(tmp_path / "new.db").close()  # a new file has nothing to rewrite
    assert "upgrading" not in caplog.text
    first = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "staging", "runs"])
    assert first.exit_code == 0, first.output
    said = [line for line in first.output.splitlines() if "upgrading" in line]
    assert len(said) == 1, first.output  # `staging runs` opens staging.db only
    assert any(f"{data_dir / 'staging.db'} " in line and f"to {len(STAGING)}," in line for line in said)
    again = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "staging", "runs"])
    assert again.exit_code == 0 and "upgrading" not in again.output  # upgraded once: nothing more to say


def test_the_manifest_counts_migration_counts_what_an_older_load_wrote(tmp_path: Path) -> None:
    """A staging.db at version 12 with a manifest: migration 13 fills load_manifest_counts from it, and its
    triggers keep the counts as rows are inserted, upserted and deleted."""
    from staging.load_state import forget_layer, manifest_count

    path = tmp_path / "staging.db"
    conn = sqlite3.connect(path)
    migrate(conn, [m for m in STAGING if m.version <= 12], name="staging.db")
    rows = [("bolt://g", "Message", f"m{i}", i, "r1") for i in range(5)] + [("bolt://g", "NEXT", "e0", 0, "r1")]
    conn.executemany("INSERT INTO load_manifest VALUES (?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()
    staging = open_staging(path)
    assert schema_version(staging) == len(STAGING) >= 13
    assert (manifest_count(staging, "bolt://g", "Message"), manifest_count(staging, "bolt://g", "NEXT")) == (5, 1)
    upsert = (
        "INSERT INTO load_manifest VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (target, layer, key) DO UPDATE SET row_hash = excluded.row_hash, run_id = excluded.run_id"
    )
    staging.executemany(upsert, [("bolt://g", "Message", f"m{i}", i + 1, "r2") for i in range(3, 8)])  # 2 listed
    staging.execute("DELETE FROM load_manifest WHERE layer = 'Message' AND key IN ('m0', 'm1')")
    staging.commit()
    assert (
        manifest_count(staging, "bolt://g", "Message")
        == 6
        == staging.execute("SELECT COUNT(*) FROM load_manifest WHERE layer = 'Message'").fetchone()[0]
    )
    assert manifest_count(staging, "bolt://other", "Message") == 0
    staging.execute("UPDATE load_manifest SET target = 'bolt://h' WHERE layer = 'NEXT'")  # a copy's target rebased
    assert (manifest_count(staging, "bolt://g", "NEXT"), manifest_count(staging, "bolt://h", "NEXT")) == (0, 1)
    staging.execute("UPDATE load_manifest_counts SET rows = 99 WHERE layer = 'Message'")  # a count gone wrong
    forget_layer(staging, "bolt://g", "Message")
    assert manifest_count(staging, "bolt://g", "Message") == 0  # forgetting a layer starts its count again
