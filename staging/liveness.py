"""Is a run still running? The ledger records the pid and host of every run and stage run; a `running` row whose
process is gone (SIGKILL, a full disk that stopped the ledger write, a power cut) can no longer be running, and
is shown as `interrupted`, with the command that resumes it.

    migrate_liveness(conn)           schema v2: `interrupted` is a status; runs and stage_runs get pid and host
    migrate_pid_start(conn)          runs and stage_runs get pid_start, the process's start time beside its pid
    here() -> (pid, host, start)     what this process records
    shown_status(status, pid, host, pid_start)  the status to show: `running` whose process is gone (or whose
                                     pid now belongs to a process started at another time) -> `interrupted`
    unfinished_stages(conn, run_id)  the run's selected stages whose latest stage run did not succeed
    resume_command(run_id, stages)   the one command that runs them
    finish_command(conn, run_id)     that command for the run as the ledger has it: a failed stage's hint, the
                                     `resume` of `chatmem staging runs`
    mark_interrupted(conn, run_id)   record a Ctrl-C on the rows this process left running

Nothing here imports the pipeline: `chatmem staging runs` and `staging failures` use it read-only.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from datetime import UTC, datetime

# How a Ctrl-C or SIGTERM reads in the ledger: every stage records `interrupted: stopped by SIGTERM` (Python's
# KeyboardInterrupt, which carries both signals, is no word for a SIGTERM). Rows written before: the old prefix.
INTERRUPT_PREFIX = "interrupted"
OLD_INTERRUPT_PREFIX = "KeyboardInterrupt"
DONE = ("succeeded", "skipped")


def interrupt_error(exc: BaseException) -> str:
    """The ledger's error for a KeyboardInterrupt (flows/interrupt.py puts "stopped by SIGTERM" in it)."""
    return f"{INTERRUPT_PREFIX}: {str(exc) or 'stopped'}"


def is_interrupt_error(error: str | None) -> bool:
    return bool(error) and str(error).startswith((INTERRUPT_PREFIX, OLD_INTERRUPT_PREFIX))


def migrate_liveness(conn: sqlite3.Connection) -> None:
    """Schema v2: allow the status `interrupted`, and record the pid and host of each run and stage run.

    Widening a CHECK constraint changes nothing on disk, so it is done by editing the table's SQL in
    sqlite_schema (the procedure SQLite's ALTER TABLE page describes for such changes) rather than by copying
    tables that other tables' foreign keys point at; every existing row satisfies the wider check.
    """
    version = int(conn.execute("PRAGMA schema_version").fetchone()[0])
    conn.execute("PRAGMA writable_schema=ON")
    try:
        for table, last in (("runs", "'failed'"), ("stage_runs", "'failed'")):
            conn.execute(
                "UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = ?",
                (f"{last}))", f"{last}, 'interrupted'))", table),
            )
        conn.execute(f"PRAGMA schema_version={version + 1}")
    finally:
        conn.execute("PRAGMA writable_schema=OFF")
    for table in ("runs", "stage_runs"):
        conn.execute(f"ALTER TABLE {table} ADD COLUMN pid INTEGER")
        conn.execute(f"ALTER TABLE {table} ADD COLUMN host TEXT")


def migrate_pid_start(conn: sqlite3.Connection) -> None:
    """Runs and stage_runs record the start time of their process beside its pid: a pid the kernel has given to
    another process since (a dead run's, after many processes or a reboot) no longer makes the run `running`."""
    for table in ("runs", "stage_runs"):
        conn.execute(f"ALTER TABLE {table} ADD COLUMN pid_start INTEGER")


def here() -> tuple[int, str, int | None]:
    pid = os.getpid()
    return pid, socket.gethostname(), process_start(pid)


def process_start(pid: int) -> int | None:
    """When the process started, in clock ticks since boot (/proc/PID/stat field 22), or None where /proc cannot
    tell: with the pid it names one process, whatever pid reuse does later."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def process_alive(pid: int) -> bool:
    """The process exists and is not a zombie (a killed child its parent has not reaped is gone for us)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def shown_status(status: str, pid: int | None, host: str | None, pid_start: int | None = None) -> str:
    """`running` only while the recorded process lives, and is the same process (its start time, when recorded,
    matches: a reused pid is another process); on another host we cannot tell, and trust the row."""
    if status != "running" or pid is None or host != socket.gethostname():
        return status
    if not process_alive(pid):
        return "interrupted"
    if pid_start is not None and process_start(pid) not in (pid_start, None):
        return "interrupted"
    return status


def latest_statuses(conn: sqlite3.Connection, run_id: str) -> dict[str, str]:
    """Each stage of the run -> the status of its latest stage run."""
    return dict(
        conn.execute(
            "SELECT stage, status FROM stage_runs WHERE id IN"
            " (SELECT MAX(id) FROM stage_runs WHERE run_id = ? GROUP BY stage)",
            (run_id,),
        ).fetchall()
    )


def unfinished_stages(conn: sqlite3.Connection, run_id: str) -> list[str]:
    """The stages the run selected (in its order) whose latest stage run has not succeeded or been skipped."""
    row = conn.execute("SELECT stages FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        return []
    latest = latest_statuses(conn, run_id)
    return [stage for stage in json.loads(row[0]) if latest.get(stage) not in DONE]


def resume_command(run_id: str, stages_left: list[str], selected: list[str], fmt: str | None = None) -> str:
    """`chatmem stage X --run-id R` for the run's last stage alone, else `chatmem run --from X --run-id R`; with
    `--format F` where the run was started with it and its ingest is left (the run's exports read again: without
    it, detection would read them, which may be what failed: a command that works as typed)."""
    again = f" --format {fmt}" if fmt and "ingest" in (stages_left or selected) else ""
    if not stages_left:
        return f"chatmem run --run-id {run_id}{again}"
    first = stages_left[0]
    if selected and first == selected[-1]:
        return f"chatmem stage {first} --run-id {run_id}{again}"
    to = f" --to {selected[-1]}" if selected else ""
    return f"chatmem run --from {first}{to} --run-id {run_id}{again}"


FORMAT_KEY = "force_format"  # the run's --format, in its runs.settings (flows/pipeline.py records it)


def run_format(conn: sqlite3.Connection, run_id: str) -> str | None:
    """The --format the run was started with; None without one (or a run an older chatmem recorded)."""
    row = conn.execute("SELECT settings FROM runs WHERE id = ?", (run_id,)).fetchone()
    try:
        found = json.loads(row[0]).get(FORMAT_KEY) if row is not None else None
    except (ValueError, TypeError, AttributeError):
        return None
    return str(found) if found else None


def finish_command(conn: sqlite3.Connection, run_id: str, stage: str | None = None) -> str:
    """The one command that finishes the run: its selected stages from the first one not done (`resume_command`).
    What a failed stage's hint says (a stage that fails is not done: it and every later one are run), the same
    as the `resume` of `chatmem staging runs`: `chatmem stage X` alone would leave a run with later stages failed.
    A run with no row (a test's bare stage run) falls back to the stage alone."""
    row = conn.execute("SELECT stages FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        return f"chatmem stage {stage} --run-id {run_id}" if stage else f"chatmem run --run-id {run_id}"
    selected = json.loads(row[0])
    return resume_command(run_id, unfinished_stages(conn, run_id) or selected, selected, run_format(conn, run_id))


def mark_interrupted(
    conn: sqlite3.Connection,
    run_id: str,
    stage: str | None = None,
    failed_since: str | None = None,
    by: str = "Ctrl-C",
) -> None:
    """Record a Ctrl-C (or the signal `by` names): this process's rows of the run that still say running become
    interrupted, and with `failed_since` (the signal's time) also those marked failed since then by a failure the
    signal caused."""
    pid, host, _ = here()
    now = datetime.now(UTC).isoformat()
    hint = finish_command(conn, run_id, stage)  # as a failed stage's: the command that finishes the run
    statuses = "('running', 'failed')" if failed_since else "('running')"
    since = failed_since or ""  # finished_at of a 'running' row is NULL; a failed row must have ended after it
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "UPDATE stage_runs SET status = 'interrupted', finished_at = ?, error = ?, rerun_hint = ?"
            f" WHERE run_id = ? AND status IN {statuses} AND pid = ? AND host = ?"
            " AND (status = 'running' OR finished_at >= ?)",
            (now, f"{INTERRUPT_PREFIX}: stopped by {by}", hint, run_id, pid, host, since),
        )
        conn.execute(
            "UPDATE runs SET status = 'interrupted', finished_at = ?, error = ?"
            f" WHERE id = ? AND status IN {statuses} AND pid = ? AND host = ?"
            " AND (status = 'running' OR finished_at >= ?)",
            (now, f"{INTERRUPT_PREFIX}: stopped by {by} in stage {stage}", run_id, pid, host, since),
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def current_stage(conn: sqlite3.Connection, run_id: str) -> str | None:
    """The stage of the run's most recent stage run (the one a Ctrl-C stopped)."""
    row = conn.execute("SELECT stage FROM stage_runs WHERE run_id = ? ORDER BY id DESC LIMIT 1", (run_id,)).fetchone()
    return None if row is None else str(row[0])
