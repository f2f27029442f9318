"""The memory layers' rows that may have changed since the cues run a target last loaded, instead of all of them.

An incremental cues run (memory/cues_incremental.py) rewrites only the conversations that changed; the rest of
its rows equal the run before. Its memory_runs summary lists the conversations it rebuilt or dropped (`changed`,
against its `base_run`) and every conversation changed since the last full build (`changed_since_full`). When the
target's manifest equals an earlier run L of the same full build (staging/memory_loaded.py), a row of the newest
run R can differ from the manifest only if it is

- a Cue linked to a message of a changed conversation (its df, idf or name moved);
- a CUES edge into a message of a changed conversation,

in L or in R, where the changed conversations are those the runs after L rebuilt or dropped (each run's
`changed`, followed back from R to L through `base_run`; the superset `changed_since_full` when a run between them
was pruned: it grows with every scheduled run until the next full build). So the load reads those rows of R and
looks up those keys in the manifest: O(what changed), not O(archive) nor O(runs). Deletions are the candidate keys
the manifest holds and R does not. A load that was killed half way resumes the same way (the manifest is then part
L, part R: both differ from R only on candidate keys); a load of anything else, or of a full build, diffs
everything (plan.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from load.layers import CUE_CONTENT, CUES, Layer, NodeLayer
from load.plan import ROW_OVERHEAD, Change, delete_params, source_rows
from staging import memory as memory_store
from staging.memory_history import LIVE

CHUNK = 500

# layer name -> (the column a candidate key restricts, which candidate set, the memory_edges kind for edges)
RESTRICT: dict[str, tuple[str, str, str | None]] = {
    CUES.name: ("id", "cues", None),
    CUE_CONTENT.name: ("dst", "content", "cue-content"),
}


@dataclass
class MemoryDelta:
    """The candidate ids: messages of changed conversations and their cues, in L or in R."""

    loaded_run: str
    run: str
    ids: dict[str, list[str]] = field(default_factory=dict)

    def covers(self, layer: Layer) -> bool:
        return layer.name in RESTRICT


def plan(staging: sqlite3.Connection, loaded: str | None, loading: str | None) -> MemoryDelta | None:
    """The delta from the run the target holds to the newest run, or None: diff everything."""
    run = memory_store.latest_run(staging)
    if run is None or loaded is None or (loading is not None and loading != run):
        return None
    new, old = memory_store.run_summary(staging, run), memory_store.run_summary(staging, loaded)
    if new is None or old is None:  # the loaded run's rows are gone: no way to name what vanished
        return None
    full = new["summary"].get("full_run")
    if full is None or old["summary"].get("full_run") != full:
        return None
    changed = _changed_between(staging, loaded, new) if run != loaded else []
    return MemoryDelta(loaded, run, _candidates(staging, (loaded, run), changed))


def _changed_between(staging: sqlite3.Connection, loaded: str, new: dict[str, Any]) -> list[str]:
    """The conversations rebuilt or dropped by the runs after `loaded` up to `new`: each incremental run's own
    change (`changed`), followed back through `base_run`. When that chain is broken (a run between them pruned, or
    written by a chatmem that kept no per-run list), every conversation changed since the full build: a superset,
    which grows with the runs until the next full build."""
    changed: set[str] = set()
    summary: dict[str, Any] | None = new
    while summary is not None and summary["run_id"] != loaded:
        own = summary["summary"].get("changed")
        base = summary["summary"].get("base_run")
        if own is None or base is None:
            return [str(c) for c in new["summary"].get("changed_since_full", [])]
        changed.update(str(c) for c in own)
        summary = memory_store.run_summary(staging, str(base))
    if summary is None:
        return [str(c) for c in new["summary"].get("changed_since_full", [])]
    return sorted(changed)


def _candidates(staging: sqlite3.Connection, runs: tuple[str, str], changed: Sequence[str]) -> dict[str, list[str]]:
    staging.execute("DROP TABLE IF EXISTS temp.load_changed")
    staging.execute("CREATE TEMP TABLE load_changed (conversation_id TEXT PRIMARY KEY) WITHOUT ROWID")
    staging.executemany("INSERT OR IGNORE INTO temp.load_changed VALUES (?)", ((c,) for c in changed))
    try:
        content = _column(
            staging,
            "SELECT DISTINCT c.content_id FROM temp.load_changed l CROSS JOIN memory_content c"
            " INDEXED BY memory_content_by_conversation ON c.conversation_id = l.conversation_id"
            f" WHERE c.kind = 'message' AND (({LIVE}) OR ({LIVE}))",
            (runs[0], runs[0], runs[1], runs[1]),
        )
        staging.execute("DROP TABLE IF EXISTS temp.load_content")
        staging.execute("CREATE TEMP TABLE load_content (content_id TEXT PRIMARY KEY) WITHOUT ROWID")
        staging.executemany("INSERT INTO temp.load_content VALUES (?)", ((c,) for c in content))
        linked = (
            "SELECT DISTINCT e.src FROM temp.load_content c"
            " CROSS JOIN memory_edges e INDEXED BY memory_edges_by_dst ON e.dst = c.content_id"
            f" AND e.kind = ? AND ({LIVE})"
        )
        cues: set[str] = set()
        for run in runs:
            cues.update(_column(staging, linked, ("cue-content", run, run)))
    finally:
        staging.execute("DROP TABLE IF EXISTS temp.load_changed")
        staging.execute("DROP TABLE IF EXISTS temp.load_content")
    return {"content": sorted(content), "cues": sorted(cues)}


def _column(conn: sqlite3.Connection, sql: str, params: Iterable[object]) -> list[str]:
    return [str(r[0]) for r in conn.execute(sql, tuple(params))]


def changes(
    rows_db: sqlite3.Connection,
    manifest_db: sqlite3.Connection,
    target: str,
    layer: Layer,
    delta: MemoryDelta,
    counted: Callable[[Iterator[Change]], Iterator[Change]],
) -> Iterator[Change]:
    """What the layer must change in the graph, from the candidate rows only, in key order (like plan.diff)."""
    column, which, kind = RESTRICT[layer.name]
    ids = delta.ids[which]
    current: dict[str, Change] = {}
    keys: set[str] = set()
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        marks = ",".join("?" * len(chunk))
        if isinstance(layer, NodeLayer):
            sql = f"SELECT CAST(id AS TEXT) AS _key, * FROM ({layer.sql}) WHERE id IN ({marks}) ORDER BY _key"
            keys.update(chunk)
        else:
            source = layer.sql
            if column == "dst":  # without statistics the planner walks the run's whole primary key per chunk
                source = source.replace("FROM memory_edges", "FROM memory_edges INDEXED BY memory_edges_by_dst", 1)
            sql = (
                "SELECT json_array(CAST(src AS TEXT), CAST(dst AS TEXT)) AS _key, * FROM"
                f" ({source}) WHERE src IS NOT NULL AND dst IS NOT NULL AND {column} IN ({marks}) ORDER BY _key"
            )
            old = (  # the loaded run's edges of the candidates: those R lacks are deleted
                "SELECT json_array(src, dst) FROM memory_edges"
                + (" INDEXED BY memory_edges_by_dst" if column == "dst" else "")
                + f" WHERE {LIVE} AND kind = ?"
                f" AND {column} IN ({marks})" + (" AND dst NOT LIKE 'merged:%'" if column == "dst" else "")
            )
            keys.update(_column(rows_db, old, (delta.loaded_run, delta.loaded_run, kind, *chunk)))
        for change in counted(source_rows(rows_db.execute(sql, chunk), layer)):
            current[change.key] = change
    keys.update(current)
    ordered = sorted(keys)
    loaded: dict[str, int] = {}
    for start in range(0, len(ordered), CHUNK):
        chunk = ordered[start : start + CHUNK]
        marks = ",".join("?" * len(chunk))
        for key, row_hash in manifest_db.execute(
            f"SELECT key, row_hash FROM load_manifest WHERE target = ? AND layer = ? AND key IN ({marks})",
            (target, layer.name, *chunk),
        ):
            loaded[str(key)] = int(row_hash)
    for key in ordered:
        row = current.get(key)
        if row is None:
            if key in loaded:
                yield Change("delete", key, 0, delete_params(layer, key), ROW_OVERHEAD + len(key))
        elif loaded.get(key) != row.row_hash:
            row.new = key not in loaded
            yield row
