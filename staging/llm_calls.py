"""staging.db: every LLM call, one row per attempt, so a user can see what was asked, answered and spent.

`SCHEMA` is migration 2 of staging/migrations.py (frozen: change a table with a new migration there).

How calls get here: the LLM extractor builds an `LLMCall` per attempt and hands it to a callback on the thread
that iterates `extract_many`; `recorder(conn, run_id)` is that callback. The extract stage wires the two and
never imports openai. Rows hold no secrets: the request is the model, effort, messages and schema name and
version; the API key is not part of `LLMCall` at all.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from contracts.redact import redact
from staging.db import Transaction

CallStatus = Literal[
    "ok",  # a reply the mapper accepted (possibly after corrections)
    "refused",  # the model refused
    "invalid_json",  # the reply text is not JSON (or was cut off)
    "schema_violation",  # JSON, but not the contract even after the mapper
    "transient_error",  # 429 / 5xx / timeout / connection: retried while retries last
    "error",  # any other API error: not retried
]

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS llm_calls (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        segment_id TEXT NOT NULL,
        cache_key TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        api TEXT NOT NULL,
        model TEXT NOT NULL,
        reasoning_effort TEXT,
        request TEXT NOT NULL,
        raw_response TEXT,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens INTEGER NOT NULL DEFAULT 0,
        latency_s REAL NOT NULL,
        status TEXT NOT NULL CHECK (status IN
            ('ok', 'refused', 'invalid_json', 'schema_violation', 'transient_error', 'error')),
        error TEXT,
        started_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS llm_calls_by_run ON llm_calls (run_id, segment_id)",
    "CREATE INDEX IF NOT EXISTS llm_calls_by_key ON llm_calls (cache_key)",
]


@dataclass(slots=True)
class LLMCall:
    """One attempt at one segment. `request` never holds the API key (the extractor never puts it there)."""

    segment_id: str
    cache_key: str  # staging.extractions.cache_key(content_hash, (prompt, schema version, model, effort))
    attempt: int  # 1 for the first try, 2 for the first retry, ...
    api: str
    model: str
    reasoning_effort: str | None
    request: dict[str, Any]
    status: CallStatus
    latency_s: float
    raw_response: str | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())


CallRecorder = Callable[[LLMCall], None]


def record_call(conn: sqlite3.Connection, run_id: str, call: LLMCall) -> None:
    """Append one call (calls are a log: a retry or a re-run adds rows, it never overwrites)."""
    row = redact(asdict(call))  # no key, no URL credentials, even inside an error text the server echoed
    row["request"] = json.dumps(row["request"], ensure_ascii=False)
    row["run_id"] = run_id
    columns = ", ".join(row)
    with Transaction(conn):
        conn.execute(f"INSERT INTO llm_calls ({columns}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))


def recorder(conn: sqlite3.Connection, run_id: str) -> CallRecorder:
    """A callback for `LLMExtractor(on_call=...)` that writes each call of run `run_id` to staging."""

    def write(call: LLMCall) -> None:
        record_call(conn, run_id, call)

    return write


def calls(conn: sqlite3.Connection, run_id: str | None = None) -> list[dict[str, Any]]:
    """The recorded calls (of one run, or all), oldest first, as plain dicts. Works on a read-only connection."""
    if not _has_table(conn):
        return []
    where, params = ("WHERE run_id = ?", (run_id,)) if run_id else ("", ())
    rows = conn.execute(f"SELECT * FROM llm_calls {where} ORDER BY id", params).fetchall()
    return [dict(row) for row in rows]


def usage_totals(conn: sqlite3.Connection, run_id: str) -> dict[str, int]:
    """Calls and tokens spent by one run: what `tokens per 1k messages` is computed from."""
    if not _has_table(conn):
        return dict.fromkeys(("calls", "prompt_tokens", "completion_tokens", "reasoning_tokens"), 0)
    row = conn.execute(
        "SELECT COUNT(*) AS calls, COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens,"
        " COALESCE(SUM(completion_tokens), 0) AS completion_tokens,"
        " COALESCE(SUM(reasoning_tokens), 0) AS reasoning_tokens FROM llm_calls WHERE run_id = ?",
        (run_id,),
    ).fetchone()
    return {key: int(row[key]) for key in ("calls", "prompt_tokens", "completion_tokens", "reasoning_tokens")}


def _has_table(conn: sqlite3.Connection) -> bool:
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'llm_calls'").fetchone() is not None
    )
