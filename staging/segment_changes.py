"""Which conversations' segments changed since a mark: what lets the load read only the segment layers that changed.

The graph's Segment nodes and CONTAINS_MESSAGE edges (load/layers.py) are the rows of `segments` and
`segment_messages` (staging/segments.py). Every such row belongs to one conversation, and triggers log that
conversation in `segment_changes` (one row per conversation, its version raised on every change) whenever a row of
either table is inserted, updated or deleted. The segment stage writes a conversation's rows only when its active
path changed, and an unchanged segment is left alone, so a run that adds 300 messages logs the few conversations
they touched. A mark is the newest version and the staging.db it was taken of (its first run): the conversations
changed since a mark are those logged with a higher version (load/segment_delta.py).

A segment row deleted outright (no code does: a newer segmentation retires a segment, `retired_run_id`) and a
membership row whose segment is gone log `ALL`, the empty id: its graph rows can no longer be found by their
conversation, and the next load diffs the segment layers whole.

`SCHEMA` is migration 11 of staging.db (staging/migrations.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

ALL = ""
"""Logged in place of a conversation when a change cannot be traced to one: the next load diffs everything."""

_BUMP = "(SELECT COALESCE(MAX(version), 0) + 1 FROM segment_changes)"
# An upsert, not INSERT OR REPLACE: inside a trigger the outer statement's conflict policy overrides the trigger's
# OR REPLACE, and the segment stage's own upsert (ON CONFLICT DO UPDATE) would then abort on the log's key.
_RAISE = "ON CONFLICT (conversation_id) DO UPDATE SET version = excluded.version"
_OF_SEGMENT = "COALESCE((SELECT conversation_id FROM segments WHERE segment_id = {row}.segment_id), '')"

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS segment_changes (
        conversation_id TEXT PRIMARY KEY,
        version INTEGER NOT NULL
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS segment_changes_by_version ON segment_changes (version)",
    f"""CREATE TRIGGER IF NOT EXISTS segment_changes_segment_insert AFTER INSERT ON segments BEGIN
        INSERT INTO segment_changes VALUES (new.conversation_id, {_BUMP}) {_RAISE};
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS segment_changes_segment_update AFTER UPDATE ON segments BEGIN
        INSERT INTO segment_changes VALUES (new.conversation_id, {_BUMP}) {_RAISE};
        INSERT INTO segment_changes SELECT old.conversation_id, {_BUMP}
            WHERE old.conversation_id IS NOT new.conversation_id {_RAISE};
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS segment_changes_segment_delete AFTER DELETE ON segments BEGIN
        INSERT INTO segment_changes VALUES ('{ALL}', {_BUMP}) {_RAISE};
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS segment_changes_member_insert AFTER INSERT ON segment_messages BEGIN
        INSERT INTO segment_changes VALUES ({_OF_SEGMENT.format(row="new")}, {_BUMP}) {_RAISE};
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS segment_changes_member_update AFTER UPDATE ON segment_messages BEGIN
        INSERT INTO segment_changes VALUES ({_OF_SEGMENT.format(row="new")}, {_BUMP}) {_RAISE};
        INSERT INTO segment_changes VALUES ({_OF_SEGMENT.format(row="old")}, {_BUMP}) {_RAISE};
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS segment_changes_member_delete AFTER DELETE ON segment_messages BEGIN
        INSERT INTO segment_changes VALUES ({_OF_SEGMENT.format(row="old")}, {_BUMP}) {_RAISE};
    END""",
]


def create(conn: sqlite3.Connection) -> None:
    """The table and its triggers (migration 11). Changes before it are not logged: a load with no mark from after
    it diffs the segment layers whole, as before."""
    for statement in SCHEMA:
        conn.execute(statement)


@dataclass(frozen=True)
class Mark:
    """Where the segment tables stood: compare later ones with it (`changed_since`)."""

    version: int
    origin: str
    """The first run of the ledger (id and start): another staging.db has another origin."""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, found: object) -> Mark | None:
        if not isinstance(found, dict):
            return None
        try:
            return cls(int(found["version"]), str(found["origin"]))
        except (KeyError, TypeError, ValueError):
            return None


def tracked(conn: sqlite3.Connection) -> bool:
    """staging.db logs its segment changes (migration 11 applied)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'segment_changes'")
    return found.fetchone() is not None


def mark(conn: sqlite3.Connection) -> Mark:
    """The segment tables as they stand now."""
    row = conn.execute(
        "SELECT (SELECT COALESCE(MAX(version), 0) FROM segment_changes),"
        " (SELECT id || ' ' || started_at FROM runs ORDER BY rowid LIMIT 1)"
    ).fetchone()
    return Mark(int(row[0]), str(row[1] or ""))


def comparable(conn: sqlite3.Connection, since: Mark) -> bool:
    """staging.db is the one the mark was taken of, and its log has only grown since."""
    now = mark(conn)
    return now.origin == since.origin and now.version >= since.version


def changed_since(conn: sqlite3.Connection, since: Mark) -> Iterator[str]:
    """Ids of the conversations whose segment rows changed after the mark (each once, in id order; `ALL` first
    when a change could not be traced to a conversation)."""
    rows = conn.execute(
        "SELECT conversation_id FROM segment_changes WHERE version > ? ORDER BY conversation_id", (since.version,)
    )
    for row in rows:
        yield str(row[0])
