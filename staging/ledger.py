"""staging.db: the run ledger (runs, stage runs) and what each stage did, keyed by run id.

Everything written here (settings, errors, notes, file details) goes through contracts.redact first.

"What did run R do" is one query: `SELECT * FROM stage_runs WHERE run_id = R`.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from contracts.redact import redact, redact_text
from contracts.results import StageRecord
from staging.db import Transaction, connect
from staging.liveness import DONE, finish_command, here, is_interrupt_error, latest_statuses, unfinished_stages
from staging.migrations import STAGING, migrate


def open_staging(path: Path) -> sqlite3.Connection:
    """Open staging.db read-write, creating or upgrading its schema (staging.migrations.STAGING)."""
    conn = connect(path)
    migrate(conn, STAGING, name=str(path))
    return conn


def _now() -> str:
    return datetime.now(UTC).isoformat()


def new_run_id() -> str:
    """Sortable and unique: UTC time to the second, then its microseconds as 6 hex digits. The newest run is
    the largest id even for two runs in one second (a random tail sorted them by chance, and "the latest run"
    of cues, topics and load is the largest id)."""
    global _last_run_time
    now = datetime.now(UTC).replace(tzinfo=None)
    if _last_run_time is not None and now <= _last_run_time:  # the same microsecond (or a clock step back)
        now = _last_run_time + timedelta(microseconds=1)
    _last_run_time = now
    return now.strftime("r%Y%m%dT%H%M%S") + f"-{now.microsecond:06x}"


_last_run_time: datetime | None = None


def open_run(
    conn: sqlite3.Connection,
    *,
    stages: list[str],
    exports: list[str],
    settings: Mapping[str, Any],
    code_version: str,
    run_id: str | None = None,
    order: Sequence[str] = (),
) -> str:
    """Record a new run (or re-open an existing one, for `chatmem stage X --run-id R`). A run re-opened with other
    stages (`chatmem run --only ingest`, then `--from segment --run-id R`) selects them all from then on, in `order`
    (the pipeline's stage order), so that what is left of it and the command that resumes it name the stages it
    was last asked to run, not only the first selection's."""
    run_id = run_id or new_run_id()
    with Transaction(conn):
        existing = conn.execute("SELECT id FROM runs WHERE id = ?", (run_id,)).fetchone()
        if existing is None:
            conn.execute(
                "INSERT INTO runs (id, started_at, status, stages, exports, settings, code_version, pid, host,"
                " pid_start) VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    _now(),
                    json.dumps(stages),
                    json.dumps(redact(exports)),
                    json.dumps(redact(settings)),
                    code_version,
                    *here(),
                ),
            )
        else:
            before = json.loads(conn.execute("SELECT stages FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
            wanted = set(before) | set(stages)
            merged = [x for x in order if x in wanted] + [x for x in [*before, *stages] if x not in order]
            conn.execute(
                "UPDATE runs SET status = 'running', finished_at = NULL, error = NULL, pid = ?, host = ?,"
                " pid_start = ?, stages = ? WHERE id = ?",
                (*here(), json.dumps(list(dict.fromkeys(merged))), run_id),
            )
    return run_id


def close_run(conn: sqlite3.Connection, run_id: str, *, error: str | None = None) -> None:
    """Close the run: failed with `error`, interrupted (Ctrl-C), or succeeded only when every stage it selected
    has succeeded; a re-run of one stage (`chatmem stage embed --run-id R`) does not finish a run whose later
    stages never ran: it stays failed, saying which stages are left and how to run them."""
    status = "failed" if error else "succeeded"
    if is_interrupt_error(error):
        status = "interrupted"
    with Transaction(conn):
        if status == "succeeded":
            left = unfinished_stages(conn, run_id)
            if left:
                status = "failed"
                error = f"stage(s) not run yet: {', '.join(left)} (resume: {finish_command(conn, run_id)})"
        conn.execute(
            "UPDATE runs SET status = ?, finished_at = ?, error = ? WHERE id = ?",
            (status, _now(), redact_text(error) if error else None, run_id),
        )


def run_exists(conn: sqlite3.Connection, run_id: str) -> bool:
    return conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is not None


def stages_done(conn: sqlite3.Connection, run_id: str, stages: Sequence[str]) -> bool:
    """Whether the run's latest stage run of each of `stages` succeeded or was skipped (none: not done)."""
    latest = latest_statuses(conn, run_id)
    return all(latest.get(stage) in DONE for stage in stages)


def run_exports(conn: sqlite3.Connection, run_id: str) -> list[str]:
    row = conn.execute("SELECT exports FROM runs WHERE id = ?", (run_id,)).fetchone()
    return [] if row is None else list(json.loads(row["exports"]))


@dataclass(frozen=True, slots=True)
class Attempt:
    """A stage's latest stage run: what the skip rule and the fingerprints of later stages look at."""

    id: int
    run_id: str
    status: str
    input_fingerprint: str


def latest_attempt(conn: sqlite3.Connection, stage: str) -> Attempt | None:
    """The stage's most recent stage run, whatever its status ('running' too: a run that was killed)."""
    row = conn.execute(
        "SELECT id, run_id, status, input_fingerprint FROM stage_runs WHERE stage = ? ORDER BY id DESC LIMIT 1",
        (stage,),
    ).fetchone()
    return None if row is None else Attempt(int(row[0]), str(row[1]), str(row[2]), str(row[3]))


_RECORD = "SELECT id, stage, run_id, status, counts, settings, code_version FROM stage_runs"


def last_success(conn: sqlite3.Connection, stage: str) -> StageRecord | None:
    """The stage's newest stage run that succeeded (a stage run still running, skipped or failed is not one)."""
    row = conn.execute(
        f"{_RECORD} WHERE stage = ? AND status = 'succeeded' ORDER BY id DESC LIMIT 1", (stage,)
    ).fetchone()
    return None if row is None else _record(row)


def records_after(conn: sqlite3.Connection, after: int) -> list[StageRecord]:
    """Every stage run recorded after stage run `after` (an id) but the skipped ones, oldest first: succeeded,
    failed, interrupted, or 'running' (the one running now, or one killed)."""
    return [
        _record(row) for row in conn.execute(f"{_RECORD} WHERE id > ? AND status != 'skipped' ORDER BY id", (after,))
    ]


def latest_successes(conn: sqlite3.Connection) -> dict[str, StageRecord]:
    """Each stage's newest succeeded stage run, by stage."""
    rows = conn.execute(
        f"{_RECORD} WHERE id IN (SELECT MAX(id) FROM stage_runs WHERE status = 'succeeded' GROUP BY stage)"
    )
    return {found.stage: found for found in map(_record, rows)}


def _record(row: Sequence[Any]) -> StageRecord:
    counts = json.loads(row[4]) if row[4] else {}
    return StageRecord(
        int(row[0]), str(row[1]), str(row[2]), str(row[3]), dict(counts), json.loads(row[5]), str(row[6])
    )


class StageRun:
    """One stage's entry in the ledger: opened on start, closed with counts or with the failure."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        run_id: str,
        stage: str,
        input_fingerprint: str,
        settings: Mapping[str, Any],
        code_version: str,
    ) -> None:
        self.conn = conn
        self.run_id = run_id
        self.stage = stage
        self._started = time.monotonic()
        with Transaction(conn):
            cursor = conn.execute(
                "INSERT INTO stage_runs (run_id, stage, status, started_at, input_fingerprint, settings,"
                " code_version, pid, host, pid_start) VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)",
                (run_id, stage, _now(), input_fingerprint, json.dumps(redact(settings)), code_version, *here()),
            )
            self.id = int(cursor.lastrowid or 0)

    def succeed(
        self,
        *,
        rows_in: int,
        rows_out: int,
        counts: Mapping[str, int],
        notes: list[str] | None = None,
        skipped: bool = False,
        input_fingerprint: str | None = None,
    ) -> None:
        """Close the stage run as succeeded (or skipped); `input_fingerprint` replaces the one it opened with
        (the runner's, for a stage that changes what it reads: ingest's archive)."""
        more = {} if input_fingerprint is None else {"input_fingerprint": input_fingerprint}
        self._close(
            "skipped" if skipped else "succeeded",
            rows_in=rows_in,
            rows_out=rows_out,
            counts=json.dumps(dict(counts)),
            notes="\n".join(notes or []) or None,
            **more,
        )

    def fail(
        self,
        error: str,
        rerun_hint: str,
        *,
        rows_in: int | None = None,
        rows_out: int | None = None,
        counts: Mapping[str, int] | None = None,
        notes: list[str] | None = None,
    ) -> None:
        """Record the failure; a Ctrl-C (the KeyboardInterrupt every stage records) is recorded as interrupted.
        A stage whose items failed after it wrote the rest gives its counts and notes too."""
        status = "interrupted" if is_interrupt_error(error) else "failed"
        done: dict[str, Any] = {}
        if counts is not None:
            done.update(rows_in=rows_in, rows_out=rows_out, counts=json.dumps(dict(counts)))
            done.update(notes="\n".join(notes or []) or None)
        self._close(status, error=error, rerun_hint=rerun_hint, **done)

    def _close(self, status: str, **values: Any) -> None:
        values = {name: redact_text(value) if isinstance(value, str) else value for name, value in values.items()}
        values.update(status=status, finished_at=_now(), duration_s=round(time.monotonic() - self._started, 3))
        assignments = ", ".join(f"{name} = ?" for name in values)
        with Transaction(self.conn):
            self.conn.execute(f"UPDATE stage_runs SET {assignments} WHERE id = ?", (*values.values(), self.id))
