"""staging.db: what the cluster stage made of one run: topics, weighted BELONGS_TO links, the map, the trials.

Tables (`SCHEMA`: migration 2 of staging/migrations.py, frozen; change them with a new migration there);
every row is keyed by run id, and a re-run of the stage for the same run replaces that run's rows in one
transaction:

- `cluster_runs`: one row per run: status (clustered | skipped), model, study, points, topics, outlier share
  before and after outlier handling, validity (relative DBCV), best parameters, seconds per step, notes.
- `topics`: (run_id, topic) -> topic_uid (a content key: the embedding model and the sorted member segment
  ids, so an unchanged topic keeps its id across runs), label, size, keywords, representative segment ids.
- `topic_links`: the BELONGS_TO edges: (run_id, kind segment|concept, item_id) -> topic, weight 0..1 and where
  it came from (hdbscan: fitted member; predicted: placed by approximate_predict; reassigned: outlier handling).
- `cluster_points`: (run_id, segment_id) -> 2-D map coordinates and topic (-1: noise), for the topic map.
- `cluster_trials`: every Optuna trial of a study (the study itself is in optuna.db under the data dir).
- `topic_labels`: LLM labels cached by (topic_uid, model, prompt version): a re-run makes no call.
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

RUN_TABLES = ("cluster_runs", "topics", "topic_links", "cluster_points")


def has_topics(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cluster_runs'").fetchone()
    return row is not None


def write_run(
    conn: sqlite3.Connection,
    run_id: str,
    summary: Mapping[str, Any],
    topics: Sequence[Mapping[str, Any]] = (),
    links: Sequence[tuple[str, str, int, str, float, str]] = (),
    points: Sequence[tuple[str, float, float, int]] = (),
) -> None:
    """Replace everything this run's cluster stage wrote, in one transaction (a re-run is idempotent)."""
    with Transaction(conn):
        _replace_run(conn, run_id, summary, topics, links, points)


def _replace_run(
    conn: sqlite3.Connection,
    run_id: str,
    summary: Mapping[str, Any],
    topics: Sequence[Mapping[str, Any]],
    links: Sequence[tuple[str, str, int, str, float, str]],
    points: Sequence[tuple[str, float, float, int]],
) -> None:
    row = dict(summary)
    for name in ("params", "seconds"):
        row[name] = json.dumps(row.get(name)) if row.get(name) is not None else None
    row["notes"] = "\n".join(row.get("notes") or []) or None
    columns = (
        *("run_id", "status", "model", "study_name", "points", "topics", "outlier_share", "outlier_share_raw"),
        *("validity", "params", "seconds", "notes"),
    )
    values = [run_id, *(row.get(c) for c in columns[1:])]
    for table in RUN_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
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
    conn.executemany(
        "INSERT INTO topic_links (run_id, kind, item_id, topic, topic_uid, weight, source)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(run_id, *link) for link in links],
    )
    conn.executemany(
        "INSERT INTO cluster_points (run_id, segment_id, x, y, topic) VALUES (?, ?, ?, ?, ?)",
        [(run_id, *p) for p in points],
    )


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


def write_assigned(
    conn: sqlite3.Connection,
    run_id: str,
    base: str,
    summary: Mapping[str, Any],
    topics: Sequence[Mapping[str, Any]],
    links: Sequence[tuple[str, str, int, str, float, str]],
    replaced: Sequence[tuple[str, str]],
) -> int:
    """Write an incremental run in one transaction: run `base`'s links and map points carried over, minus
    retired segments, merged concepts and the `replaced` (kind, item_id) this run placed again (linked in `links`
    or now noise), plus `links`. Replaces whatever this run wrote before (a re-run is idempotent). Returns how
    many links were carried over."""
    with Transaction(conn):
        _replace_run(conn, run_id, summary, topics, links, ())
        conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS cluster_replaced (kind TEXT, item_id TEXT, PRIMARY KEY (kind, item_id))"
        )
        conn.execute("DELETE FROM temp.cluster_replaced")
        conn.executemany("INSERT OR IGNORE INTO temp.cluster_replaced VALUES (?, ?)", replaced)
        carried = conn.execute(
            "INSERT INTO topic_links (run_id, kind, item_id, topic, topic_uid, weight, source)"
            " SELECT ?, l.kind, l.item_id, l.topic, l.topic_uid, l.weight, l.source FROM topic_links l"
            " WHERE l.run_id = ? AND NOT EXISTS (SELECT 1 FROM temp.cluster_replaced r"
            " WHERE r.kind = l.kind AND r.item_id = l.item_id) AND CASE l.kind"
            " WHEN 'segment' THEN EXISTS (SELECT 1 FROM current_segments s WHERE s.segment_id = l.item_id)"
            " ELSE EXISTS (SELECT 1 FROM concepts c WHERE c.concept_id = l.item_id AND c.merged_into IS NULL) END",
            (run_id, base),
        ).rowcount
        conn.execute(
            "INSERT INTO cluster_points (run_id, segment_id, x, y, topic) SELECT ?, p.segment_id, p.x, p.y, p.topic"
            " FROM cluster_points p JOIN current_segments s ON s.segment_id = p.segment_id"
            " WHERE p.run_id = ? AND NOT EXISTS (SELECT 1 FROM temp.cluster_replaced r WHERE r.kind = 'segment'"
            " AND r.item_id = p.segment_id)",
            (run_id, base),
        )
        conn.execute("DELETE FROM temp.cluster_replaced")
    return int(carried)
