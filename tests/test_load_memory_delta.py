"""The load of an incremental cues run (load/memory_delta.py): only the memory rows that may differ from the run
the graph last loaded are read, the graph ends equal to staging, and a later full diff finds nothing to do.

Real archive.db and staging.db after the real segment, extract, concepts and cues stages; the real local Bolt
server (tests/graph_fixtures.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive
from stage_support import cues_stage as cues
from stage_support import stage_concepts, stage_extract, stage_segment

from contracts.errors import StageError
from staging import memory_history, memory_loaded
from staging.memory_history import LIVE
from tests.graph_helpers import GraphEnv, expected, load

pytest_plugins = ["tests.graph_fixtures"]

CHATS = {
    "garden": [
        ("user", "I want to grow a vegetable garden this spring. The vegetable garden needs compost."),
        ("assistant", "A vegetable garden does well with compost and six hours of sun."),
    ],
    "trip": [
        ("user", "We're planning a trip to Lisbon in May. Lisbon has great tram rides."),
        ("assistant", "Lisbon in May is lovely; take tram 28 early."),
        ("user", "The Lisbon trip is booked: tram rides and the castle in May."),
    ],
    "bake": [
        ("user", "I bake sourdough bread every weekend. Sourdough bread needs a starter."),
        ("assistant", "Sourdough bread rises slowly; feed the starter the night before."),
    ],
    "piano": [("user", "Piano practice: scales every morning, then the Chopin nocturne.")],
    "chess": [("user", "Chess openings: the Sicilian defence against e4.")],
    "bikes": [("user", "My road bike needs new brake pads before the Alps tour.")],
}
BOAT = [
    ("user", "Sailing the boat around the Lisbon harbour with a compost toilet on board."),
    ("assistant", "Sailing in the harbour: check the tide tables and the tram to the marina."),
]


def stages(dbs: Dbs) -> str:
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts, cues):
        assert stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings).status == "succeeded"
    return run_id


@pytest.fixture
def loaded(graph: GraphEnv, tmp_path: Path) -> Iterator[Dbs]:
    """Six conversations built (a full cues build) and loaded."""
    dbs = open_dbs(tmp_path / "data", load=graph.load_settings(), memory={"rebuild_share": 0.5})
    write_archive(dbs.archive, [conversation(c, m) for c, m in CHATS.items()])
    run_id = stages(dbs)
    assert load(dbs.settings, run_id).status == "succeeded"
    try:
        yield dbs
    finally:
        dbs.close()


def memory_rows(graph: GraphEnv) -> dict[str, set[tuple[object, ...]]]:
    return {
        "cues": {
            (r["id"], r["df"], r["idf"])
            for r in graph.query("MATCH (c:Cue) RETURN c.id AS id, c.df AS df, c.idf AS idf")
        },
        "tags": {(r["id"], r["size"]) for r in graph.query("MATCH (t:Tag) RETURN t.id AS id, t.size AS size")},
        "edges": {
            (r["s"], r["d"], round(r["w"], 6))
            for r in graph.query("MATCH (s)-[r:CUES|TAGGED]->(d) RETURN s.id AS s, d.id AS d, r.weight AS w")
        },
    }


def staged_rows(dbs: Dbs, run_id: str) -> dict[str, set[tuple[object, ...]]]:
    """What the graph should hold of the run: its cues and cue -> message edges; tags are not copied into the
    graph (issue 23: a conversation tag is the Conversation, a topic tag the Topic, the rest are properties)."""
    conn = dbs.staging
    return {
        "cues": {
            tuple(r) for r in conn.execute(f"SELECT cue_id, df, idf FROM memory_cues WHERE {LIVE}", (run_id, run_id))
        },
        "tags": set(),
        "edges": {
            (r[0], r[1], round(r[2], 6))
            for r in conn.execute(
                f"SELECT src, dst, weight FROM memory_edges WHERE {LIVE} AND kind = 'cue-content'"
                " AND dst NOT LIKE 'merged:%'",
                (run_id, run_id),
            )
        },
    }


def test_an_incremental_cues_run_loads_only_what_may_differ_and_the_graph_equals_staging(
    graph: GraphEnv, loaded: Dbs
) -> None:
    """A new conversation and a hidden message: the load reads a fraction of the memory rows, the graph then
    holds exactly the new run's memory, and a full diff afterwards writes nothing."""
    dbs = loaded
    write_archive(dbs.archive, [conversation("boat", BOAT)], tag="b")
    dbs.archive.execute("UPDATE messages SET is_hidden = 1 WHERE uuid = 'trip-m2'")  # a newer dump hid it
    dbs.archive.commit()
    run_id = stages(dbs)
    built = dbs.staging.execute("SELECT summary FROM memory_runs WHERE run_id = ?", (run_id,)).fetchone()[0]
    assert '"incremental": true' in built
    total = sum(len(rows) for rows in staged_rows(dbs, run_id).values())
    result = load(dbs.settings, run_id)
    assert result.status == "succeeded" and result.counts["edges_deleted"] > 0  # trip-m2's edges went
    assert any("only what may differ" in note for note in result.notes)
    assert memory_rows(graph) == staged_rows(dbs, run_id)
    assert graph.counts() == expected(dbs.settings)
    held = memory_loaded.read(dbs.settings.data_dir)
    assert [(e["memory_run"], e["loading"]) for e in held.values()] == [(run_id, None)]
    # A full diff against the manifest (no known run, no watermark) finds every row already loaded.
    (dbs.settings.data_dir / memory_loaded.FILE).unlink()
    dbs.staging.execute("UPDATE load_targets SET watermark = NULL")
    again = load(dbs.settings, run_id)
    written = ("nodes_upserted", "nodes_deleted", "edges_upserted", "edges_deleted")
    assert again.status == "succeeded" and [again.counts[k] for k in written] == [0, 0, 0, 0]
    assert again.counts["rows_read"] > result.counts["rows_read"] and total > 0


def test_each_load_reads_only_what_the_runs_since_the_last_load_changed(graph: GraphEnv, loaded: Dbs) -> None:
    """A schedule of incremental runs, each loaded: a load's candidates are the conversations changed since the
    graph's run, not every one changed since the full build (that set grew with every scheduled run: at 250k, 1.3k
    more messages read a day)."""
    dbs = loaded
    write_archive(dbs.archive, [conversation("boat", BOAT)], tag="b")
    first = stages(dbs)
    assert load(dbs.settings, first).status == "succeeded"
    chess = [*CHATS["chess"], ("assistant", "Against e4 the Sicilian defence is sharp; learn the Najdorf.")]
    write_archive(dbs.archive, [conversation("chess", chess)], tag="c")
    second = stages(dbs)
    summary = dbs.staging.execute("SELECT summary FROM memory_runs WHERE run_id = ?", (second,)).fetchone()[0]
    assert '"changed": ["chess"]' in summary and '"boat"' in summary  # boat: changed since the full build
    result = load(dbs.settings, second)
    assert result.status == "succeeded"
    [note] = [n for n in result.notes if "only what may differ" in n]
    assert f"cues run {first}" in note and "(2 messages," in note  # chess's two messages, nothing of boat's
    assert memory_rows(graph) == staged_rows(dbs, second)
    assert graph.counts() == expected(dbs.settings)


def test_a_load_killed_in_the_memory_layers_resumes_and_ends_equal_to_staging(graph: GraphEnv, loaded: Dbs) -> None:
    """kill -9 of the server during the CUES edges of an incremental load; the re-run resumes with the delta and
    the graph ends holding the new run's memory; the next incremental run loads cleanly on top."""
    dbs = loaded
    write_archive(dbs.archive, [conversation("boat", BOAT)], tag="b")
    run_id = stages(dbs)
    settings = dbs.settings.model_copy(update={"load": dbs.settings.load.model_copy(update={"batch_size": 2})})
    seen: list[str] = []

    @contextmanager
    def kill_in_cues_edges(label: str, total: int) -> Iterator[Callable[[int], object]]:
        def advance(rows: int) -> None:
            seen.append(label)
            if seen.count("load Cue-CUES-Message (rows)") == 2:
                graph.bolt.kill()

        yield advance

    with pytest.raises(StageError):
        load(settings, run_id, progress=kill_in_cues_edges)
    held = memory_loaded.read(settings.data_dir)
    assert [e["loading"] for e in held.values()] == [run_id]
    graph.bolt.ensure_up()
    result = load(settings, run_id)
    assert result.status == "succeeded" and any("only what may differ" in note for note in result.notes)
    assert memory_rows(graph) == staged_rows(dbs, run_id)
    dbs.archive.execute("UPDATE messages SET is_hidden = 1 WHERE uuid = 'bake-m1'")
    dbs.archive.commit()
    later = stages(dbs)
    assert load(settings, later).status == "succeeded"
    assert memory_rows(graph) == staged_rows(dbs, later) and graph.counts() == expected(settings)


def any_stages(dbs: Dbs) -> str:
    """`stages`, where a stage whose inputs did not change is skipped (the runner's rule)."""
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts, cues):
        assert stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings).status in OK
    return run_id


OK = ("succeeded", "skipped")


def _counts(dbs: Dbs) -> dict[str, int]:
    conn = dbs.staging
    found = memory_history.rows_by_table(conn)
    for table in ("memory_runs", "load_manifest", "runs", "stage_runs"):
        found[table] = int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    return found


def test_rows_are_shared_or_pruned_as_docs_runs_md_says_whatever_the_number_of_runs(
    graph: GraphEnv, loaded: Dbs
) -> None:
    """docs/runs.md's rule, run by run: a memory row is written once and shared by every run until one changes
    it; a retired memory row stays while a kept run (the newest, the stored recall index's, the one a graph target
    last loaded) sees it, and goes at the next cues run after; a graph row (load_manifest) is one per thing per
    target, replaced in place; a ledger row (runs, stage_runs) is one per run and stage, kept. So runs that change
    nothing add ledger rows only."""
    dbs = loaded
    first = dbs.staging.execute("SELECT run_id FROM memory_runs").fetchone()[0]

    def created(content_id: str) -> list[tuple[str, str | None]]:
        return [
            (str(r[0]), r[1])
            for r in dbs.staging.execute(
                "SELECT run_id, retired_run_id FROM memory_content WHERE content_id = ? ORDER BY run_id",
                (content_id,),
            )
        ]

    start = _counts(dbs)
    for n in range(1, 4):  # runs that change nothing, each loaded
        run_id = any_stages(dbs)
        assert load(dbs.settings, run_id).status in OK
        now = _counts(dbs)
        ledger = {"runs": start["runs"] + n, "stage_runs": now["stage_runs"]}
        assert now == {**start, **ledger, "memory_runs": 2}  # memory_runs: this run and the one the graph held
        assert now["stage_runs"] > start["stage_runs"]
        assert created("garden-m0") == [(first, None)]  # the row r1 wrote, shared by every run since
    manifest = dict(
        dbs.staging.execute("SELECT key, row_hash FROM load_manifest WHERE layer LIKE 'Message%' AND key = 'bake-m1'")
    )
    dbs.archive.execute("UPDATE messages SET is_hidden = 1 WHERE uuid = 'trip-m2'")  # a small change
    dbs.archive.commit()
    changed = any_stages(dbs)
    assert created("trip-m2") == [(first, changed)]  # retired, kept: the loaded run still sees it
    assert [r[0] for r in dbs.staging.execute("SELECT run_id FROM memory_runs ORDER BY 1")] == [run_id, changed]
    assert load(dbs.settings, changed).status in OK
    after_change = _counts(dbs)
    for n in range(1, 3):
        later = any_stages(dbs)  # the first cues run after the load prunes what only the old loaded run saw
        assert created("trip-m2") == []
        assert load(dbs.settings, later).status in OK
        now = _counts(dbs)
        pruned = {t: after_change[t] - now[t] for t in memory_history.TABLES}
        # the rebuilt conversation's old rows (it was rebuilt whole: trip-m0 and m1 written again)
        assert pruned["memory_content"] == len(CHATS["trip"]) and all(v >= 0 for v in pruned.values())
        assert now["load_manifest"] == after_change["load_manifest"] and now["runs"] == after_change["runs"] + n
    assert created("garden-m0") == [(first, None)]
    assert (
        dict(
            dbs.staging.execute(
                "SELECT key, row_hash FROM load_manifest WHERE layer LIKE 'Message%' AND key = 'bake-m1'"
            )
        )
        == manifest
    )  # the graph row of an unchanged message: the same row, in place
    assert memory_rows(graph) == staged_rows(dbs, later)
