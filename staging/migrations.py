"""Versioned schema migrations of archive.db and staging.db: one ordered list per file, applied on open.

Each file records its schema version in `PRAGMA user_version` and the history of what was applied, when and by
which code version, in `schema_migrations`. Opening a file read-write (`staging.db.connect`, through
`open_archive` / `open_staging`) applies every migration above its version, each in its own transaction, so a
data dir written by an older chatmem opens and upgrades in place; a file written by a newer chatmem than this
one is refused with a clear message instead of being half-understood.

History:

    archive.db  1  sources, conversations, messages, quarantine, message_chronology
                2  messages_fts: full-text search over message text (staging/fts.py), existing rows indexed once
                3  archive_changes: which conversations were updated or deleted, logged by triggers, so that the
                   load reads only what changed since its last mark (staging/archive_changes.py)
                4  visible_messages: the view of the messages a reader sees (`VISIBLE_MESSAGES`)
                5  conversation_digests: the digest of the dump last written to each conversation, kept by triggers,
                   so that ingest skips a conversation a newer dump repeats unchanged (staging/archive_digests.py)
                6  raw_digests: the digest of each conversation's bytes in its last dump, so that ingest skips it
                   without parsing it (staging/archive_digests.py, ingest/raw_skip.py)
                7  archive_epochs: a random token per write transaction, so that a mark of the change log is refused
                   on an archive restored from a copy older than the mark (staging/archive_changes.py)
    staging.db  1  the run ledger: runs, stage_runs, ingest_files
                2  every stage's tables, which stages used to create on first use (`ensure_schema`, before
                   this list existed): segments, embeddings, extractions, llm_calls, concepts, topics,
                   load state. Their statements say IF NOT EXISTS, so a file from that release keeps its rows.
                3  the cues stage's Cue-Tag-Content graph (staging/memory.py)
                4  facts: fact_mentions (written with each extraction), facts (bi-temporal validity) and
                   garden_changes (the garden stage's log), staging/facts.py
                5  runs and stage_runs: pid and host of the process, and the status `interrupted`
                   (staging/liveness.py: a `running` row whose process is gone is shown as interrupted)
                6  embedded_segments: which segment content the embed stage last embedded, so that a re-run
                   reads no text of an unchanged segment (staging/embeddings.py)
                7  runs and stage_runs: the start time of their process (pid_start), staging/liveness.py
                8  current_segments: the view of the segments no newer segmentation retired (`CURRENT_SEGMENTS`)
                9  the memory tables of migration 3 hold each row once, shared by the runs it belongs to
                   (run_id: the run that created it, retired_run_id: the run that retired it), existing runs
                   replayed into that form (staging/memory_history.py)
               10  topic_links and cluster_points hold each row once, shared by the cluster runs it belongs to
                   (topic_link_rows, cluster_point_rows: run_id, retired_run_id; the old names are views that
                   read each kept run as before), existing runs replayed into that form (staging/topics.py)
               11  the template rule's state (staging/template_state.py): each current extraction's evidence
                   sentences, the repeated ones with their places and decisions, so that a run redoes only what
                   changed (derived: built from every current extraction by the first concepts run after it)
               12  staging_changes: which conversations' segments, messages' concept evidence and concepts
                   changed, logged by triggers, so that the load reads only the rows of the Segment, Concept,
                   CONTAINS_MESSAGE and EVIDENCE_FOR layers changed since its last mark (staging/staging_changes.py)
               14  the concept resolver's index kept between runs (staging/resolver_state.py): a concepts run
                   updates the entries its changed concepts reach and reads the rest on use (derived: built from
                   every concept by the first concepts run after it; extract/resolve_stored.py)
               15  what the garden's decisions read, kept between runs (staging/garden_state.py): per concept its
                   last evidence time per source and its names, per conversation its evidence counts and kept
                   concepts, per source its newest message, the folded name map, statement times, and the concepts
                   and fact groups whose inputs changed (triggers), so that a garden run redoes only what moved
                   (derived: built by the first garden run after it; garden/incremental.py, garden/facts_delta.py)
               16  staging_changes logs a deleted or rewritten cluster run (`cluster`), so that the load reads only
                   the Topic and BELONGS_TO rows that differ from the cluster run its mark names
                   (staging/staging_changes.py, load/staging_delta.py)
               17  template_drops emptied once: a conversation's remembered replay of the template rule is now kept
                   until an event forgets it, not checked by a signature each run (extract/template_drops.py), and
                   a row the older code kept past such an event would be trusted (derived: one replay rebuilds it)
               18  segment_mark: the archive mark (staging/archive_changes.py) and parameters the segments were
                   last brought up to date with, so that the segment stage reads the active paths of the
                   conversations changed since, not every one (derived: without it the stage reads them all once)

Changing a table: append a Migration here (ALTER TABLE, a new table, a data fix); never edit one that has
shipped. The DDL of migration 2 lives in each stage's module (`SCHEMA`) and is frozen there for that reason.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from contracts.errors import ConfigError
from contracts.version import code_version
from staging import (
    archive_changes,
    archive_digests,
    concepts,
    embeddings,
    extractions,
    facts,
    fts,
    garden_state,
    llm_calls,
    load_state,
    memory,
    memory_history,
    resolver_state,
    segments,
    staging_changes,
    template_state,
    topics,
)
from staging.liveness import migrate_liveness, migrate_pid_start

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Migration:
    """Moves a file's schema from `version - 1` to `version`."""

    version: int
    description: str
    apply: Callable[[sqlite3.Connection], None]


def statements(*groups: Sequence[str]) -> Callable[[sqlite3.Connection], None]:
    """A migration that runs DDL statements in order."""

    def run(conn: sqlite3.Connection) -> None:
        for group in groups:
            for statement in group:
                if statement.strip():
                    conn.execute(statement)

    return run


ARCHIVE_V1 = """
CREATE TABLE sources (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL UNIQUE,
    format TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('importing', 'complete', 'partial')),
    imported_at TEXT NOT NULL,
    notes TEXT
);
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    title TEXT,
    created_at TEXT,
    updated_at TEXT,
    current_node TEXT,
    format TEXT NOT NULL,
    message_count INTEGER NOT NULL,
    source_id INTEGER NOT NULL REFERENCES sources(id),
    row_hash TEXT NOT NULL
);
CREATE TABLE messages (
    uuid TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    parent_id TEXT,
    role TEXT NOT NULL,
    author TEXT,
    content_type TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at TEXT,
    is_active INTEGER NOT NULL,
    is_hidden INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    raw TEXT,
    source_id INTEGER NOT NULL REFERENCES sources(id)
);
CREATE INDEX messages_by_conversation ON messages (conversation_id, seq);
CREATE TABLE quarantine (
    id INTEGER PRIMARY KEY,
    source_id INTEGER NOT NULL REFERENCES sources(id),
    locator TEXT NOT NULL,
    reason TEXT NOT NULL,
    raw TEXT NOT NULL,
    conversation_id TEXT,
    UNIQUE (source_id, locator, reason)
);
-- NEXT/PREV along each conversation's active path, by seq.
CREATE VIEW message_chronology AS
SELECT uuid, conversation_id, seq,
       LAG(uuid) OVER w AS prev_id,
       LEAD(uuid) OVER w AS next_id
FROM messages
WHERE is_active = 1
WINDOW w AS (PARTITION BY conversation_id ORDER BY seq);
"""

VISIBLE_MESSAGES = [
    # What a reader sees of a conversation: its active path (is_active = 1: not a side branch, still in the
    # latest dump) without what the chat app hides (is_hidden = 1: system prompts, memory tool calls, empty
    # system turns). A plain view: SQLite flattens it into each query, so the query plans and indexes are those
    # of the same filter written out (tests/test_views.py).
    "CREATE VIEW IF NOT EXISTS visible_messages AS SELECT * FROM messages WHERE is_active = 1 AND is_hidden = 0"
]
CURRENT_SEGMENTS = [
    # The segments of each conversation's latest segmentation: a retired one (retired_run_id set) is kept for the
    # extractions and evidence that name it, but is no longer current. Flattened into each query, as above.
    "CREATE VIEW IF NOT EXISTS current_segments AS SELECT * FROM segments WHERE retired_run_id IS NULL"
]

LEDGER_V1 = [
    """CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
        stages TEXT NOT NULL,
        exports TEXT NOT NULL,
        settings TEXT NOT NULL,
        code_version TEXT NOT NULL,
        error TEXT
    )""",
    """CREATE TABLE stage_runs (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs(id),
        stage TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'skipped', 'failed')),
        started_at TEXT NOT NULL,
        finished_at TEXT,
        duration_s REAL,
        input_fingerprint TEXT NOT NULL,
        settings TEXT NOT NULL,
        code_version TEXT NOT NULL,
        rows_in INTEGER,
        rows_out INTEGER,
        counts TEXT,
        notes TEXT,
        error TEXT,
        rerun_hint TEXT
    )""",
    "CREATE INDEX stage_runs_by_run ON stage_runs (run_id, stage)",
    """CREATE TABLE ingest_files (
        run_id TEXT NOT NULL REFERENCES runs(id),
        stage_run_id INTEGER NOT NULL REFERENCES stage_runs(id),
        path TEXT NOT NULL,
        sha256 TEXT,
        format TEXT,
        status TEXT NOT NULL CHECK (status IN ('ingested', 'partial', 'skipped', 'failed')),
        conversations INTEGER NOT NULL DEFAULT 0,
        messages_read INTEGER NOT NULL DEFAULT 0,
        messages_inserted INTEGER NOT NULL DEFAULT 0,
        messages_updated INTEGER NOT NULL DEFAULT 0,
        messages_unchanged INTEGER NOT NULL DEFAULT 0,
        messages_retired INTEGER NOT NULL DEFAULT 0,
        quarantined INTEGER NOT NULL DEFAULT 0,
        detail TEXT,
        PRIMARY KEY (run_id, path)
    )""",
]

ARCHIVE = (
    Migration(1, "sources, conversations, messages, quarantine", statements(ARCHIVE_V1.split(";\n"))),
    Migration(2, "messages_fts: full-text search over message text", fts.create),
    Migration(3, "archive_changes: conversations updated or deleted, logged by triggers", archive_changes.create),
    Migration(4, "visible_messages: the view of the active, not hidden messages", statements(VISIBLE_MESSAGES)),
    Migration(
        5,
        "conversation_digests: each conversation's last dump, so that ingest skips it unchanged",
        archive_digests.create,
    ),
    Migration(
        6,
        "raw_digests: each conversation's bytes in its last dump, so that ingest skips parsing it",
        archive_digests.create_raw,
    ),
    Migration(
        7,
        "archive_epochs: a token per write, so that a change-log mark is refused on an archive restored from a copy",
        archive_changes.create_epochs,
    ),
)
STAGING = (
    Migration(1, "run ledger: runs, stage_runs, ingest_files", statements(LEDGER_V1)),
    Migration(
        2,
        "stage tables: segments, embeddings, extractions, llm_calls, concepts, topics, load state",
        statements(
            segments.SCHEMA,
            embeddings.SCHEMA,
            extractions.SCHEMA,
            llm_calls.SCHEMA,
            concepts.SCHEMA,
            topics.SCHEMA,
            load_state.SCHEMA,
        ),
    ),
    Migration(
        3,
        "the Cue-Tag-Content graph: memory_runs, memory_content, memory_cues, memory_tags, memory_edges, memory_merges",
        statements(memory.SCHEMA),
    ),
    Migration(4, "facts: fact_mentions, facts, garden_changes", statements(facts.SCHEMA)),
    Migration(5, "liveness: runs and stage_runs record pid and host; status 'interrupted'", migrate_liveness),
    Migration(
        6,
        "embedded_segments: the segment content each segment's vectors were derived from",
        statements(embeddings.SEGMENTS_SCHEMA),
    ),
    Migration(7, "liveness: runs and stage_runs record their process's start time (pid_start)", migrate_pid_start),
    Migration(8, "current_segments: the view of the segments not retired", statements(CURRENT_SEGMENTS)),
    Migration(9, "memory rows shared across runs: run_id created, retired_run_id retired", memory_history.migrate),
    Migration(
        10,
        "topic links and map points shared across cluster runs: topic_link_rows, cluster_point_rows",
        topics.migrate_shared,
    ),
    Migration(
        11,
        "the template rule's kept state: template_extractions, template_spans, template_repeated, template_places",
        statements(template_state.SCHEMA),
    ),
    Migration(
        12,
        "staging_changes: conversations re-segmented, messages whose evidence changed, concepts changed (triggers)",
        staging_changes.create,
    ),
    Migration(
        13,
        "load_manifest_counts: the manifest's rows per target and layer, kept by triggers",
        load_state.create_counts,
    ),
    Migration(
        14,
        "the concept resolver's index kept between runs: resolver_rows, resolver_claims, resolver_entries, "
        "resolver_exact, resolver_index, resolver_words, resolver_meta",
        statements(resolver_state.SCHEMA),
    ),
    Migration(
        15,
        "what the garden's decisions read, kept between runs: garden_meta, garden_dirty and garden_fact_dirty "
        "(triggers), garden_concepts, garden_names, garden_name_map, garden_places, garden_last, garden_counts, "
        "garden_kept, garden_sources, garden_fact_times",
        statements(garden_state.SCHEMA),
    ),
    Migration(
        16,
        "staging_changes: cluster runs deleted or rewritten since a load's mark (trigger on cluster_runs)",
        staging_changes.create_cluster,
    ),
    Migration(
        17,
        "template_drops emptied: remembered template replays are forgotten by events now, not re-signed each run",
        statements(["DELETE FROM template_drops"]),
    ),
    Migration(
        18,
        "segment_mark: the archive mark the segments were last brought up to date with (the segment stage reads what"
        " changed since)",
        statements(segments.MARK_SCHEMA),
    ),
)

_HISTORY = """CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at TEXT,
    code_version TEXT
)"""


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


# A file this big may take minutes to upgrade (staging.db migration 9 rewrites every memory row): whichever
# command opens it first, a read-only `chatmem recall` included, says so instead of hanging silently.
LARGE_BYTES = 200 * 1024 * 1024


def _announce_if_large(conn: sqlite3.Connection, name: str, current: int, pending: Sequence[Migration]) -> None:
    if current == 0 or not pending:
        return  # a new file: nothing to rewrite
    pages, page_size = (conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "page_size"))
    size = int(pages) * int(page_size)
    if size >= LARGE_BYTES:
        log.warning(
            "upgrading %s (%.1f GB) from schema version %d to %d, once: this may take a few minutes",
            name,
            size / 1e9,
            current,
            pending[-1].version,
        )


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration], *, name: str = "database") -> list[int]:
    """Apply every migration above the file's version, in order, one transaction each; returns those applied.

    A file at a version this code does not know (written by a newer chatmem) raises a ConfigError. A file that
    predates `schema_migrations` gets one row per version it already had, with no applied_at.
    """
    for expected, migration in enumerate(migrations, start=1):
        if migration.version != expected:
            raise ValueError(f"{name} migrations must be numbered 1, 2, ...: found {migration.version}")
    latest = len(migrations)
    current = schema_version(conn)
    if current > latest:
        raise ConfigError(
            f"{name} is at schema version {current}, but this chatmem knows versions up to {latest}:"
            " it was written by a newer chatmem; upgrade chatmem to open it"
        )
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_HISTORY)
        known = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        conn.executemany(
            "INSERT INTO schema_migrations (version, description) VALUES (?, ?)",
            [(m.version, m.description) for m in migrations[:current] if m.version not in known],
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    _announce_if_large(conn, name, current, migrations[current:])
    applied: list[int] = []
    for migration in migrations[current:]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if schema_version(conn) >= migration.version:  # another process upgraded it meanwhile
                conn.execute("COMMIT")
                continue
            migration.apply(conn)
            conn.execute(
                "INSERT OR REPLACE INTO schema_migrations (version, description, applied_at, code_version)"
                " VALUES (?, ?, ?, ?)",
                (migration.version, migration.description, datetime.now(UTC).isoformat(), code_version()),
            )
            conn.execute(f"PRAGMA user_version={migration.version}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        applied.append(migration.version)
    return applied
