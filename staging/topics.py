"""staging.db: what the cluster stage made of one run: topics, weighted BELONGS_TO links, the map, the trials.

Tables (`SCHEMA`: migration 2 of staging/migrations.py, frozen; `SHARED_SCHEMA`: migration 10; change them with a
new migration there):

- `cluster_runs`: one row per kept cluster run: status (clustered | skipped), model, study, points, topics,
  outlier share before and after outlier handling, validity (relative DBCV), best parameters, seconds per step,
  notes.
- `topics`: (run_id, topic) -> topic_uid (a content key: the embedding model and the sorted member segment
  ids, so an unchanged topic keeps its id across runs), label, size, keywords, representative segment ids. One
  set per kept cluster run (a few hundred rows: a topic's size changes with every run that places a segment).
- `topic_links` (a view over `topic_link_rows`): the BELONGS_TO edges: (run_id, kind segment|concept, item_id) ->
  topic, weight 0..1 and where it came from (hdbscan: fitted member; predicted: placed by approximate_predict;
  reassigned: outlier handling).
- `cluster_points` (a view over `cluster_point_rows`): (run_id, segment_id) -> 2-D map coordinates and topic
  (-1: noise), for the topic map.
- `cluster_trials`: every Optuna trial of a study (the study itself is in optuna.db under the data dir), kept
  while a kept cluster run names the study (`prune`; optuna.db: cluster.tuning.prune_studies).
- `topic_labels`: LLM labels cached by (topic_uid, model, prompt version): a re-run makes no call. Kept while a
  kept cluster run has the topic (`prune`).

Shared rows (issue 23, docs/runs.md): a link or map point is written once and shared by every cluster run it
belongs to, the pattern segments and memory rows use: `run_id` (the run that wrote it) and `retired_run_id` (the
run that retired it, NULL while current). The views `topic_links` and `cluster_points` show, for each kept
cluster run R (a `cluster_runs` row), the rows live at R (`LIVE`), with R as their run_id: readers ask for a
run's links as before. A full fit retires every current row and writes its own; an incremental run
(cluster/assign.py) retires only the links and points of segments retired or placed again and of concepts merged
or placed again, and writes the new links: a run that places 30 segments writes about 30 rows, not a copy of
the archive's links. Cluster runs are written in run order (a re-run of a run older than the newest cluster run
is refused, `OlderRun`); a re-run of the newest first undoes what it wrote (`_undo`). After each write, the runs
not kept lose their cluster_runs and topics rows, and the retired rows no kept run sees go (`prune`; kept: the new
run and the one before it, the newest clustered run of each model, the cluster run each kept cues run read:
`memory_runs.summary`'s topic_run).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from staging.db import IN_VALUES, Transaction, json_values

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS cluster_runs (
        run_id TEXT PRIMARY KEY,
        status TEXT NOT NULL CHECK (status IN ('clustered', 'skipped')),
        model TEXT,
        study_name TEXT,
        points INTEGER NOT NULL,
        topics INTEGER NOT NULL,
        outlier_share REAL,
        outlier_share_raw REAL,
        validity REAL,
        params TEXT,
        seconds TEXT,
        notes TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS topics (
        run_id TEXT NOT NULL,
        topic INTEGER NOT NULL,
        topic_uid TEXT NOT NULL,
        label TEXT NOT NULL,
        size INTEGER NOT NULL,
        keywords TEXT NOT NULL,
        representatives TEXT NOT NULL,
        PRIMARY KEY (run_id, topic)
    )""",
    """CREATE TABLE IF NOT EXISTS topic_links (
        run_id TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('segment', 'concept')),
        item_id TEXT NOT NULL,
        topic INTEGER NOT NULL,
        topic_uid TEXT NOT NULL,
        weight REAL NOT NULL,
        source TEXT NOT NULL CHECK (source IN ('hdbscan', 'predicted', 'reassigned')),
        PRIMARY KEY (run_id, kind, item_id)
    )""",
    "CREATE INDEX IF NOT EXISTS topic_links_by_topic ON topic_links (run_id, topic)",
    """CREATE TABLE IF NOT EXISTS cluster_points (
        run_id TEXT NOT NULL,
        segment_id TEXT NOT NULL,
        x REAL NOT NULL,
        y REAL NOT NULL,
        topic INTEGER NOT NULL,
        PRIMARY KEY (run_id, segment_id)
    )""",
    """CREATE TABLE IF NOT EXISTS topic_labels (
        topic_uid TEXT NOT NULL,
        model TEXT NOT NULL,
        prompt_version TEXT NOT NULL,
        label TEXT NOT NULL,
        PRIMARY KEY (topic_uid, model, prompt_version)
    )""",
    """CREATE TABLE IF NOT EXISTS cluster_trials (
        study_name TEXT NOT NULL,
        number INTEGER NOT NULL,
        run_id TEXT NOT NULL,
        state TEXT NOT NULL,
        value REAL,
        params TEXT NOT NULL,
        topics INTEGER,
        noise_share REAL,
        validity REAL,
        seconds REAL,
        PRIMARY KEY (study_name, number)
    )""",
]

LIVE = "r.run_id <= c.run_id AND (r.retired_run_id IS NULL OR r.retired_run_id > c.run_id)"
"""Row `r` of topic_link_rows / cluster_point_rows is live at cluster run `c`."""

SHARED_SCHEMA = [
    """CREATE TABLE topic_link_rows (
        run_id TEXT NOT NULL,
        retired_run_id TEXT,
        kind TEXT NOT NULL CHECK (kind IN ('segment', 'concept')),
        item_id TEXT NOT NULL,
        topic INTEGER NOT NULL,
        topic_uid TEXT NOT NULL,
        weight REAL NOT NULL,
        source TEXT NOT NULL CHECK (source IN ('hdbscan', 'predicted', 'reassigned')),
        PRIMARY KEY (kind, item_id, run_id)
    )""",
    "CREATE INDEX topic_link_rows_retired ON topic_link_rows (retired_run_id)",
    "CREATE INDEX topic_link_rows_run ON topic_link_rows (run_id)",
    """CREATE TABLE cluster_point_rows (
        run_id TEXT NOT NULL,
        retired_run_id TEXT,
        segment_id TEXT NOT NULL,
        x REAL NOT NULL,
        y REAL NOT NULL,
        topic INTEGER NOT NULL,
        PRIMARY KEY (segment_id, run_id)
    )""",
    "CREATE INDEX cluster_point_rows_retired ON cluster_point_rows (retired_run_id)",
    "CREATE INDEX cluster_point_rows_run ON cluster_point_rows (run_id)",
]
VIEWS = [
    "CREATE VIEW topic_links AS SELECT c.run_id AS run_id, r.kind AS kind, r.item_id AS item_id, r.topic AS topic,"
    " r.topic_uid AS topic_uid, r.weight AS weight, r.source AS source"
    f" FROM topic_link_rows AS r CROSS JOIN cluster_runs AS c ON {LIVE}",
    "CREATE VIEW cluster_points AS SELECT c.run_id AS run_id, r.segment_id AS segment_id, r.x AS x, r.y AS y,"
    f" r.topic AS topic FROM cluster_point_rows AS r CROSS JOIN cluster_runs AS c ON {LIVE}",
]
# shared table -> (the per-run table of migration 2 it replaces, key columns, value columns)
SHARED: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "topic_link_rows": ("topic_links", ("kind", "item_id"), ("topic", "topic_uid", "weight", "source")),
    "cluster_point_rows": ("cluster_points", ("segment_id",), ("x", "y", "topic")),
}


def has_topics(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cluster_runs'").fetchone()
    return row is not None


class OlderRun(Exception):
    """The cluster stage of a run older than the newest cluster run: shared rows are written in run order."""


def _same(columns: Sequence[str], left: str, right: str) -> str:
    return " AND ".join(f"{left}.{c} IS {right}.{c}" for c in columns)


def migrate_shared(conn: sqlite3.Connection) -> None:
    """Migration 10 of staging.db: the per-run copies of topic_links and cluster_points become shared rows, each
    cluster run replayed oldest first (a row equal to the current one is shared, a different or missing one
    retires it); the old tables become views that read every run as before. A file that has them already (its
    version set back by hand, as tests that rebuild an older memory layout do) is left as it is."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'topic_link_rows'").fetchone():
        return
    runs = sorted(
        {str(r[0]) for r in conn.execute("SELECT run_id FROM cluster_runs")}
        | {str(r[0]) for r in conn.execute("SELECT DISTINCT run_id FROM topic_links")}
    )
    for statement in SHARED_SCHEMA:
        conn.execute(statement)
    for table, (old, key, values) in SHARED.items():
        columns = ", ".join((*key, *values))
        for run in runs:
            conn.execute(
                f"UPDATE {table} AS n SET retired_run_id = ? WHERE retired_run_id IS NULL AND NOT EXISTS"
                f" (SELECT 1 FROM {old} AS o WHERE o.run_id = ? AND {_same((*key, *values), 'o', 'n')})",
                (run, run),
            )
            conn.execute(
                f"INSERT INTO {table} (run_id, {columns}) SELECT o.run_id, {columns} FROM {old} AS o"
                f" WHERE o.run_id = ? AND NOT EXISTS (SELECT 1 FROM {table} AS n WHERE {_same(key, 'n', 'o')}"
                " AND n.retired_run_id IS NULL)",
                (run,),
            )
        conn.execute(f"DROP TABLE {old}")
    conn.execute("DROP INDEX IF EXISTS topic_links_by_topic")
    for statement in VIEWS:
        conn.execute(statement)


def _undo(conn: sqlite3.Connection, run_id: str) -> None:
    """Take back what cluster run `run_id` wrote (a re-run of the newest run): its rows deleted, the rows it
    retired current again (the caller's transaction)."""
    newer = conn.execute("SELECT MAX(run_id) FROM cluster_runs WHERE run_id > ?", (run_id,)).fetchone()[0]
    if newer is not None:
        raise OlderRun(
            f"run {run_id} is older than cluster run {newer}: topic links are shared across runs and written in run"
            " order; run the cluster stage of a new run instead"
        )
    for table in SHARED:
        conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
        conn.execute(f"UPDATE {table} SET retired_run_id = NULL WHERE retired_run_id = ?", (run_id,))
    for table in ("cluster_runs", "topics"):
        conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))


def write_run(
    conn: sqlite3.Connection,
    run_id: str,
    summary: Mapping[str, Any],
    topics: Sequence[Mapping[str, Any]] = (),
    links: Sequence[tuple[str, str, int, str, float, str]] = (),
    points: Sequence[tuple[str, float, float, int]] = (),
) -> None:
    """A full fit (or a skipped run): every current link and map point retired, this run's written, in one
    transaction with its cluster_runs and topics rows (a re-run of the newest run replaces what it wrote)."""
    with Transaction(conn):
        _write_summary(conn, run_id, summary, topics)
        for table in SHARED:
            conn.execute(f"UPDATE {table} SET retired_run_id = ? WHERE retired_run_id IS NULL", (run_id,))
        _insert(conn, run_id, links, points)
        prune(conn, run_id)


def _write_summary(
    conn: sqlite3.Connection, run_id: str, summary: Mapping[str, Any], topics: Sequence[Mapping[str, Any]]
) -> None:
    _undo(conn, run_id)
    row = dict(summary)
    for name in ("params", "seconds"):
        row[name] = json.dumps(row.get(name)) if row.get(name) is not None else None
    row["notes"] = "\n".join(row.get("notes") or []) or None
    columns = (
        *("run_id", "status", "model", "study_name", "points", "topics", "outlier_share", "outlier_share_raw"),
        *("validity", "params", "seconds", "notes"),
    )
    values = [run_id, *(row.get(c) for c in columns[1:])]
    conn.execute(f"INSERT INTO cluster_runs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", values)
    conn.executemany(
        "INSERT INTO topics (run_id, topic, topic_uid, label, size, keywords, representatives)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                run_id,
                t["topic"],
                t["topic_uid"],
                t["label"],
                t["size"],
                json.dumps(t["keywords"]),
                json.dumps(t["representatives"]),
            )
            for t in topics
        ],
    )


def _insert(
    conn: sqlite3.Connection,
    run_id: str,
    links: Sequence[tuple[str, str, int, str, float, str]],
    points: Sequence[tuple[str, float, float, int]],
) -> None:
    conn.executemany(
        "INSERT INTO topic_link_rows (run_id, kind, item_id, topic, topic_uid, weight, source)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(run_id, *link) for link in links],
    )
    conn.executemany(
        "INSERT INTO cluster_point_rows (run_id, segment_id, x, y, topic) VALUES (?, ?, ?, ?, ?)",
        [(run_id, *p) for p in points],
    )


_STUDIES = "SELECT study_name FROM cluster_runs WHERE study_name IS NOT NULL"  # a kept run's, after `prune`


def kept_runs(conn: sqlite3.Connection, run_id: str) -> set[str]:
    """The cluster runs whose rows stay: `run_id` (the newest) and the cluster run before it, the newest clustered
    run of each model (an incremental run's base) and the cluster run each kept cues run read (its next cues run
    diffs against it)."""
    kept = {run_id}
    kept.update(str(r[0]) for r in conn.execute("SELECT MAX(run_id) FROM cluster_runs WHERE run_id < ?", (run_id,)))
    kept.update(
        str(r[0])
        for r in conn.execute("SELECT MAX(run_id) FROM cluster_runs WHERE status = 'clustered' GROUP BY model")
    )
    has_memory = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_runs'").fetchone() is not None
    if has_memory:
        kept.update(
            str(r[0])
            for r in conn.execute("SELECT json_extract(summary, '$.topic_run') FROM memory_runs")
            if r[0] is not None
        )
    return kept


def prune(conn: sqlite3.Connection, run_id: str) -> list[str]:
    """The cluster_runs and topics rows of the runs not kept (`kept_runs`), and every retired link and map point
    no kept run sees (the caller's transaction). Returns the runs pruned."""
    kept = kept_runs(conn, run_id)
    stale = [str(r[0]) for r in conn.execute("SELECT run_id FROM cluster_runs ORDER BY run_id") if r[0] not in kept]
    for table in ("cluster_runs", "topics"):
        conn.executemany(f"DELETE FROM {table} WHERE run_id = ?", ((r,) for r in stale))
    for table in SHARED:
        conn.execute(
            f"DELETE FROM {table} INDEXED BY {table}_retired WHERE retired_run_id IS NOT NULL AND NOT EXISTS"
            f" (SELECT 1 FROM cluster_runs k WHERE k.run_id >= {table}.run_id AND k.run_id < {table}.retired_run_id)"
        )
    # the trials of the studies no kept run was fitted with (an incremental run names its base's study), and the LLM
    # labels of topics no kept run has: a refit's study and an incremental run's changed topics add to both
    conn.execute(f"DELETE FROM cluster_trials WHERE study_name NOT IN ({_STUDIES})")
    conn.execute("DELETE FROM topic_labels WHERE topic_uid NOT IN (SELECT topic_uid FROM topics)")
    return stale


def kept_studies(conn: sqlite3.Connection) -> set[str]:
    """The Optuna studies the kept cluster runs were fitted with (optuna.db keeps these: cluster.tuning.prune)."""
    return {str(r[0]) for r in conn.execute(_STUDIES)}


def rows_stored(conn: sqlite3.Connection) -> dict[str, int]:
    """Rows each shared table holds, every run's together (what grows with the data, not the runs)."""
    return {t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in (*SHARED, "topics")}


def write_trials(conn: sqlite3.Connection, run_id: str, study: str, trials: Sequence[Mapping[str, Any]]) -> None:
    """Upsert the study's trials (a trial reused by a later run keeps the run that ran it)."""
    with Transaction(conn):
        conn.executemany(
            "INSERT INTO cluster_trials (study_name, number, run_id, state, value, params, topics, noise_share,"
            " validity, seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (study_name, number) DO UPDATE"
            " SET state = excluded.state, value = excluded.value, params = excluded.params, topics = excluded.topics,"
            " noise_share = excluded.noise_share, validity = excluded.validity, seconds = excluded.seconds"
            " WHERE cluster_trials.state IS NOT excluded.state",
            [
                (
                    study,
                    t["number"],
                    run_id,
                    t["state"],
                    t["value"],
                    json.dumps(t["params"], sort_keys=True),
                    t.get("topics"),
                    t.get("noise_share"),
                    t.get("validity"),
                    t.get("seconds"),
                )
                for t in trials
            ],
        )


def cached_labels(conn: sqlite3.Connection, model: str, prompt_version: str) -> dict[str, str]:
    rows = conn.execute(
        "SELECT topic_uid, label FROM topic_labels WHERE model = ? AND prompt_version = ?", (model, prompt_version)
    )
    return {str(r[0]): str(r[1]) for r in rows}


def cache_labels(conn: sqlite3.Connection, model: str, prompt_version: str, rows: Sequence[tuple[str, str]]) -> None:
    with Transaction(conn):
        conn.executemany(
            "INSERT INTO topic_labels (topic_uid, model, prompt_version, label) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (topic_uid, model, prompt_version) DO UPDATE SET label = excluded.label",
            [(uid, model, prompt_version, label) for uid, label in rows],
        )


# ---------------------------------------------------------------- read-only views (chatmem topics, report)


def latest_run(conn: sqlite3.Connection) -> str | None:
    """The newest run that has a cluster_runs row (run ids sort by time)."""
    if not has_topics(conn):
        return None
    row = conn.execute("SELECT run_id FROM cluster_runs ORDER BY run_id DESC LIMIT 1").fetchone()
    return None if row is None else str(row[0])


def run_summary(conn: sqlite3.Connection, run_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT * FROM cluster_runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    found = {k: row[k] for k in row.keys()}  # noqa: SIM118 (a Row iterates values)
    for name in ("params", "seconds"):
        found[name] = json.loads(found[name]) if found[name] else None
    found["notes"] = found["notes"].split("\n") if found["notes"] else []
    return found


def list_topics(conn: sqlite3.Connection, run_id: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT topic, topic_uid, label, size, keywords, representatives FROM topics WHERE run_id = ? ORDER BY topic",
        (run_id,),
    )
    return [
        {
            "topic": r["topic"],
            "topic_uid": r["topic_uid"],
            "label": r["label"],
            "size": r["size"],
            "keywords": json.loads(r["keywords"]),
            "representatives": json.loads(r["representatives"]),
        }
        for r in rows
    ]


def map_points(conn: sqlite3.Connection, run_id: str) -> list[tuple[float, float, int]]:
    rows = conn.execute("SELECT x, y, topic FROM cluster_points WHERE run_id = ? ORDER BY segment_id", (run_id,))
    return [(float(r[0]), float(r[1]), int(r[2])) for r in rows]


def study_trials(conn: sqlite3.Connection, study: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT number, state, value, params, topics, noise_share, validity FROM cluster_trials"
        " WHERE study_name = ? ORDER BY number",
        (study,),
    )
    # sqlite3.Row iterates values, not names: keys() is needed here
    return [{**{k: r[k] for k in r.keys()}, "params": json.loads(r["params"])} for r in rows]  # noqa: SIM118


# ---------------------------------------------------------------- incremental runs (cluster/assign.py)


def base_run(conn: sqlite3.Connection, before: str, model: str) -> dict[str, Any] | None:
    """The newest clustered run under `model` older than run `before`: what an incremental run builds on."""
    if not has_topics(conn):
        return None
    row = conn.execute(
        "SELECT run_id FROM cluster_runs WHERE run_id < ? AND status = 'clustered' AND model = ?"
        " ORDER BY run_id DESC LIMIT 1",
        (before, model),
    ).fetchone()
    return None if row is None else run_summary(conn, str(row[0]))


def segments_since(conn: sqlite3.Connection, model: str, run_id: str) -> list[str]:
    """Current segments whose vector under `model` was (re)pointed by a run after `run_id`: new or changed since
    (embedding_items keeps a row's run id while its content is unchanged). Sorted by id."""
    rows = conn.execute(
        "SELECT e.item_id FROM embedding_items e JOIN current_segments s ON s.segment_id = e.item_id"
        " WHERE e.kind = 'segment' AND e.model = ? AND e.run_id > ? ORDER BY e.item_id",
        (model, run_id),
    )
    return [str(r[0]) for r in rows]


def segments_retired_since(conn: sqlite3.Connection, run_id: str) -> int:
    """Segments that existed at run `run_id` and were retired by a later run."""
    row = conn.execute(
        "SELECT COUNT(*) FROM segments WHERE retired_run_id > ? AND run_id <= ?", (run_id, run_id)
    ).fetchone()
    return int(row[0])


def current_segment_ids(conn: sqlite3.Connection, segment_ids: Sequence[str]) -> list[str]:
    """Those of `segment_ids` that are current segments."""
    rows = conn.execute(
        f"SELECT segment_id FROM current_segments WHERE segment_id IN {IN_VALUES}",
        (json_values(segment_ids),),
    )
    return [str(r[0]) for r in rows]


def count_links(conn: sqlite3.Connection, run_id: str, kind: str) -> int:
    row = conn.execute("SELECT COUNT(*) FROM topic_links WHERE run_id = ? AND kind = ?", (run_id, kind)).fetchone()
    return int(row[0])


def current_points(conn: sqlite3.Connection, model: str) -> int:
    """Current segments with a vector under `model`."""
    row = conn.execute(
        "SELECT COUNT(*) FROM current_segments s JOIN embedding_items e ON e.kind = 'segment'"
        " AND e.item_id = s.segment_id AND e.model = ?",
        (model,),
    ).fetchone()
    return int(row[0])


def concepts_to_place(conn: sqlite3.Connection, model: str, base: str) -> tuple[list[str], int]:
    """Concepts an incremental run must (re)place: live (not merged) ones with a vector under `model` that run
    `base` did not link, or whose vector changed since; and how many live concepts have no vector at all."""
    rows = conn.execute(
        "SELECT c.concept_id, e.run_id, EXISTS (SELECT 1 FROM topic_links l WHERE l.run_id = ? AND l.kind = 'concept'"
        " AND l.item_id = c.concept_id) FROM concepts c LEFT JOIN embedding_items e ON e.kind = 'concept'"
        " AND e.item_id = c.concept_id AND e.model = ? WHERE c.merged_into IS NULL ORDER BY c.concept_id",
        (base, model),
    ).fetchall()
    place = [str(r[0]) for r in rows if r[1] is not None and (str(r[1]) > base or not r[2])]
    return place, sum(1 for r in rows if r[1] is None)


def kept_segment_sizes(conn: sqlite3.Connection, base: str, replaced: Sequence[str]) -> dict[int, int]:
    """Per topic of run `base`: its segment links that an incremental run keeps (segment still current, not in
    `replaced`)."""
    sizes = {
        int(r[0]): int(r[1])
        for r in conn.execute(
            "SELECT l.topic, COUNT(*) FROM topic_links l JOIN current_segments s ON s.segment_id = l.item_id"
            " WHERE l.run_id = ? AND l.kind = 'segment' GROUP BY l.topic",
            (base,),
        )
    }
    for row in conn.execute(
        f"SELECT topic FROM topic_links WHERE run_id = ? AND kind = 'segment' AND item_id IN {IN_VALUES}",
        (base, json_values(replaced)),
    ):
        sizes[int(row[0])] -= 1
    return sizes


def kept_segment_links(conn: sqlite3.Connection, base: str, replaced: Sequence[str]) -> list[tuple[str, int]]:
    """(segment id, topic) of run `base`'s segment links that an incremental run keeps (as `kept_segment_sizes`)."""
    gone = set(replaced)
    rows = conn.execute(
        "SELECT l.item_id, l.topic FROM topic_links l JOIN current_segments s ON s.segment_id = l.item_id"
        " WHERE l.run_id = ? AND l.kind = 'segment' ORDER BY l.item_id",
        (base,),
    )
    return [(str(r[0]), int(r[1])) for r in rows if str(r[0]) not in gone]


def write_assigned(
    conn: sqlite3.Connection,
    run_id: str,
    base: str,
    summary: Mapping[str, Any],
    topics: Sequence[Mapping[str, Any]],
    links: Sequence[tuple[str, str, int, str, float, str]],
    replaced: Sequence[tuple[str, str]],
) -> int:
    """Write an incremental run in one transaction: run `base`'s links and map points kept, minus retired
    segments, merged concepts and the `replaced` (kind, item_id) this run placed again (linked in `links` or now
    noise), plus `links`. Shared rows: when `base` is the newest cluster run (the usual case) only what goes is
    retired and only `links` are written; otherwise the current rows are made equal to that set. Replaces whatever
    this run wrote before (a re-run is idempotent). Returns how many links were carried over."""
    with Transaction(conn):
        _write_summary(conn, run_id, summary, topics)
        conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS cluster_replaced (kind TEXT, item_id TEXT, PRIMARY KEY (kind, item_id))"
        )
        conn.execute("DELETE FROM temp.cluster_replaced")
        conn.executemany("INSERT OR IGNORE INTO temp.cluster_replaced VALUES (?, ?)", replaced)
        newest = conn.execute("SELECT MAX(run_id) FROM cluster_runs WHERE run_id < ?", (run_id,)).fetchone()[0]
        if newest != base:  # a skipped or other-model run came between: start from the base's rows again
            _restore(conn, run_id, base)
        stays = (
            "NOT (EXISTS (SELECT 1 FROM temp.cluster_replaced r WHERE r.kind = {t}.kind AND r.item_id = {t}.item_id)"
            " OR CASE {t}.kind"
            " WHEN 'segment' THEN NOT EXISTS (SELECT 1 FROM current_segments s WHERE s.segment_id = {t}.item_id)"
            " ELSE NOT EXISTS (SELECT 1 FROM concepts c WHERE c.concept_id = {t}.item_id AND c.merged_into IS NULL)"
            " END)"
        )
        conn.execute(
            "UPDATE topic_link_rows SET retired_run_id = ? WHERE retired_run_id IS NULL AND NOT "
            + stays.format(t="topic_link_rows"),
            (run_id,),
        )
        carried = conn.execute("SELECT COUNT(*) FROM topic_link_rows WHERE retired_run_id IS NULL").fetchone()[0]
        conn.execute(
            "UPDATE cluster_point_rows SET retired_run_id = ? WHERE retired_run_id IS NULL AND (NOT EXISTS"
            " (SELECT 1 FROM current_segments s WHERE s.segment_id = cluster_point_rows.segment_id) OR EXISTS"
            " (SELECT 1 FROM temp.cluster_replaced r WHERE r.kind = 'segment'"
            " AND r.item_id = cluster_point_rows.segment_id))",
            (run_id,),
        )
        _insert(conn, run_id, links, ())
        conn.execute("DELETE FROM temp.cluster_replaced")
        prune(conn, run_id)
    return int(carried)


def _restore(conn: sqlite3.Connection, run_id: str, base: str) -> None:
    """The current rows made those of run `base` (as of run `run_id`): a current row not live at `base` retired,
    a row live at `base` and not current written again (the caller's transaction)."""
    for table, (_, key, values) in SHARED.items():
        columns = (*key, *values)
        live = "o.run_id <= ? AND (o.retired_run_id IS NULL OR o.retired_run_id > ?)"
        conn.execute(
            f"UPDATE {table} AS n SET retired_run_id = ? WHERE n.retired_run_id IS NULL AND NOT EXISTS"
            f" (SELECT 1 FROM {table} AS o WHERE {live} AND {_same(columns, 'o', 'n')})",
            (run_id, base, base),
        )
        conn.execute(
            f"INSERT INTO {table} (run_id, {', '.join(columns)}) SELECT ?, {', '.join(columns)} FROM {table} AS o"
            f" WHERE {live} AND NOT EXISTS (SELECT 1 FROM {table} AS n WHERE n.retired_run_id IS NULL"
            f" AND {_same(key, 'n', 'o')})",
            (run_id, base, base),
        )
