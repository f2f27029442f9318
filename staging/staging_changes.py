"""What changed in staging.db since a mark, for the graph's staging layers: what lets the load read only that.

Triggers log, in `staging_changes`, one row per (kind, id), its version raised on every change:

- `segment`: the conversation of a `segments` or `segment_messages` row inserted, updated or deleted: the Segment
  nodes and CONTAINS_MESSAGE edges (load/layers.py) are rows of one conversation each. The segment stage writes a
  conversation's rows only when its active path changed, and leaves an unchanged segment alone.
- `evidence`: the message of a `concept_evidence` row inserted, updated or deleted, and every message of a
  concept's evidence when the concept is inserted, deleted or changes `state` (an EVIDENCE_FOR edge is a message's
  evidence of a live concept: its key is (message, concept)).
- `concept`: a `concepts` row inserted, updated (any column: the Concept node may show it) or deleted.
- `cluster` (migration 16): a `cluster_runs` row deleted or updated: that cluster run's topics and topic links may
  no longer be what a load that marked it read (a re-run of the newest cluster run rewrites them under the same run
  id, `staging.topics._undo`; a pruned run's are gone). The topic layers' rows are not logged row by row: the
  rows of cluster run R stay as they are while R is kept, so a load reads what differs between the cluster run its
  mark names and the newest one (`topic_links_changed`, load/staging_delta.py).

A mark is the newest version, the staging.db it was taken of (its first run) and the newest cluster run; the ids
of a kind changed since a mark are those logged with a higher version (load/staging_delta.py). A segment row
deleted outright (no code does: a newer segmentation retires a segment, `retired_run_id`) and a membership row
whose segment is gone log `ALL`, the empty id: their graph rows can no longer be found by conversation, and the next
load diffs those layers whole.

The triggers upsert (ON CONFLICT DO UPDATE), never INSERT OR REPLACE: inside a trigger the outer statement's
conflict policy overrides the trigger's, and a stage's own upsert would then abort on the log's key.

`SCHEMA` is migration 12 of staging.db, `CLUSTER_SCHEMA` migration 16 (staging/migrations.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import asdict, astuple, dataclass
from typing import Any

SEGMENT, EVIDENCE, CONCEPT, CLUSTER = "segment", "evidence", "concept", "cluster"
KINDS = (SEGMENT, EVIDENCE, CONCEPT, CLUSTER)
ALL = ""
"""Logged in place of an id when a change cannot be traced to one: the next load diffs that kind's layers whole."""

_BUMP = "(SELECT COALESCE(MAX(version), 0) + 1 FROM staging_changes)"
_RAISE = "ON CONFLICT (kind, id) DO UPDATE SET version = excluded.version"
_OF_SEGMENT = "COALESCE((SELECT conversation_id FROM segments WHERE segment_id = {row}.segment_id), '')"


def _log(kind: str, value: str) -> str:
    return f"INSERT INTO staging_changes VALUES ('{kind}', {value}, {_BUMP}) {_RAISE};"


def _log_evidence_of(concept: str) -> str:
    """Every message of a concept's evidence (a non-correlated bump: one version for them all)."""
    return (
        f"INSERT INTO staging_changes SELECT DISTINCT '{EVIDENCE}', message_id, {_BUMP} FROM concept_evidence"
        f" WHERE concept_id = {concept} {_RAISE};"
    )


def _trigger(name: str, event: str, body: str) -> str:
    return f"CREATE TRIGGER IF NOT EXISTS staging_changes_{name} AFTER {event} BEGIN\n    {body}\nEND"


SCHEMA = [
    """CREATE TABLE IF NOT EXISTS staging_changes (
        kind TEXT NOT NULL,
        id TEXT NOT NULL,
        version INTEGER NOT NULL,
        PRIMARY KEY (kind, id)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS staging_changes_by_version ON staging_changes (version)",
    # segment: by conversation
    _trigger("segment_insert", "INSERT ON segments", _log(SEGMENT, "new.conversation_id")),
    _trigger(
        "segment_update",
        "UPDATE ON segments",
        _log(SEGMENT, "new.conversation_id") + " " + _log(SEGMENT, "old.conversation_id"),
    ),
    _trigger("segment_delete", "DELETE ON segments", _log(SEGMENT, f"'{ALL}'")),
    _trigger("member_insert", "INSERT ON segment_messages", _log(SEGMENT, _OF_SEGMENT.format(row="new"))),
    _trigger(
        "member_update",
        "UPDATE ON segment_messages",
        _log(SEGMENT, _OF_SEGMENT.format(row="new")) + " " + _log(SEGMENT, _OF_SEGMENT.format(row="old")),
    ),
    _trigger("member_delete", "DELETE ON segment_messages", _log(SEGMENT, _OF_SEGMENT.format(row="old"))),
    # evidence: by message
    _trigger("evidence_insert", "INSERT ON concept_evidence", _log(EVIDENCE, "new.message_id")),
    _trigger(
        "evidence_update",
        "UPDATE ON concept_evidence",
        _log(EVIDENCE, "new.message_id") + " " + _log(EVIDENCE, "old.message_id"),
    ),
    _trigger("evidence_delete", "DELETE ON concept_evidence", _log(EVIDENCE, "old.message_id")),
    _trigger("concept_evidence_insert", "INSERT ON concepts", _log_evidence_of("new.concept_id")),
    _trigger(
        "concept_evidence_update",
        "UPDATE ON concepts WHEN old.state IS NOT new.state OR old.concept_id IS NOT new.concept_id",
        _log_evidence_of("new.concept_id") + " " + _log_evidence_of("old.concept_id"),
    ),
    _trigger("concept_evidence_delete", "DELETE ON concepts", _log_evidence_of("old.concept_id")),
    # concept: by concept
    _trigger("concept_insert", "INSERT ON concepts", _log(CONCEPT, "new.concept_id")),
    _trigger(
        "concept_update",
        "UPDATE ON concepts",
        _log(CONCEPT, "new.concept_id") + " " + _log(CONCEPT, "old.concept_id"),
    ),
    _trigger("concept_delete", "DELETE ON concepts", _log(CONCEPT, "old.concept_id")),
]


CLUSTER_SCHEMA = [
    _trigger("cluster_delete", "DELETE ON cluster_runs", _log(CLUSTER, "old.run_id")),
    _trigger("cluster_update", "UPDATE ON cluster_runs", _log(CLUSTER, "old.run_id")),
]


def create(conn: sqlite3.Connection) -> None:
    """The table and its triggers (migration 12). Changes before it are not logged: a load with no mark from after
    it diffs these layers whole, as before."""
    for statement in SCHEMA:
        conn.execute(statement)


def create_cluster(conn: sqlite3.Connection) -> None:
    """The `cluster` triggers (migration 16). Marks taken before it name no cluster run: the topic layers are then
    diffed whole once."""
    for statement in CLUSTER_SCHEMA:
        conn.execute(statement)


@dataclass(frozen=True)
class Mark:
    """Where staging.db's log stood: compare a later one with it (`changed_since`)."""

    version: int
    origin: str
    """The first run of the ledger (id and start): another staging.db has another origin."""
    cluster_run: str | None = None
    """The newest cluster run (`cluster_runs`): the topic layers' rows are that run's."""
    stage_run: str = ""
    """The newest stage run's row (id and start) when the mark was taken: the reader's own, so every write the
    mark counts as seen came before it. A staging.db restored from a copy older than the mark lacks that row, and
    the mark is refused, even when the writes since brought the log's version past the mark's (which reuses
    versions the mark counts as seen). Empty in marks taken before it was kept: not checked."""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def as_tuple(self) -> tuple[Any, ...]:
        """The fields in order (what `Mark(*fields)` takes back; older stored tuples are shorter)."""
        return astuple(self)

    @classmethod
    def from_json(cls, found: object) -> Mark | None:
        if not isinstance(found, dict):
            return None
        try:
            run = found.get("cluster_run")
            return cls(
                int(found["version"]),
                str(found["origin"]),
                None if run is None else str(run),
                str(found.get("stage_run") or ""),
            )
        except (KeyError, TypeError, ValueError):
            return None


def tracked(conn: sqlite3.Connection) -> bool:
    """staging.db logs its changes (migration 12 applied)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'staging_changes'")
    return found.fetchone() is not None


def mark(conn: sqlite3.Connection) -> Mark:
    """The log as it stands now."""
    row = conn.execute(
        "SELECT (SELECT COALESCE(MAX(version), 0) FROM staging_changes),"
        " (SELECT id || ' ' || started_at FROM runs ORDER BY rowid LIMIT 1), (SELECT MAX(run_id) FROM cluster_runs),"
        " (SELECT id || ' ' || started_at FROM stage_runs ORDER BY id DESC LIMIT 1)"
    ).fetchone()
    return Mark(int(row[0]), str(row[1] or ""), None if row[2] is None else str(row[2]), str(row[3] or ""))


def comparable(conn: sqlite3.Connection, since: Mark) -> bool:
    """staging.db is the one the mark was taken of, and its log has only grown since (and it is no copy older
    than the mark: `Mark.stage_run`)."""
    now = mark(conn)
    return (
        now.origin == since.origin
        and now.version >= since.version
        and (not since.stage_run or _stage_run_present(conn, since.stage_run))
    )


def _stage_run_present(conn: sqlite3.Connection, stage_run: str) -> bool:
    row_id, _, started_at = stage_run.partition(" ")
    try:
        found = conn.execute(
            "SELECT 1 FROM stage_runs WHERE id = ? AND started_at = ?", (int(row_id), started_at)
        ).fetchone()
    except ValueError:
        return False
    return found is not None


def changed_since(conn: sqlite3.Connection, kind: str, since: Mark) -> Iterator[str]:
    """Ids of one kind changed after the mark (each once, in id order; `ALL` first when a change could not be
    traced to an id)."""
    rows = conn.execute(
        "SELECT id FROM staging_changes WHERE version > ? AND kind = ? ORDER BY id", (since.version, kind)
    )
    for row in rows:
        yield str(row[0])


def topic_links_changed(conn: sqlite3.Connection, kind: str, since_run: str) -> list[str]:
    """Items (`kind`: segment or concept) whose topic links differ between cluster run `since_run` and the newest,
    with a few more (links written and retired between them), in id order.

    A link row is live at run R when R is in [run_id, retired_run_id) (staging/topics.py). A row live at the newest
    run and not at `since_run` was written after it (run_id > since_run); a row live at `since_run` and not at the
    newest was retired after it (retired_run_id > since_run). Both are still stored while `since_run` is kept
    (`staging.topics.prune` deletes only the retired rows no kept run sees), and `since_run`'s rows are unchanged
    unless its `cluster_runs` row was deleted since (logged as `cluster`), which the caller checks first."""
    rows = conn.execute(  # `+kind`: the run indexes, not the primary key's (kind, ...) scan of a whole kind
        "SELECT item_id FROM topic_link_rows WHERE run_id > :run AND +kind = :kind UNION"
        " SELECT item_id FROM topic_link_rows WHERE retired_run_id > :run AND +kind = :kind ORDER BY 1",
        {"run": since_run, "kind": kind},
    )
    return [str(row[0]) for row in rows]
