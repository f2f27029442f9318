"""staging/inspect.py: read-only queries over real databases written by the real ingest stage (no Prefect)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from stage_support import ingest_run

from contracts.errors import ConfigError, StageError
from contracts.settings import Settings
from staging import inspect as inspection
from staging.archive import open_archive
from staging.db import connect_readonly
from staging.ledger import StageRun, close_run, new_run_id, open_run, open_staging


def _ingest(settings: Settings, run_id: str, *exports: Path) -> str | None:
    """One run of the ingest stage, recorded like the pipeline records it. Returns the error, if any."""
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        paths = [str(p) for p in exports]
        open_run(staging, stages=["ingest"], exports=paths, settings={}, code_version="t", run_id=run_id)
        try:
            ingest_run(archive, staging, run_id=run_id, settings=settings, exports=list(exports))
        except StageError as exc:
            close_run(staging, run_id, error=str(exc))
            return str(exc)
        close_run(staging, run_id)
        return None
    finally:
        archive.close()
        staging.close()


@pytest.fixture
def ledger(tmp_path: Path, make_jsonl: Callable[..., Path]) -> tuple[Settings, Path, Path]:
    """Run r1 ingests a good JSONL file with one bad line beside a malformed file: the good one arrives, the other
    fails, and the stage succeeds (a bad file does not hold the others back); nothing else."""
    settings = Settings(data_dir=tmp_path / "data")
    good = make_jsonl(tmp_path / "good.jsonl")
    with good.open("a", encoding="utf-8") as handle:
        handle.write('{"conversation_id": "j9", "role": "user"}\n')  # no id, no text: quarantined
    bad = tmp_path / "bad.json"
    bad.write_text('[{"mapping": {', encoding="utf-8")
    assert _ingest(settings, "r1", good, bad) is None
    return settings, good, bad


def _ro(path: Path) -> sqlite3.Connection:
    return connect_readonly(path)


def test_list_tables_counts_every_table_of_both_databases(ledger: tuple[Settings, Path, Path]) -> None:
    settings, _, _ = ledger
    for path in (settings.staging_path, settings.archive_path):
        conn = _ro(path)
        for row in inspection.list_tables(conn):
            if row["type"] == "table":
                expected = conn.execute(f'SELECT COUNT(*) FROM "{row["table"]}"').fetchone()[0]
                assert row["rows"] == expected
            else:
                assert row["rows"] is None  # a view is listed, not counted
        conn.close()
    names = inspection.table_names(_ro(settings.archive_path))
    assert {"sources", "conversations", "messages", "quarantine", "message_chronology"} <= set(names)


def test_show_rows_filters_by_run_and_limits(ledger: tuple[Settings, Path, Path], tmp_path: Path) -> None:
    settings, good, _ = ledger
    assert _ingest(settings, "r2", good) is None
    conn = _ro(settings.staging_path)
    assert {row["run_id"] for row in inspection.show_rows(conn, "ingest_files", run_id="r2")} == {"r2"}
    assert len(inspection.show_rows(conn, "ingest_files", run_id="r1")) == 2
    assert len(inspection.show_rows(conn, "ingest_files", limit=1)) == 1
    assert [row["id"] for row in inspection.show_rows(conn, "runs", run_id="r2")] == ["r2"]


def test_show_rows_rejects_unknown_tables_and_sql(ledger: tuple[Settings, Path, Path]) -> None:
    settings, _, _ = ledger
    conn = _ro(settings.staging_path)
    for name in ("nope", 'runs"; DROP TABLE runs; --', "sqlite_master"):
        with pytest.raises(ConfigError, match="unknown table") as caught:
            inspection.show_rows(conn, name)
        assert caught.value.exit_code == 2
    with pytest.raises(ConfigError, match="no run_id column"):
        inspection.show_rows(_ro(settings.archive_path), "messages", run_id="r1")
    assert inspection.show_rows(conn, "runs")  # still there


def test_list_runs_newest_first_with_stage_status(ledger: tuple[Settings, Path, Path]) -> None:
    settings, good, _ = ledger
    assert _ingest(settings, "r2", good) is None
    runs = inspection.list_runs(_ro(settings.staging_path))
    assert [run["id"] for run in runs] == ["r2", "r1"]
    assert runs[0]["status"] == "succeeded" and runs[0]["stage_status"] == {"ingest": "skipped"}
    # r1 read a bad file beside the good one: its stage succeeded, the run is incomplete (its command exited 1)
    assert runs[1]["status"] == "incomplete" and runs[1]["stage_status"] == {"ingest": "succeeded"}
    assert (runs[1]["incomplete"], runs[1]["files_failed"]) == ("1 file failed", 1)
    assert runs[1]["exports"] == [str(p) for p in ledger[1:]]
    assert len(inspection.list_runs(_ro(settings.staging_path), limit=1)) == 1


def test_failures_lists_failed_stage_file_and_quarantine(ledger: tuple[Settings, Path, Path]) -> None:
    """r1's failed file and the good file's quarantined line; then r1b, the bad file alone (nothing arrived), whose
    failed stage is listed with the command that re-runs it."""
    settings, good, bad = ledger
    found = inspection.failures(_ro(settings.staging_path), _ro(settings.archive_path))
    assert found["stage_runs"] == [] and found["runs"] == []
    assert [(f["run_id"], f["path"], f["status"]) for f in found["files"]] == [("r1", str(bad), "failed")]
    assert _ingest(settings, "r1b", bad) is not None
    found = inspection.failures(_ro(settings.staging_path), _ro(settings.archive_path))
    [stage] = found["stage_runs"]
    assert stage["run_id"] == "r1b" and "chatmem stage ingest --run-id r1b" in stage["rerun_hint"]
    assert [(f["run_id"], f["path"], f["status"]) for f in found["files"]] == [("r1b", str(bad), "failed")]
    [group] = found["quarantine"]
    assert group["source"] == str(good) and group["rows"] == 1


def test_failures_clear_once_the_stage_is_rerun_with_success(ledger: tuple[Settings, Path, Path]) -> None:
    settings, _, bad = ledger
    bad.write_text('{"conversation_id": "k", "id": "k1", "role": "user", "text": "ok"}\n', encoding="utf-8")
    [run] = inspection.list_runs(_ro(settings.staging_path))
    assert _ingest(settings, "r1", *map(Path, run["exports"])) is None  # the same run, re-run
    found = inspection.failures(_ro(settings.staging_path))
    assert found["stage_runs"] == [] and found["files"] == []


def test_a_later_successful_run_with_the_same_stages_supersedes_a_failed_one(
    ledger: tuple[Settings, Path, Path], make_jsonl: Callable[..., Path], tmp_path: Path
) -> None:
    """A failed run stops needing attention once a later run with the same stages succeeds (its file stays
    listed until that file is ingested); a later run with fewer stages does not supersede it."""
    settings, _, bad = ledger
    assert _ingest(settings, "r1b", bad) is not None  # the bad file alone: nothing arrived, the run failed
    staging = open_staging(settings.staging_path)
    try:  # a later successful run that selected no stage: r1b still needs attention
        open_run(staging, stages=[], exports=[], settings={}, code_version="t", run_id="r1c")
        close_run(staging, "r1c")
        assert staging.execute("SELECT status FROM runs WHERE id = 'r1c'").fetchone()[0] == "succeeded"
    finally:
        staging.close()
    assert [r["run_id"] for r in inspection.failures(_ro(settings.staging_path))["runs"]] == ["r1b"]
    assert _ingest(settings, "r2", make_jsonl(tmp_path / "other.jsonl")) is None  # a new run, same stages
    found = inspection.failures(_ro(settings.staging_path))
    assert found["runs"] == [] and found["stage_runs"] == []
    assert [f["path"] for f in found["files"]] == [str(bad)]
    assert {r["id"]: r["status"] for r in inspection.list_runs(_ro(settings.staging_path))}["r1b"] == "failed"


def test_run_files_reports_each_file_of_a_run(ledger: tuple[Settings, Path, Path]) -> None:
    settings, good, bad = ledger
    files = {row["path"]: row for row in inspection.run_files(_ro(settings.staging_path), "r1")}
    assert files[str(good)]["status"] == "ingested" and files[str(good)]["messages_inserted"] == 6
    assert files[str(good)]["quarantined"] == 1
    assert files[str(bad)]["status"] == "failed" and str(bad) in files[str(bad)]["detail"]


def test_run_ids_sort_in_the_order_runs_were_opened_even_within_one_second() -> None:
    """Run ids made back to back (many per second) are unique, keep the rNNNNNNNNTNNNNNN-xxxxxx form, and sort in
    the order they were made: "the latest run" is the largest id."""
    ids = [new_run_id() for _ in range(2_000)]
    assert len(set(ids)) == len(ids) and sorted(ids) == ids
    assert all(re.fullmatch(r"r\d{8}T\d{6}-[0-9a-f]{6}", run_id) for run_id in ids)


def test_a_run_resumed_with_other_stages_names_the_stage_that_failed_in_its_resume_command(tmp_path: Path) -> None:
    """`run --only ingest`, then `run --from segment --run-id R` whose load fails: the run now selects every stage
    it was asked for, so its resume command names load (it named ingest, which had succeeded)."""
    order = ("ingest", "segment", "embed", "load")
    conn = open_staging(tmp_path / "staging.db")
    run_id = open_run(conn, stages=["ingest"], exports=[], settings={}, code_version="t", order=order)

    def stage(name: str, ok: bool) -> None:
        entry = StageRun(conn, run_id=run_id, stage=name, input_fingerprint="f", settings={}, code_version="t")
        if ok:
            entry.succeed(rows_in=0, rows_out=0, counts={})
        else:
            entry.fail("it broke", f"chatmem stage {name} --run-id {run_id}")

    stage("ingest", True)
    close_run(conn, run_id)
    open_run(
        conn, stages=["segment", "embed", "load"], exports=[], settings={}, code_version="t", run_id=run_id, order=order
    )
    stage("segment", True)
    stage("embed", True)
    stage("load", False)
    close_run(conn, run_id, error="stage load failed")
    (run,) = inspection.list_runs(conn)
    assert run["stages"] == ["ingest", "segment", "embed", "load"]
    assert run["resume"] == f"chatmem stage load --run-id {run_id}"


def test_a_failed_run_that_a_later_run_went_through_again_has_nothing_to_resume(tmp_path: Path) -> None:
    """A run whose load failed, then a later run of the same stages that succeeded: `staging runs` still lists the
    failed one, but with no resume command (it would only repeat the later run; `staging failures` leaves it out)."""
    order = ("ingest", "load")
    conn = open_staging(tmp_path / "staging.db")

    def one_run(load_ok: bool) -> str:
        run_id = open_run(conn, stages=list(order), exports=[], settings={}, code_version="t", order=order)
        for name in order:
            entry = StageRun(conn, run_id=run_id, stage=name, input_fingerprint="f", settings={}, code_version="t")
            if name == "ingest" or load_ok:
                entry.succeed(rows_in=0, rows_out=0, counts={})
            else:
                entry.fail("it broke", f"chatmem stage {name} --run-id {run_id}")
        close_run(conn, run_id, error=None if load_ok else "stage load failed")
        return run_id

    failed = one_run(load_ok=False)
    (alone,) = inspection.list_runs(conn)
    assert alone["resume"] == f"chatmem stage load --run-id {failed}"
    later = one_run(load_ok=True)
    runs = {run["id"]: run for run in inspection.list_runs(conn)}
    assert runs[failed]["status"] == "failed" and "resume" not in runs[failed]
    assert runs[later]["status"] == "succeeded"
