"""Topic links and map points shared across cluster runs (docs/runs.md, staging.db migration 10).

Real staging.db files: the per-run views read what per-run copies held; an incremental cluster run writes only
its new links; a re-run of the newest run ends in the same state; an older run's re-run is refused; the runs
not kept and the rows only they saw are pruned.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from staging import topics as store
from staging.ledger import open_staging

MODEL = "m1"


def _segment(conn: sqlite3.Connection, segment_id: str, run_id: str) -> None:
    conn.execute(
        "INSERT INTO segments (segment_id, conversation_id, ordinal, boundary, message_count, token_estimate,"
        " content_hash, first_message_id, last_message_id, run_id) VALUES (?, 'c', 0, 'start', 1, 1, ?, ?, ?, ?)",
        (segment_id, segment_id, segment_id, segment_id, run_id),
    )


def _retire(conn: sqlite3.Connection, segment_id: str, run_id: str) -> None:
    conn.execute("UPDATE segments SET retired_run_id = ? WHERE segment_id = ?", (run_id, segment_id))


def _topics(size: int) -> list[dict[str, object]]:
    return [{"topic": 0, "topic_uid": "t0", "label": "zero", "size": size, "keywords": [], "representatives": []}]


def _summary(status: str = "clustered") -> dict[str, object]:
    return {"status": status, "model": MODEL, "points": 1, "topics": 1, "params": {"fit_run": "r1"}}


def _links(conn: sqlite3.Connection, run_id: str) -> set[tuple[object, ...]]:
    rows = conn.execute(
        "SELECT kind, item_id, topic, topic_uid, weight, source FROM topic_links WHERE run_id = ?", (run_id,)
    )
    return {tuple(r) for r in rows}


def _points(conn: sqlite3.Connection, run_id: str) -> set[tuple[object, ...]]:
    return {
        tuple(r) for r in conn.execute("SELECT segment_id, x, y, topic FROM cluster_points WHERE run_id = ?", (run_id,))
    }


def _state(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    found: list[tuple[object, ...]] = []
    for table in ("topic_link_rows", "cluster_point_rows", "cluster_runs", "topics"):
        found += [(table, *r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3")]
    return found


@pytest.fixture
def conn(tmp_path: Path) -> sqlite3.Connection:
    db = open_staging(tmp_path / "staging.db")
    db.row_factory = None
    for s in ("s1", "s2", "s3"):
        _segment(db, s, "r1")
    db.commit()
    return db


def link(item: str, weight: float = 1.0, source: str = "hdbscan") -> tuple[str, str, int, str, float, str]:
    return ("segment", item, 0, "t0", weight, source)


def test_an_incremental_run_writes_only_what_changed_and_reads_as_a_copy_did(conn: sqlite3.Connection) -> None:
    full = [link("s1"), link("s2"), link("s3")]
    store.write_run(conn, "r1", _summary(), _topics(3), full, [("s1", 0.0, 0.0, 0), ("s2", 1.0, 1.0, 0)])
    # r2: s2 retired, s4 new, s3 placed again (its vector changed)
    with conn:
        _retire(conn, "s2", "r2")
        _segment(conn, "s4", "r2")
    new = [link("s4", 0.5, "predicted"), link("s3", 0.7, "predicted")]
    replaced = [("segment", "s4"), ("segment", "s3")]
    carried = store.write_assigned(conn, "r2", "r1", _summary(), _topics(3), new, replaced)
    assert carried == 1  # s1
    assert _links(conn, "r1") == set(full)  # r1 reads as it did
    assert _links(conn, "r2") == {link("s1"), *new}  # what a copy of r1 minus the gone plus the new held
    assert _points(conn, "r2") == {("s1", 0.0, 0.0, 0)}
    # shared, not copied: 3 rows of r1 and the 2 new ones
    assert conn.execute("SELECT COUNT(*) FROM topic_link_rows").fetchone()[0] == 5
    assert conn.execute("SELECT COUNT(*) FROM topic_link_rows WHERE run_id = 'r2'").fetchone()[0] == 2
    # a re-run of the newest run (killed after its write, or --only cluster again) ends in the same state
    before = _state(conn)
    store.write_assigned(conn, "r2", "r1", _summary(), _topics(3), new, replaced)
    assert _state(conn) == before
    # the cluster stage of an older run is refused: its rows are shared with r2
    with pytest.raises(store.OlderRun):
        store.write_run(conn, "r1", _summary(), _topics(3), full)
    assert _state(conn) == before


def test_runs_not_kept_and_the_rows_only_they_saw_are_pruned(conn: sqlite3.Connection) -> None:
    store.write_run(conn, "r1", _summary(), _topics(3), [link("s1"), link("s2"), link("s3")])
    with conn:
        _retire(conn, "s2", "r2")
    store.write_assigned(conn, "r2", "r1", _summary(), _topics(2), [], [])
    with conn:
        _retire(conn, "s3", "r3")
    store.write_assigned(conn, "r3", "r2", _summary(), _topics(1), [], [])
    # kept: r3 and the run before it (r2); r1 is pruned with the s2 link only it saw
    assert [r[0] for r in conn.execute("SELECT run_id FROM cluster_runs ORDER BY run_id")] == ["r2", "r3"]
    assert _links(conn, "r1") == set()
    assert _links(conn, "r2") == {link("s1"), link("s3")}
    assert _links(conn, "r3") == {link("s1")}
    assert {r[0] for r in conn.execute("SELECT item_id FROM topic_link_rows")} == {"s1", "s3"}
    # a cues run that read r2 keeps it past the next cluster run
    with conn:
        conn.execute(
            "INSERT INTO memory_runs (run_id, content, cues, tags, edges, hubs, merged, summary)"
            " VALUES ('r2', 0, 0, 0, 0, 0, 0, '{\"topic_run\": \"r2\"}')"
        )
    store.write_assigned(conn, "r4", "r3", _summary(), _topics(1), [], [])
    assert [r[0] for r in conn.execute("SELECT run_id FROM cluster_runs ORDER BY run_id")] == ["r2", "r3", "r4"]
    assert _links(conn, "r2") == {link("s1"), link("s3")}


def test_a_run_after_a_skipped_run_starts_from_its_base(conn: sqlite3.Connection) -> None:
    store.write_run(conn, "r1", _summary(), _topics(3), [link("s1"), link("s2"), link("s3")])
    store.write_run(conn, "r2", {"status": "skipped", "model": MODEL, "points": 1, "topics": 0})
    assert _links(conn, "r2") == set()
    store.write_assigned(conn, "r3", "r1", _summary(), _topics(3), [], [])
    assert _links(conn, "r3") == {link("s1"), link("s2"), link("s3")}  # r1's links again, written by r3
    assert _links(conn, "r2") == set()


def _fitted(study: str, uid: str) -> tuple[dict[str, object], list[dict[str, object]]]:
    topics = [{"topic": 0, "topic_uid": uid, "label": uid, "size": 1, "keywords": [], "representatives": []}]
    return {**_summary(), "study_name": study}, topics


def test_the_trials_and_labels_of_runs_not_kept_are_pruned(conn: sqlite3.Connection) -> None:
    """docs/runs.md: cluster_trials keeps the studies of the kept cluster runs (an incremental run names its base's),
    topic_labels the labels of the kept runs' topics; a refit's study and labels go once its runs are pruned, and
    so do the trials of a refit killed before it wrote its run."""
    trial = [{"number": 0, "state": "COMPLETE", "value": 1.0, "params": {}}]
    store.write_trials(conn, "r1", "cluster-s1", trial)
    store.write_run(conn, "r1", *_fitted("cluster-s1", "t1"), [link("s1")])
    store.write_trials(conn, "r2", "cluster-s2", trial)
    store.write_run(conn, "r2", *_fitted("cluster-s2", "t2"), [link("s1")])
    store.cache_labels(conn, "llm", "v1", [("t1", "one"), ("t2", "two")])
    store.write_trials(conn, "r3", "cluster-killed", trial)  # a refit killed after its trials, before its run
    store.write_assigned(conn, "r3", "r2", *_fitted("cluster-s2", "t3"), [], [])  # r1 not kept now
    studies = "SELECT DISTINCT study_name FROM cluster_trials ORDER BY 1"
    assert [r[0] for r in conn.execute(studies)] == ["cluster-s2"] and store.kept_studies(conn) == {"cluster-s2"}
    assert [r[0] for r in conn.execute("SELECT topic_uid FROM topic_labels")] == ["t2"]
    store.write_assigned(conn, "r4", "r3", *_fitted("cluster-s2", "t4"), [], [])
    store.write_assigned(conn, "r5", "r4", *_fitted("cluster-s2", "t5"), [], [])
    assert [r[0] for r in conn.execute(studies)] == ["cluster-s2"]  # the base's study: the kept runs name it
    assert conn.execute("SELECT COUNT(*) FROM topic_labels").fetchone()[0] == 0


def test_optuna_studies_of_runs_not_kept_are_deleted(tmp_path: Path) -> None:
    """cluster.tuning.prune_studies: optuna.db keeps the studies named, and any study not chatmem's."""
    import optuna

    from cluster.tuning import prune_studies

    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    for name in ("cluster-kept", "cluster-old", "someone-else"):
        optuna.create_study(study_name=name, storage=url)
    assert prune_studies(url, {"cluster-kept"}) == ["cluster-old"]
    assert sorted(optuna.study.get_all_study_names(url)) == ["cluster-kept", "someone-else"]
