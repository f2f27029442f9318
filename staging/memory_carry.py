"""Incremental cues runs in SQL (staging.memory's tables, shared across runs: staging/memory_history.py): what the
base run wrote for the conversations that did not change stays current and is shared by the new run, nothing is
copied; the rebuilt conversations' rows are retired and written again.

The conversations to rebuild (changed, new, or gone) sit in `temp.memory_rebuilt`, their current content ids in
`temp.memory_rebuilt_content`, for the statements below. Every statement reads the current rows (the base run's
memory: the writer has undone any later run) and is driven by an index (content by conversation, edges by
source or target, rows by the run that retired them): the cost follows what changed, not the archive.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence

from staging import memory_history as history
from staging.memory import EdgeTuple
from staging.memory_history import CURRENT


def mark_rebuilt(conn: sqlite3.Connection, conversation_ids: Iterable[str]) -> None:
    """Name the conversations whose rows are rebuilt (or dropped), and collect their current content ids."""
    conn.execute("DROP TABLE IF EXISTS temp.memory_rebuilt")
    conn.execute("DROP TABLE IF EXISTS temp.memory_rebuilt_content")
    conn.execute("CREATE TEMP TABLE memory_rebuilt (conversation_id TEXT PRIMARY KEY) WITHOUT ROWID")
    conn.execute("CREATE TEMP TABLE memory_rebuilt_content (content_id TEXT PRIMARY KEY) WITHOUT ROWID")
    conn.executemany("INSERT OR IGNORE INTO temp.memory_rebuilt VALUES (?)", ((c,) for c in conversation_ids))
    conn.execute(
        "INSERT OR IGNORE INTO temp.memory_rebuilt_content SELECT c.content_id FROM temp.memory_rebuilt r"
        " CROSS JOIN memory_content c INDEXED BY memory_content_by_conversation"
        f" ON c.conversation_id = r.conversation_id WHERE c.{CURRENT}"
    )


def drop_marks(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TABLE IF EXISTS temp.memory_rebuilt")
    conn.execute("DROP TABLE IF EXISTS temp.memory_rebuilt_content")


def rebuilt_contributions(conn: sqlite3.Connection) -> tuple[Counter[str], Counter[str]]:
    """What the rebuilt conversations added to the current cue document frequencies and tag sizes: one per
    cue-content and tag-content edge of their messages (the builder counts exactly those)."""
    cues: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    for src, kind, count in conn.execute(
        "SELECT e.src, e.kind, COUNT(*) FROM temp.memory_rebuilt_content r"
        " CROSS JOIN memory_edges e INDEXED BY memory_edges_by_dst ON e.dst = r.content_id"
        f" WHERE e.{CURRENT} AND e.kind IN ('cue-content', 'tag-content') GROUP BY e.src, e.kind"
    ):
        (cues if kind == "cue-content" else tags)[str(src)] += int(count)
    return cues, tags


def retire_rebuilt(conn: sqlite3.Connection, run_id: str) -> dict[str, int]:
    """Retire the current content, content edges and merges of the rebuilt conversations as of `run_id` (the
    builder writes their new rows). Returns the rows retired per kind (content, merged, edges)."""
    rebuilt = "(SELECT content_id FROM temp.memory_rebuilt_content)"
    merged = int(
        conn.execute(
            f"SELECT COUNT(*) FROM memory_content WHERE {CURRENT} AND kind = 'merged' AND content_id IN {rebuilt}"
        ).fetchone()[0]
    )
    before = conn.total_changes
    conn.execute(f"UPDATE memory_content SET retired_run_id = ? WHERE {CURRENT} AND content_id IN {rebuilt}", (run_id,))
    content = conn.total_changes - before
    before = conn.total_changes
    conn.execute(
        "UPDATE memory_edges INDEXED BY memory_edges_by_dst SET retired_run_id = ?"
        f" WHERE {CURRENT} AND kind != 'cue-tag' AND dst IN {rebuilt}",
        (run_id,),
    )
    edges = conn.total_changes - before
    conn.execute(f"UPDATE memory_merges SET retired_run_id = ? WHERE {CURRENT} AND merged_id IN {rebuilt}", (run_id,))
    return {"content": content, "merged": merged, "edges": edges}


def replace_cue_tags(conn: sqlite3.Connection, run_id: str, edges: Sequence[EdgeTuple]) -> tuple[int, int]:
    """The builder's cue -> tag edges (the rebuilt conversations' cue -> conversation edges and every cue ->
    concept type edge) made current: equal ones shared, the rest of those two scopes retired. Returns the change
    in the run's edge count and the edges written."""
    rebuilt = [e for e in edges if e[1].startswith("conv:")]
    types = [e for e in edges if not e[1].startswith("conv:")]
    if len(rebuilt) + len(types) != len(edges) or any(not e[1].startswith("ctype:") for e in types):
        raise ValueError("cue -> tag edges other than to conversations and concept types")
    retired, written = history.replace(
        conn,
        "memory_edges",
        run_id,
        rebuilt,
        "t.kind = 'cue-tag' AND t.dst IN (SELECT 'conv:' || conversation_id FROM temp.memory_rebuilt)",
    )
    retired_types, written_types = history.replace(
        conn, "memory_edges", run_id, types, "t.kind = 'cue-tag' AND t.dst >= 'ctype:' AND t.dst < 'ctype;'"
    )
    return written + written_types - retired - retired_types, written + written_types


def reweigh_cue_conversations(conn: sqlite3.Connection, run_id: str) -> tuple[int, int]:
    """The cue -> conversation edges of conversations not rebuilt, for the cues `run_id` changed (retired: their
    document frequency, hub flag or name moved, or the cue is gone): re-weighted by the new document frequency (a
    weight is (messages linked there) / df, so the count is recovered from it); a hub or a cue gone gets none.
    Needs the run's cues written first. Returns the change in the run's edge count and the edges written."""
    changed = "(SELECT cue_id FROM memory_cues INDEXED BY memory_cues_retired WHERE retired_run_id = ?)"
    carried = (
        "e.kind = 'cue-tag' AND e.dst >= 'conv:' AND e.dst < 'conv;'"
        " AND substr(e.dst, 6) NOT IN (SELECT conversation_id FROM temp.memory_rebuilt)"
    )
    before = conn.total_changes
    conn.execute(
        f"UPDATE memory_edges AS e SET retired_run_id = ? WHERE e.{CURRENT} AND e.src IN {changed} AND {carried}",
        (run_id, run_id),
    )
    retired = conn.total_changes - before
    before = conn.total_changes
    conn.execute(
        "INSERT INTO memory_edges (run_id, src, dst, kind, weight)"
        " SELECT ?, e.src, e.dst, 'cue-tag', MIN(1.0, ROUND(ROUND(e.weight * b.df) / n.df, 6))"
        " FROM memory_cues b INDEXED BY memory_cues_retired"
        " JOIN memory_edges e ON e.src = b.cue_id AND e.retired_run_id = b.retired_run_id"
        f" JOIN memory_cues n ON n.cue_id = b.cue_id AND n.{CURRENT}"
        f" WHERE b.retired_run_id = ? AND n.hub = 0 AND n.df > 0 AND {carried}",
        (run_id, run_id),
    )
    written = conn.total_changes - before
    return written - retired, written


def dangling_edges(conn: sqlite3.Connection, run_id: str) -> int:
    """Current edges whose source is no current cue or tag, or cue -> tag edges whose tag is not current, among
    the rows `run_id` touched: the cues and tags it retired with no current successor (every other current edge
    is the base run's, checked when it was written, or a rebuilt one, checked by the stage)."""
    gone = (
        "SELECT r.{key} FROM {table} r INDEXED BY {table}_retired WHERE r.retired_run_id = ? AND NOT EXISTS"
        " (SELECT 1 FROM {table} c WHERE c.{key} = r.{key} AND c.retired_run_id IS NULL)"
    )
    gone_cues = gone.format(table="memory_cues", key="cue_id")
    gone_tags = gone.format(table="memory_tags", key="tag_id")
    sources = conn.execute(
        f"SELECT COUNT(*) FROM memory_edges e WHERE e.{CURRENT} AND e.src IN ({gone_cues} UNION ALL {gone_tags})",
        (run_id, run_id),
    ).fetchone()[0]
    targets = conn.execute(
        f"SELECT COUNT(*) FROM memory_edges e INDEXED BY memory_edges_by_dst WHERE e.{CURRENT}"
        f" AND e.kind = 'cue-tag' AND e.dst IN ({gone_tags})",
        (run_id,),
    ).fetchone()[0]
    # the cue -> tag edges the run wrote: their tag must be current (rebuilt conversations, concept types)
    written = 0
    for scope in (
        "e.dst IN (SELECT 'conv:' || conversation_id FROM temp.memory_rebuilt)",
        "e.dst >= 'ctype:' AND e.dst < 'ctype;'",
    ):
        written += conn.execute(
            f"SELECT COUNT(*) FROM memory_edges e INDEXED BY memory_edges_by_dst WHERE {scope}"
            f" AND e.{CURRENT} AND e.kind = 'cue-tag' AND NOT EXISTS"
            f" (SELECT 1 FROM memory_tags t WHERE t.tag_id = e.dst AND t.{CURRENT})"
        ).fetchone()[0]
    return int(sources) + int(targets) + int(written)
