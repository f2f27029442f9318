"""staging/memory_history.py: memory rows shared across runs. A data dir written before staging.db migration 9
(one copy of the memory per run) upgrades in place and reads every run's memory as before; the next cues run
builds on it like on a data dir that never had copies; a cues run older than a finished newer one is refused.

Real archive.db and staging.db after the real segment, extract, concepts and cues stages.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive
from stage_support import cues_stage as cues
from stage_support import stage_concepts, stage_extract, stage_segment

from contracts.errors import StageError
from staging import memory as store
from staging import memory_history as history
from staging.ledger import open_run
from staging.memory_history import LIVE
from staging.migrations import STAGING

CHATS = {
    "garden": [
        ("user", "I want to grow a vegetable garden this spring. The vegetable garden needs compost."),
        ("assistant", "A vegetable garden does well with compost and six hours of sun."),
    ],
    "trip": [
        ("user", "We're planning a trip to Lisbon in May. Lisbon has great tram rides."),
        ("assistant", "Lisbon in May is lovely; take tram 28 early."),
    ],
    "bake": [("user", "I bake sourdough bread every weekend. Sourdough bread needs a starter.")],
    "piano": [("user", "Piano practice: scales every morning, then the Chopin nocturne.")],
    "chess": [("user", "Chess openings: the Sicilian defence against e4.")],
}
BOAT = [("user", "Sailing the boat around the Lisbon harbour with compost on board.")]


def stages(dbs: Dbs) -> str:
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts, cues):
        assert stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings).status in (
            "succeeded",
            "skipped",
        )
    return run_id


def two_runs(data: Path) -> tuple[Dbs, str, str]:
    """A full build, then an incremental run that adds a conversation; both runs' memory kept."""
    dbs = open_dbs(data, memory={"rebuild_share": 0.5, "prune_runs": False})
    write_archive(dbs.archive, [conversation(c, m) for c, m in CHATS.items()])
    first = stages(dbs)
    write_archive(dbs.archive, [conversation("boat", BOAT)], tag="b")
    second = stages(dbs)
    assert store.run_summary(dbs.staging, second)["summary"]["incremental"] is True  # type: ignore[index]
    return dbs, first, second


def downgrade(staging_path: Path) -> None:
    """staging.db as a chatmem before migration 9 wrote it: each run's memory a copy of its own."""
    with sqlite3.connect(staging_path, isolation_level=None) as conn:
        runs = [str(r[0]) for r in conn.execute("SELECT run_id FROM memory_runs")]
        conn.execute("BEGIN")
        for table in history.TABLES:
            conn.execute(f"ALTER TABLE {table} RENAME TO {table}_v8")
        conn.execute("DROP INDEX memory_edges_by_dst")
        for statement in store.SCHEMA:
            if "memory_runs" not in statement:
                conn.execute(statement)
        for table, (key, values) in history.TABLES.items():
            columns = ", ".join((*key, *values))
            for run in runs:
                conn.execute(
                    f"INSERT INTO {table} (run_id, {columns}) SELECT ?, {columns} FROM {table}_v8 WHERE {LIVE}",
                    (run, run, run),
                )
            conn.execute(f"DROP TABLE {table}_v8")
        conn.execute("DELETE FROM schema_migrations WHERE version = 8")
        conn.execute("PRAGMA user_version = 7")
        conn.execute("COMMIT")


def test_a_data_dir_with_a_copy_per_run_upgrades_and_reads_every_run_as_before(tmp_path: Path) -> None:
    """Migration 8 on copies: each run reads the same graph (rows, order, originals), equal rows stored once, and
    the next incremental cues run ends equal to the same run on a data dir that never had copies."""
    dbs, first, second = two_runs(tmp_path / "data")
    before = {run: store.read_run(dbs.staging, run) for run in (first, second)}
    dbs.close()
    shutil.copytree(tmp_path / "data", tmp_path / "old")
    downgrade(tmp_path / "old" / "staging.db")
    with sqlite3.connect(tmp_path / "old" / "staging.db") as conn:
        copies = conn.execute("SELECT COUNT(*) FROM memory_content").fetchone()[0]
    assert copies == len(before[first].content) + len(before[second].content)

    old = open_dbs(tmp_path / "old", memory={"rebuild_share": 0.5, "prune_runs": False})  # migrates
    assert old.staging.execute("PRAGMA user_version").fetchone()[0] == len(STAGING)
    assert {run: store.read_run(old.staging, run) for run in (first, second)} == before
    shared = history.rows_by_table(old.staging)
    assert shared["memory_content"] < copies  # the unchanged conversations' rows once
    new = open_dbs(tmp_path / "data", memory={"rebuild_share": 0.5, "prune_runs": False})
    assert shared == history.rows_by_table(new.staging)  # the same rows as a data dir that never had copies
    for dbs in (old, new):
        dbs.archive.execute("UPDATE messages SET is_hidden = 1 WHERE uuid = 'trip-m1'")
        dbs.archive.commit()
        open_run(dbs.staging, stages=["cues"], exports=[], settings={}, code_version="t", run_id="r9")
        result = cues.run(dbs.archive, dbs.staging, run_id="r9", settings=dbs.settings)
        assert result.status == "succeeded" and result.counts["incremental"] == 1
    assert store.read_run(old.staging, "r9") == store.read_run(new.staging, "r9")
    assert store.read_run(old.staging, second) == before[second]  # older runs still read as they were
    old.close()
    new.close()


def test_a_cues_rerun_of_a_run_older_than_a_finished_one_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    """Runs are written in order: rewriting an old run under a newer finished one would change what the newer
    run's memory is made of, so the stage fails naming the newer run, and every run reads as before."""
    dbs, first, second = two_runs(tmp_path / "data")
    rows = history.rows_by_table(dbs.staging)
    graph = store.read_run(dbs.staging, second)
    with pytest.raises(StageError, match=f"run {second} built a newer memory"):
        cues.run(dbs.archive, dbs.staging, run_id=first, settings=dbs.settings)
    assert history.rows_by_table(dbs.staging) == rows and store.read_run(dbs.staging, second) == graph
    dbs.close()


def test_prune_keeps_what_a_kept_run_sees_and_nothing_else(tmp_path: Path) -> None:
    """Three runs, the middle one kept: rows only the first run saw go, rows the middle run sees stay."""
    dbs, first, second = two_runs(tmp_path / "data")
    dbs.archive.execute("UPDATE messages SET is_hidden = 1 WHERE uuid = 'garden-m1'")
    dbs.archive.commit()
    third = stages(dbs)
    graphs = {run: store.read_run(dbs.staging, run) for run in (second, third)}
    assert history.prune(dbs.staging, {second, third}) == [first]
    assert {run: store.read_run(dbs.staging, run) for run in (second, third)} == graphs
    retired = dbs.staging.execute(
        "SELECT COUNT(*) FROM memory_content WHERE retired_run_id IS NOT NULL AND retired_run_id <= ?", (second,)
    ).fetchone()[0]
    assert retired == 0  # what only the first run saw
    assert history.prune(dbs.staging, {third}) == [second]
    assert store.read_run(dbs.staging, third) == graphs[third]
    assert (
        dbs.staging.execute("SELECT COUNT(*) FROM memory_content WHERE retired_run_id IS NOT NULL").fetchone()[0] == 0
    )
    dbs.close()


def test_prune_sweeps_only_the_rows_a_pruned_run_saw(tmp_path: Path) -> None:
    """A run held long ago (a graph target loaded once) keeps many retired rows: a prune of a later run deletes
    what only that run saw and leaves the held rows, reading the retired rows from the pruned run on, not all of
    them (SQLite's virtual machine steps, counted by a progress handler, do not grow with the held rows)."""
    from staging.ledger import open_staging

    def steps(held: int) -> tuple[int, set[tuple[str, str, str | None]]]:
        conn = open_staging(tmp_path / f"staging-{held}.db")
        runs = ["r1", "r2", "r3", "r4"]
        conn.executemany("INSERT INTO memory_runs VALUES (?, 0, 0, 0, 0, 0, 0, '{}')", ((r,) for r in runs))
        rows = [(f"held{i}", "r1", "r2") for i in range(held)]  # seen by r1 only, which stays
        rows += [("only-r2", "r2", "r3"), ("r2-r3", "r2", "r4"), ("from-r1", "r1", "r4"), ("current", "r3", None)]
        conn.executemany("INSERT INTO memory_cues VALUES (?2, ?1, 'n', 'keyphrase', NULL, 1, 1.0, 0, ?3)", rows)
        conn.commit()
        counted = [0]

        def tick() -> int:
            counted[0] += 1
            return 0

        conn.set_progress_handler(tick, 1)
        assert history.prune(conn, {"r1", "r3", "r4"}) == ["r2"]
        conn.set_progress_handler(None, 1)
        left = {
            (str(c), str(r), t) for c, r, t in conn.execute("SELECT cue_id, run_id, retired_run_id FROM memory_cues")
        }
        conn.close()
        return counted[0], left

    few, left_few = steps(10)
    many, left_many = steps(20_000)
    for left, held in ((left_few, 10), (left_many, 20_000)):
        assert ("only-r2", "r2", "r3") not in left  # only the pruned run saw it
        assert {("r2-r3", "r2", "r4"), ("from-r1", "r1", "r4"), ("current", "r3", None)} <= left  # r3 sees them
        assert sum(1 for c, _, _ in left if c.startswith("held")) == held  # r1 sees them
    assert many < few + 1_000  # without the bound on retired_run_id: ~40 steps more per held row


def test_prune_runs_with_its_own_page_cache_and_gives_it_back(tmp_path: Path) -> None:
    """The prune after a full build deletes millions of rows in the retired index's order: it runs with a page cache
    of `PRUNE_CACHE_KIB` (benchmarks/bench_prune_cache.py), and the connection's own is back after it, whether it
    pruned something or not."""
    from staging.ledger import open_staging

    conn = open_staging(tmp_path / "staging.db")
    own = conn.execute("PRAGMA cache_size").fetchone()[0]
    conn.executemany("INSERT INTO memory_runs VALUES (?, 0, 0, 0, 0, 0, 0, '{}')", (("r1",), ("r2",)))
    conn.execute("INSERT INTO memory_cues VALUES ('gone', 'r1', 'n', 'keyphrase', NULL, 1, 1.0, 0, 'r2')")
    conn.commit()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    assert history.prune(conn, {"r2"}) == ["r1"]
    assert history.prune(conn, {"r2"}) == []
    conn.set_trace_callback(None)
    assert statements.count(f"PRAGMA cache_size = -{history.PRUNE_CACHE_KIB}") == 2
    assert conn.execute("PRAGMA cache_size").fetchone()[0] == own
    assert conn.execute("SELECT COUNT(*) FROM memory_cues").fetchone()[0] == 0
    conn.close()
