"""Incremental cues runs in SQL (staging.memory's tables): what a base run wrote for the conversations that did not
change is carried into the new run without rebuilding it, and old runs' rows nothing reads any more are pruned.

A run's rows stay self-contained (every row carries its run id, as recall and the load read them); only the
rebuilt conversations go through the graph builder. The conversations to rebuild (changed, new, or gone) sit in
`temp.memory_rebuilt`, their base content ids in `temp.memory_rebuilt_content`, for the statements below.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable

from staging.db import Transaction
from staging.memory import RUN_TABLES, has_memory

CONTENT_COLUMNS = (
    "content_id, kind, conversation_id, seq, role, author, created_at, day, source, key_text, tokens, merged_into"
)


def mark_rebuilt(conn: sqlite3.Connection, base_run: str, conversation_ids: Iterable[str]) -> None:
    """Name the conversations whose rows are rebuilt (or dropped), and collect their content ids in the base run
    (one scan of the base run's content: there is no index by conversation)."""
    conn.execute("DROP TABLE IF EXISTS temp.memory_rebuilt")
    conn.execute("DROP TABLE IF EXISTS temp.memory_rebuilt_content")
    conn.execute("CREATE TEMP TABLE memory_rebuilt (conversation_id TEXT PRIMARY KEY) WITHOUT ROWID")
    conn.execute("CREATE TEMP TABLE memory_rebuilt_content (content_id TEXT PRIMARY KEY) WITHOUT ROWID")
    conn.executemany("INSERT OR IGNORE INTO temp.memory_rebuilt VALUES (?)", ((c,) for c in conversation_ids))
    conn.execute(
        "INSERT INTO temp.memory_rebuilt_content SELECT content_id FROM memory_content"
        " WHERE run_id = ? AND conversation_id IN (SELECT conversation_id FROM temp.memory_rebuilt)",
        (base_run,),
    )


def drop_marks(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TABLE IF EXISTS temp.memory_rebuilt")
    conn.execute("DROP TABLE IF EXISTS temp.memory_rebuilt_content")


def rebuilt_contributions(conn: sqlite3.Connection, base_run: str) -> tuple[Counter[str], Counter[str]]:
    """What the rebuilt conversations added to the base run's cue document frequencies and tag sizes: one per
    cue-content and tag-content edge of their messages (the builder counts exactly those)."""
    cues: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    # INDEXED BY: without statistics the planner walks the run's whole primary key for every content id
    for src, kind, count in conn.execute(
        "SELECT e.src, e.kind, COUNT(*) FROM temp.memory_rebuilt_content r"
        " CROSS JOIN memory_edges e INDEXED BY memory_edges_by_dst ON e.run_id = ? AND e.dst = r.content_id"
        " WHERE e.kind IN ('cue-content', 'tag-content') GROUP BY e.src, e.kind",
        (base_run,),
    ):
        (cues if kind == "cue-content" else tags)[str(src)] += int(count)
    return cues, tags


def carry_content(conn: sqlite3.Connection, base_run: str, run_id: str) -> dict[str, int]:
    """Copy the base run's content, content edges and merges of every conversation not rebuilt into `run_id`.
    Returns the rows copied per kind (content, merged, edges)."""
    before = conn.total_changes
    conn.execute(
        f"INSERT INTO memory_content (run_id, {CONTENT_COLUMNS}) SELECT ?, {CONTENT_COLUMNS} FROM memory_content"
        " WHERE run_id = ? AND content_id NOT IN (SELECT content_id FROM temp.memory_rebuilt_content)",
        (run_id, base_run),
    )
    content = conn.total_changes - before
    merged = int(
        conn.execute(
            "SELECT COUNT(*) FROM memory_content WHERE run_id = ? AND kind = 'merged'"
            " AND content_id NOT IN (SELECT content_id FROM temp.memory_rebuilt_content)",
            (base_run,),
        ).fetchone()[0]
    )
    before = conn.total_changes
    conn.execute(
        "INSERT INTO memory_edges (run_id, src, dst, kind, weight) SELECT ?, src, dst, kind, weight FROM memory_edges"
        " WHERE run_id = ? AND kind != 'cue-tag' AND dst NOT IN (SELECT content_id FROM temp.memory_rebuilt_content)",
        (run_id, base_run),
    )
    edges = conn.total_changes - before
    conn.execute(
        "INSERT INTO memory_merges (run_id, merged_id, original_id) SELECT ?, merged_id, original_id"
        " FROM memory_merges WHERE run_id = ?"
        " AND merged_id NOT IN (SELECT content_id FROM temp.memory_rebuilt_content)",
        (run_id, base_run),
    )
    return {"content": content, "merged": merged, "edges": edges}


def carry_cue_conversations(conn: sqlite3.Connection, base_run: str, run_id: str) -> int:
    """The cue -> conversation edges of conversations not rebuilt, re-weighted by the new run's document frequency:
    a base weight is (messages linked there) / (base df), so the count is recovered from it. Needs the new run's
    cues written first; hubs (the new run's flag) get none. Returns the edges written."""
    before = conn.total_changes
    conn.execute(
        "INSERT INTO memory_edges (run_id, src, dst, kind, weight)"
        " SELECT ?, e.src, e.dst, 'cue-tag', MIN(1.0, ROUND(ROUND(e.weight * b.df) / n.df, 6))"
        " FROM memory_edges e"
        " JOIN memory_cues b ON b.run_id = e.run_id AND b.cue_id = e.src"
        " JOIN memory_cues n ON n.run_id = ? AND n.cue_id = e.src"
        " WHERE e.run_id = ? AND e.kind = 'cue-tag' AND e.dst LIKE 'conv:%' AND n.hub = 0 AND n.df > 0"
        " AND substr(e.dst, 6) NOT IN (SELECT conversation_id FROM temp.memory_rebuilt)",
        (run_id, run_id, base_run),
    )
    return conn.total_changes - before


def dangling_edges(conn: sqlite3.Connection, run_id: str) -> int:
    """Edges of the run whose source is no cue or tag of the run, or cue -> tag edges whose tag is not in it."""
    sources = conn.execute(
        "SELECT COUNT(*) FROM (SELECT DISTINCT src FROM memory_edges WHERE run_id = ?) s"
        " WHERE s.src NOT IN (SELECT cue_id FROM memory_cues WHERE run_id = ?)"
        " AND s.src NOT IN (SELECT tag_id FROM memory_tags WHERE run_id = ?)",
        (run_id, run_id, run_id),
    ).fetchone()[0]
    # Content edges are carried with their content (the same filter), rebuilt ones checked by the stage: only the
    # cue -> tag edges are checked here, against the tags written last.
    targets = conn.execute(
        "SELECT COUNT(*) FROM memory_edges e WHERE e.run_id = ? AND e.kind = 'cue-tag' AND NOT EXISTS"
        " (SELECT 1 FROM memory_tags t WHERE t.run_id = e.run_id AND t.tag_id = e.dst)",
        (run_id,),
    ).fetchone()[0]
    return int(sources) + int(targets)


def stale_runs(conn: sqlite3.Connection, keep: Iterable[str]) -> list[str]:
    """The runs with memory rows other than those to keep, oldest first."""
    if not has_memory(conn):
        return []
    kept = set(keep)
    return [str(r[0]) for r in conn.execute("SELECT run_id FROM memory_runs ORDER BY run_id") if r[0] not in kept]


def delete_run(conn: sqlite3.Connection, run_id: str) -> None:
    """Every memory row of one run, in one transaction (the run row last: a killed delete is finished by the next
    prune, which finds the run still listed)."""
    with Transaction(conn):
        for table in reversed(RUN_TABLES):
            conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
