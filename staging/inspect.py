"""Read-only inspection of staging.db and archive.db, for `chatmem staging ...` and `chatmem archive ...`.

Pure functions over a sqlite3.Connection (opened with `staging.db.connect_readonly`); they return plain
JSON-able data and never write. Table names given by a user are checked against the database's own table
list before they reach SQL, so `staging show` cannot be used to inject SQL.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from datetime import datetime
from difflib import get_close_matches
from typing import Any

from contracts.errors import ConfigError
from staging.archive_update import TAKEN_LIKE
from staging.ingest_files import SUPERSEDED
from staging.liveness import finish_command, shown_status, unfinished_stages

Row = dict[str, Any]


def _rows(cursor: sqlite3.Cursor) -> list[Row]:
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, (_jsonable(value) for value in row), strict=True)) for row in cursor]


def _jsonable(value: object) -> object:
    if isinstance(value, bytes):  # no table stores blobs today; do not let one break --json later
        return f"<{len(value)} bytes>"
    return value


def table_names(conn: sqlite3.Connection) -> list[str]:
    """Tables and views of the database, without SQLite's own."""
    cursor = conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'"
        " ORDER BY type, name"
    )
    return [str(row[0]) for row in cursor]


def columns(conn: sqlite3.Connection, table: str) -> list[str]:
    _check_table(conn, table)
    return [str(row[1]) for row in conn.execute(f'PRAGMA table_info("{table}")')]


def list_tables(conn: sqlite3.Connection) -> list[Row]:
    """Every table with its row count. Views are listed without a count: counting one runs its query."""
    kinds = dict(conn.execute("SELECT name, type FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchall())
    result: list[Row] = []
    for name in table_names(conn):
        rows = None
        if kinds[name] == "table":
            rows = int(conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0])
        result.append({"table": name, "type": kinds[name], "rows": rows})
    return result


def show_rows(conn: sqlite3.Connection, table: str, *, run_id: str | None = None, limit: int = 20) -> list[Row]:
    """Rows of `table` in insertion order, optionally only those of one run (tables with a run_id column)."""
    names = columns(conn, table)  # validates the table name
    sql = f'SELECT * FROM "{table}"'
    params: list[object] = []
    if run_id is not None:
        key = "run_id" if "run_id" in names else "id" if table == "runs" else None
        if key is None:
            raise ConfigError(f"table {table!r} has no run_id column; drop --run-id")
        sql += f' WHERE "{key}" = ?'
        params.append(run_id)
    if limit > 0:
        sql += " LIMIT ?"
        params.append(limit)
    return _rows(conn.execute(sql, params))


def _check_table(conn: sqlite3.Connection, table: str) -> None:
    known = table_names(conn)
    if table not in known:
        raise unknown_table(table, known)


def unknown_table(table: str, known: Iterable[str]) -> ConfigError:
    """The usage error for a table no database holds: the few names closest to it (a typo, a part of the name) and
    the command that lists them all, rather than all ~90 names on one line (schema_migrations twice: both databases
    have one)."""
    names = list(dict.fromkeys(known))
    close = get_close_matches(table, names, n=4, cutoff=0.6)
    close += [n for n in names if table and table.lower() in n and n not in close][: 4 - len(close)]
    listed = "`chatmem staging tables` lists them all"
    if not close:
        return ConfigError(f"unknown table {table!r}; {listed}")
    return ConfigError(f"unknown table {table!r}; did you mean {', '.join(close)}? ({listed})")


def list_runs(conn: sqlite3.Connection, *, limit: int = 20) -> list[Row]:
    """The most recent runs first, each with the latest status of each of its stages.

    A run or stage recorded as `running` whose process is gone is shown as `interrupted` (staging/liveness.py),
    and every run that is not succeeded (nor still running) carries `resume`, the command that finishes it, unless
    a run started later succeeded with the same stages (then nothing is left to resume). Each
    run has how long it took (`duration_s`) and each stage's latest stage run took (`stage_duration_s`).
    """
    runs = _rows(
        conn.execute(
            "SELECT id, status, started_at, finished_at, stages, exports, code_version, error, pid, host, pid_start"
            " FROM runs"
            " ORDER BY started_at DESC, id DESC LIMIT ?",
            (limit if limit > 0 else -1,),
        )
    )
    superseded = _superseded_runs(conn)
    for run in runs:
        run["stages"] = json.loads(run["stages"])
        run["exports"] = json.loads(run["exports"])
        recorded, pid = run["status"], run["pid"]
        run["status"] = shown_status(run["status"], run.pop("pid"), run.pop("host"), run.pop("pid_start"))
        if recorded == "running" and run["status"] == "interrupted" and not run["error"]:
            run["error"] = vanished(pid)
        latest = conn.execute(
            "SELECT stage, status, pid, host, pid_start, duration_s FROM stage_runs WHERE id IN"
            " (SELECT MAX(id) FROM stage_runs WHERE run_id = ? GROUP BY stage) ORDER BY id",
            (run["id"],),
        ).fetchall()
        run["stage_status"] = {str(row[0]): shown_status(str(row[1]), *row[2:5]) for row in latest}
        # how long each stage's latest stage run took (None: not finished), and the run from start to end
        run["stage_duration_s"] = {str(row[0]): row[5] for row in latest}
        run["duration_s"] = _seconds_between(run["started_at"], run["finished_at"])
        # files it could not read (or read only up to a cut): its command exited 1
        bad = dict(
            conn.execute(
                "SELECT status, COUNT(*) FROM ingest_files WHERE run_id = ? AND status IN ('failed', 'partial')"
                " GROUP BY status",
                (run["id"],),
            ).fetchall()
        )
        run["files_failed"], run["files_partial"] = int(bad.get("failed", 0)), int(bad.get("partial", 0))
        # a failed or interrupted run that a later run went through again (`staging failures` leaves it out): no
        # command to resume it, which would only repeat what the later run did
        if run["status"] not in ("succeeded", "running") and run["id"] not in superseded:
            left = unfinished_stages(conn, run["id"]) or run["stages"]
            run["resume"] = _fix_first(conn, run["id"], left) + finish_command(conn, run["id"])
        run["status"], run["incomplete"] = shown_run_status(run["status"], run["files_failed"], run["files_partial"])
    return runs


INCOMPLETE = "incomplete"  # a run whose stages succeeded but a file failed or was cut short (its command exits 1)


def files_word(failed: int, partial: int) -> str:
    """`1 file cut short`, `2 files failed`, `1 file failed and 1 file cut short`."""
    parts = [f"{n} file{'s' if n > 1 else ''} {word}" for n, word in ((failed, "failed"), (partial, "cut short")) if n]
    return " and ".join(parts)


def shown_run_status(status: str, files_failed: int, files_partial: int) -> tuple[str, str | None]:
    """(the status said of a run, why it is `incomplete`): the ledger's `succeeded` is `incomplete` where a file
    failed or was cut short, as the run's exit code 1 says (`chatmem run` and `chatmem staging runs` alike); the
    ledger keeps `succeeded` (every stage did), which resumes and supersedes go by."""
    if status == "succeeded" and (files_failed or files_partial):
        return INCOMPLETE, files_word(files_failed, files_partial)
    return status, None


def _seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from one ledger timestamp (ISO 8601) to another; None when either is missing or unreadable."""
    try:
        return round((datetime.fromisoformat(str(end)) - datetime.fromisoformat(str(start))).total_seconds(), 3)
    except (ValueError, TypeError):  # not finished (None), or a timestamp an older chatmem wrote otherwise
        return None


def _fix_first(conn: sqlite3.Connection, run_id: str, left: list[str]) -> str:
    """`fix or remove PATH, then: ` where the run stopped at ingest because no file could be read: run again
    as it is, it would fail the same way (the command alone is no fix); '' otherwise."""
    if not left or left[0] != "ingest":
        return ""
    rows = conn.execute(
        "SELECT f.path FROM ingest_files f JOIN stage_runs s ON s.id = f.stage_run_id"
        " WHERE f.run_id = ? AND f.status = 'failed' AND s.status = 'failed'"
        " AND s.id = (SELECT MAX(id) FROM stage_runs WHERE run_id = ? AND stage = 'ingest') ORDER BY f.rowid",
        (run_id, run_id),
    ).fetchall()
    if not rows:  # interrupted, or failed for another reason: the command is the fix
        return ""
    named = str(rows[0][0]) if len(rows) == 1 else f"the {len(rows)} files that failed (chatmem staging failures)"
    return f"fix or remove {named}, then: "


def vanished(pid: int | None) -> str:
    """The error shown for a run or stage recorded `running` whose process is gone (SIGKILL, out of memory)."""
    which = f"pid {pid}" if pid is not None else "its pid"
    return f"interrupted: its process vanished ({which} gone: killed, e.g. SIGKILL or out of memory)"


def is_noop(run: Row) -> bool:
    """A run that found nothing to do: it succeeded and every stage was skipped as unchanged."""
    statuses = set(run.get("stage_status", {}).values())
    return run["status"] == "succeeded" and statuses == {"skipped"}


def collapse_noops(runs: list[Row]) -> list[Row]:
    """Consecutive no-op runs (newest first, as list_runs gives them) as one row: the newest (the last check,
    its id and time), with `checks`, how many runs it stands for, and `first_check`, when the oldest started.
    Every run stays in the ledger; only the listing folds them (`chatmem staging runs --each` shows each)."""
    out: list[Row] = []
    for run in runs:
        previous = out[-1] if out else None
        if previous is not None and is_noop(run) and is_noop(previous):
            previous["checks"] = previous.get("checks", 1) + 1
            previous["first_check"] = run["started_at"]
            continue
        out.append(dict(run))
    return out


def run_status(conn: sqlite3.Connection, run_id: str, default: str) -> tuple[str, str | None]:
    """(status, error) of the run as the ledger has it: `failed` with the stages left after a re-run of one stage
    of an unfinished run, though that stage succeeded; `default` when the run has no row."""
    row = conn.execute("SELECT status, error FROM runs WHERE id = ?", (run_id,)).fetchone()
    return (default, None) if row is None else (str(row[0]), None if row[1] is None else str(row[1]))


def latest_working_run(conn: sqlite3.Connection) -> str | None:
    """The newest run in which some stage did work (succeeded, not skipped as unchanged): what `chatmem report`
    shows by default, and the run a no-op run says nothing changed since. None when no stage ever did."""
    try:
        row = conn.execute("SELECT MAX(run_id) FROM stage_runs WHERE status = 'succeeded'").fetchone()
    except sqlite3.OperationalError:  # a staging.db from before any stage ran
        return None
    return None if row is None or row[0] is None else str(row[0])


def run_files(conn: sqlite3.Connection, run_id: str) -> list[Row]:
    """What the ingest stage of one run did with each file."""
    return _rows(
        conn.execute(
            "SELECT path, status, format, conversations, messages_read, messages_inserted, messages_updated,"
            " messages_unchanged, messages_retired, quarantined, detail FROM ingest_files"
            " WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        )
    )


def failures(
    staging: sqlite3.Connection, archive: sqlite3.Connection | None = None, *, limit: int = 50
) -> dict[str, list[Row]]:
    """What still needs attention.

    - runs that failed or were interrupted (or whose process is gone), with the command that resumes them,
      unless a run started later succeeded with the same stages (and then their stage runs are left out too);
    - stage runs that failed or were interrupted and were not re-run with success since (same run, same
      stage), with the command that re-runs them;
    - files whose latest outcome is failed or partial (one row per path, the latest: a later ingest of the
      same path replaces it);
    - quarantined records, counted per source file and reason (the `limit` largest groups);
    - `superseded`: files cut short whose every conversation a whole file read later (another path) delivered:
      nothing to do, said apart; their unreadable remainder is left out of the quarantine groups.
    """
    stages = _rows(
        staging.execute(
            "SELECT s.run_id, s.stage, s.status, s.finished_at, s.error, s.rerun_hint, s.pid, s.host, s.pid_start"
            " FROM stage_runs s"
            " WHERE s.status IN ('failed', 'interrupted', 'running') AND NOT EXISTS (SELECT 1 FROM stage_runs later"
            "   WHERE later.run_id = s.run_id AND later.stage = s.stage AND later.id > s.id"
            "   AND later.status IN ('succeeded', 'skipped'))"
            " ORDER BY s.id"
        )
    )
    for row in stages:  # a stage still `running` whose process is gone was interrupted (SIGKILL, a full disk)
        row["status"] = shown_status(row["status"], row.pop("pid"), row.pop("host"), row.pop("pid_start"))
        if row["status"] == "interrupted" and not row["error"]:
            row["error"] = vanished(None)
        # a killed process wrote no hint: the command that finishes its run, as a failed stage's hint says
        row["rerun_hint"] = row["rerun_hint"] or finish_command(staging, row["run_id"], row["stage"])
    superseded = _superseded_runs(staging)
    stages = [row for row in stages if row["status"] != "running" and row["run_id"] not in superseded]
    files = _rows(
        staging.execute(
            "SELECT f.run_id, f.path, f.status, f.detail FROM ingest_files f"
            " WHERE f.status IN ('failed', 'partial') AND NOT EXISTS (SELECT 1 FROM ingest_files later"
            "   WHERE later.path = f.path AND later.stage_run_id > f.stage_run_id)"
            " ORDER BY f.stage_run_id, f.path"
        )
    )
    # files cut short that a whole re-export read later holds entirely (ingest/supersede.py): said apart, as done
    superseded_files = _rows(
        staging.execute(
            "SELECT f.run_id, f.path, f.detail FROM ingest_files f WHERE f.status = 'skipped' AND f.detail LIKE ?"
            " AND NOT EXISTS (SELECT 1 FROM ingest_files later"
            "   WHERE later.path = f.path AND later.stage_run_id > f.stage_run_id)"
            " ORDER BY f.stage_run_id, f.path",
            (f"{SUPERSEDED}%",),
        )
    )
    quarantine: list[Row] = []
    if archive is not None:
        moot = {row["path"] for row in superseded_files}  # their unreadable remainder is no longer missing
        quarantine = [
            group
            for group in _quarantine_groups(archive, limit)
            if not (group["source"] in moot and str(group["reason"]).startswith(REMAINDER))
        ]
    runs = [
        {"run_id": r["id"], "status": r["status"], "error": r["error"], "resume": r["resume"]}
        for r in list_runs(staging, limit=0)
        if r["status"] in ("failed", "interrupted") and r["id"] not in superseded
    ]
    return {
        "runs": runs,
        "stage_runs": stages,
        "files": files,
        "quarantine": quarantine,
        "superseded": superseded_files,
    }


REMAINDER = "unreadable remainder: "  # the reason of a file's quarantine row for the rest after a cut (ingest/stage.py)


TAKEN = "message ids already in the archive under other conversation ids; not overwritten"
_FEW = 3  # conversation ids named in the group of taken ids


def _quarantine_groups(archive: sqlite3.Connection, limit: int) -> list[Row]:
    """Quarantine rows counted per source file and reason, largest first. Messages whose ids other conversations
    hold (a re-export under new conversation ids: one reason per message) are one group per file, naming a few of
    its conversations, rather than a block per message."""
    rows = _rows(
        archive.execute(
            "SELECT s.path AS source, CASE WHEN q.reason LIKE ?1 THEN ?2 ELSE q.reason END AS reason,"
            " COUNT(*) AS rows FROM quarantine q JOIN sources s ON s.id = q.source_id"
            " GROUP BY s.path, 2 ORDER BY rows DESC, s.path LIMIT ?3",
            (TAKEN_LIKE, TAKEN, limit if limit > 0 else -1),
        )
    )
    for row in rows:
        if row["reason"] != TAKEN:
            continue
        ids = [
            str(found[0])
            for found in archive.execute(
                "SELECT DISTINCT q.conversation_id FROM quarantine q JOIN sources s ON s.id = q.source_id"
                " WHERE s.path = ? AND q.reason LIKE ? ORDER BY 1",
                (row["source"], TAKEN_LIKE),
            )
        ]
        more = f" and {len(ids) - _FEW} more" if len(ids) > _FEW else ""
        row["reason"] = f"{TAKEN} ({len(ids)} conversation(s): {', '.join(ids[:_FEW])}{more})"
    return rows


def _superseded_runs(conn: sqlite3.Connection) -> set[str]:
    """Runs that did not succeed but a run started later succeeded with at least the same stages: it went
    through every one of them since, so the failure or interruption no longer needs attention (`staging runs`
    still lists it; a failed file stays listed by path until that file is ingested)."""
    rows = conn.execute("SELECT id, status, started_at, stages FROM runs ORDER BY started_at, id").fetchall()
    superseded: set[str] = set()
    for i, (run_id, status, _, stages) in enumerate(rows):
        if status == "succeeded":
            continue
        needed = set(json.loads(stages))
        if any(later[1] == "succeeded" and needed <= set(json.loads(later[3])) for later in rows[i + 1 :]):
            superseded.add(str(run_id))
    return superseded
