"""The staging layers read only what changed (load/staging_delta.py): after a re-export that re-segments a few
conversations (a segment retired, one new, one rewritten), the load reads those conversations' Segment and
CONTAINS_MESSAGE rows alone; after a merge, an archived concept and new evidence, only the messages and concepts
logged of EVIDENCE_FOR and Concept; and the graph equals a fresh full load of the same data, also when the load is
killed half way and run again. Real archive.db and staging.db, the real ingest, segment, extract and concepts
stages, the real local Bolt server (tests/graph_fixtures.py)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive
from stage_support import stage_concepts, stage_extract, stage_segment

from contracts.errors import StageError
from contracts.settings import Settings
from load import staging_delta
from load.layers import CONCEPTS, CONTAINS_MESSAGE, EVIDENCE_FOR, LAYERS, SEGMENTS
from staging import concepts as concept_store
from staging import staging_changes
from staging.archive import open_archive
from staging.db import Transaction
from staging.ledger import open_staging
from staging.staging_changes import CONCEPT, EVIDENCE, SEGMENT
from tests.graph_helpers import GraphEnv, expected, ingest, load
from tests.test_load_archive_delta import export, fresh_full_load, rows_of, snapshot
from tests.test_load_layers import GARDEN, _later_run, _live_concepts, _one, _stage_succeeded, staged

__all__ = ["staged"]  # the fixture of tests/test_load_layers.py: real segment, extract and concepts stages

BREAD = [
    ("user", "I bake sourdough bread every weekend. Sourdough bread needs a starter."),
    ("assistant", "Sourdough bread rises slowly; feed the starter the night before."),
    ("user", "My sourdough bread starter is called Clint; the bread crust is my pride."),
]

pytest_plugins = ["tests.graph_fixtures"]

SCOPED = {name: scoped for group in staging_delta.GROUPS for name, scoped in group.scoped.items()}

RESEGMENTED = ["c03", "c05", "c20"]
"""Of CHANGED: c03 edited, c05's active path moved, c20 new; c07's two new turns continue a side branch (the
newest leaf of the JSONL export is the earlier reply), so its active path and its segments stay."""


def segment(settings: Settings, run_id: str) -> None:
    """The real segment stage over the archive, for `run_id`."""
    with closing(open_archive(settings.archive_path)) as archive, closing(open_staging(settings.staging_path)) as st:
        assert stage_segment.run(archive, st, run_id=run_id, settings=settings).status in ("succeeded", "skipped")


def day(settings: Settings, path: Path) -> str:
    run_id = ingest(settings, path)
    segment(settings, run_id)
    return run_id


def edited(source: Path, path: Path, message: str) -> Path:
    """`source` again with one message's text changed (an edit the service's next export would carry)."""
    lines = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if line["id"] == message:
            line["text"] += " (edited later)"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def segment_rows(settings: Settings, conversations: list[str]) -> int:
    """The segment layers' rows of some conversations (current segments and their memberships), by plain SQL."""
    marks = ",".join("?" * len(conversations))
    with closing(sqlite3.connect(settings.staging_path)) as conn:
        segments = conn.execute(
            f"SELECT COUNT(*) FROM segments WHERE retired_run_id IS NULL AND conversation_id IN ({marks})",
            conversations,
        ).fetchone()[0]
        members = conn.execute(
            "SELECT COUNT(*) FROM segment_messages m JOIN segments s ON s.segment_id = m.segment_id"
            f" WHERE s.retired_run_id IS NULL AND s.conversation_id IN ({marks})",
            conversations,
        ).fetchone()[0]
    return int(segments + members)


def read_of(result_notes: list[str]) -> str:
    return next(note for note in result_notes if note.startswith("Segment, Segment-CONTAINS_MESSAGE-Message:"))


def test_a_reexport_that_retires_segments_reads_only_their_conversations_and_equals_a_full_load(
    graph: GraphEnv, tmp_path: Path
) -> None:
    settings = graph.settings(tmp_path / "data")
    first = load(settings, day(settings, export(tmp_path / "a.jsonl")))
    assert first.status == "succeeded" and "diffed whole" in read_of(first.notes)
    run_id = day(settings, export(tmp_path / "b.jsonl", changed=True))
    with closing(sqlite3.connect(settings.staging_path)) as conn:
        retired = conn.execute("SELECT conversation_id FROM segments WHERE retired_run_id = ?", (run_id,)).fetchall()
    assert "c05" in {str(r[0]) for r in retired}  # its active path moved to a new reply: its segment retired
    second = load(settings, run_id)
    assert second.status == "succeeded"
    assert f"only the {len(RESEGMENTED)} conversation(s) re-segmented" in read_of(second.notes)
    assert second.counts["nodes_deleted"] >= 1  # the retired segment's node is gone from the graph
    assert graph.counts() == expected(settings)
    assert snapshot(graph) == fresh_full_load(graph, settings, run_id)
    assert manifests(settings)[0] == manifests(settings)[-1]
    # One more edit: its conversation alone is read.
    again = load(settings, day(settings, edited(tmp_path / "b.jsonl", tmp_path / "c.jsonl", "c09-m1")))
    assert "only the 1 conversation(s) re-segmented" in read_of(again.notes)
    assert again.counts["rows_read"] == rows_of(settings.archive_path, ["c09"]) + segment_rows(settings, ["c09"])
    assert snapshot(graph) == fresh_full_load(graph, settings, again.run_id)


def test_a_log_that_missed_a_retired_segment_is_caught_by_the_comparison_with_a_full_load(
    graph: GraphEnv, tmp_path: Path
) -> None:
    """What the tests above compare would catch a watermark that misses a change: with c05's log row lost, the
    incremental load keeps c05's retired segment (node and edges) and the graph differs from a full load."""
    settings = graph.settings(tmp_path / "data")
    assert load(settings, day(settings, export(tmp_path / "a.jsonl"))).status == "succeeded"
    run_id = day(settings, export(tmp_path / "b.jsonl", changed=True))
    with closing(sqlite3.connect(settings.staging_path)) as conn:
        conn.execute("DELETE FROM staging_changes WHERE kind = 'segment' AND id = 'c05'")
        conn.commit()
        retired = conn.execute("SELECT segment_id FROM segments WHERE retired_run_id = ?", (run_id,)).fetchall()
    result = load(settings, run_id)
    assert f"only the {len(RESEGMENTED) - 1} conversation(s) re-segmented" in read_of(result.notes)
    assert snapshot(graph) != fresh_full_load(graph, settings, run_id)
    in_graph = graph.query("MATCH (s:Segment {conversation_id: 'c05'}) RETURN s.id AS id")
    assert [row["id"] for row in in_graph] == [str(r[0]) for r in retired]  # the retired one, not the new one


def test_a_load_killed_in_the_segment_layers_is_rerun_and_equals_a_full_load(graph: GraphEnv, tmp_path: Path) -> None:
    """kill -9 of the server in the CONTAINS_MESSAGE layer of a delta load: the re-run diffs these layers whole
    once, the graph ends equal to a fresh full load, and the load after it reads only what changed again."""
    settings = graph.settings(tmp_path / "data")
    assert load(settings, day(settings, export(tmp_path / "a.jsonl"))).status == "succeeded"
    run_id = day(settings, export(tmp_path / "b.jsonl", changed=True))
    small = settings.model_copy(update={"load": settings.load.model_copy(update={"batch_size": 2})})
    seen: list[str] = []
    label = f"load {CONTAINS_MESSAGE.name} (rows)"

    @contextmanager
    def kill_in_members(name: str, total: int) -> Iterator[Callable[[int], object]]:
        def advance(rows: int) -> None:
            seen.append(name)
            if seen.count(label) == 2:
                graph.bolt.kill()

        yield advance

    with pytest.raises(StageError):
        load(small, run_id, progress=kill_in_members)
    assert seen.count(label) == 2
    graph.bolt.ensure_up()
    result = load(small, run_id)
    assert result.status == "succeeded" and "the previous load did not finish" in read_of(result.notes)
    assert snapshot(graph) == fresh_full_load(graph, settings, run_id)
    later = load(small, day(settings, edited(tmp_path / "b.jsonl", tmp_path / "c.jsonl", "c09-m1")))
    assert "only the 1 conversation(s) re-segmented" in read_of(later.notes)
    # read: c09's archive rows and its segment rows; written: its message, its segment and nothing else
    assert later.counts["nodes_upserted"] == 2 and later.counts["nodes_deleted"] == 0
    assert graph.counts() == expected(settings)


def test_each_scoped_read_yields_the_layers_rows_of_its_conversations(tmp_path: Path) -> None:
    """SCOPED[layer].rows over every conversation is exactly the layer's full SQL (no drift between the two), and
    the scope's keys hold every segment of the conversations, the retired ones too."""
    settings = Settings(data_dir=tmp_path / "data")
    day(settings, export(tmp_path / "a.jsonl"))
    day(settings, export(tmp_path / "b.jsonl", changed=True))
    with closing(open_staging(settings.staging_path)) as staging:
        everyone = json.dumps([str(r[0]) for r in staging.execute("SELECT DISTINCT conversation_id FROM segments")])
        for layer in (SEGMENTS, CONTAINS_MESSAGE):
            full = sorted(map(tuple, staging.execute(layer.sql)))
            scoped = sorted(map(tuple, staging.execute(SCOPED[layer.name].rows, {"scope": everyone})))
            assert scoped == full and full, layer.name
            keys = {str(r[0]) for r in staging.execute(SCOPED[layer.name].keys, {"scope": everyone})}
            assert keys == {str(r[0]) for r in staging.execute("SELECT segment_id FROM segments")}


def test_the_segment_log_names_changed_conversations_and_not_unchanged_rewrites(tmp_path: Path) -> None:
    """Triggers log the conversations whose segments or memberships changed; the same export again logs nothing,
    and a deleted segment row logs ALL (the next load diffs whole)."""
    settings = Settings(data_dir=tmp_path / "data")
    day(settings, export(tmp_path / "a.jsonl"))
    with closing(open_staging(settings.staging_path)) as staging:
        start = staging_changes.mark(staging)
    day(settings, export(tmp_path / "again.jsonl"))  # another file, the same content
    with closing(open_staging(settings.staging_path)) as staging:
        assert list(staging_changes.changed_since(staging, SEGMENT, start)) == []
    run_id = day(settings, export(tmp_path / "b.jsonl", changed=True))
    with closing(open_staging(settings.staging_path)) as staging:
        assert list(staging_changes.changed_since(staging, SEGMENT, start)) == RESEGMENTED
        assert staging_changes.comparable(staging, start)
        after = staging_changes.mark(staging)
        staging.execute(
            "UPDATE segment_messages SET position = position WHERE segment_id IN"
            " (SELECT segment_id FROM segments WHERE conversation_id = 'c11')"
        )
        staging.commit()
        assert list(staging_changes.changed_since(staging, SEGMENT, after)) == ["c11"]
        gone = staging.execute("SELECT segment_id FROM segments WHERE retired_run_id = ? LIMIT 1", (run_id,))
        segment_id = gone.fetchone()[0]
        staging.execute("DELETE FROM segment_messages WHERE segment_id = ?", (segment_id,))
        staging.execute("DELETE FROM segments WHERE segment_id = ?", (segment_id,))
        staging.commit()
        assert staging_changes.ALL in set(staging_changes.changed_since(staging, SEGMENT, after))


def test_a_staging_db_restored_from_a_copy_older_than_the_mark_is_refused(tmp_path: Path) -> None:
    """staging.db put back from a copy taken before the mark, then written past the mark's version again: the same
    origin and a larger version, but the stage run the mark was taken in is gone (`Mark.stage_run`), so the mark is
    refused and the load diffs whole instead of missing what the copy lost. A mark stored before the field
    existed is trusted as before."""
    import shutil

    settings = Settings(data_dir=tmp_path / "data")
    day(settings, export(tmp_path / "a.jsonl"))
    backup = tmp_path / "staging-backup.db"
    with closing(open_staging(settings.staging_path)) as staging:
        staging.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copyfile(settings.staging_path, backup)
    day(settings, export(tmp_path / "b.jsonl", changed=True))
    with closing(open_staging(settings.staging_path)) as staging:
        since = staging_changes.mark(staging)
    assert since.stage_run
    for name in ("staging.db-wal", "staging.db-shm"):
        (settings.data_dir / name).unlink(missing_ok=True)
    shutil.copyfile(backup, settings.staging_path)
    for n in range(3):  # changes again after the restore, until the log's version passes the mark's
        day(settings, export(tmp_path / f"c{n}.jsonl", changed=n % 2 == 0))
    with closing(open_staging(settings.staging_path)) as staging:
        now = staging_changes.mark(staging)
        assert now.origin == since.origin and now.version >= since.version  # the older checks pass
        assert not staging_changes.comparable(staging, since)
        old = staging_changes.Mark.from_json({k: v for k, v in since.as_json().items() if k != "stage_run"})
        assert old is not None and staging_changes.comparable(staging, old)  # before the field: not checked
        assert staging_changes.Mark(*since.as_tuple()) == since


def test_every_layer_the_staging_delta_covers_is_a_loaded_layer_of_one_group() -> None:
    """The scoped reads are keyed by layer name: a renamed layer must not silently fall back to nothing."""
    covered = [name for group in staging_delta.GROUPS for name in group.scoped]
    assert len(covered) == len(set(covered)) and set(covered) <= {layer.name for layer in LAYERS}


def test_a_merge_an_archived_concept_and_new_evidence_read_only_what_changed_and_equal_a_full_load(
    graph: GraphEnv, staged: Dbs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The evidence and concept layers: after a merge (evidence copied to the survivor, the merged concept gone), an
    archived concept and a new conversation's extraction, the load reads only the messages and concepts logged
    and the graph equals a fresh full load of the same staging.db."""
    dbs = staged
    monkeypatch.setattr(staging_delta, "FULL_SHARE", 1.0)  # a handful of concepts: most of them change here
    first = load(dbs.settings, dbs.run_id())
    assert first.status == "succeeded"
    assert "diffed whole" in _note(first.notes, "Message-EVIDENCE_FOR-Concept:")
    keep, gone, old, *_ = sorted(_live_concepts(dbs))
    run_id = _later_run(dbs)
    rows = concept_store.load_concepts(dbs.staging)
    with Transaction(dbs.staging):
        concept_store.copy_evidence(dbs.staging, gone, keep, run_id)
        rows[gone].state, rows[gone].merged_into, rows[old].state = "merged", keep, "archived"
        concept_store.upsert_concepts(dbs.staging, [rows[gone], rows[old]])
    _stage_succeeded(dbs, run_id, "concepts")
    write_archive(dbs.archive, [conversation("bread", BREAD)], tag="b")
    later = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts):
        assert stage.run(dbs.archive, dbs.staging, run_id=later, settings=dbs.settings).status == "succeeded"
    result = load(dbs.settings, later)
    assert result.status == "succeeded" and result.counts["nodes_deleted"] >= 1
    evidence = dbs.staging.execute("SELECT COUNT(DISTINCT message_id) FROM concept_evidence").fetchone()[0]
    messages = int(_note(result.notes, "Message-EVIDENCE_FOR-Concept:").split("only the ")[1].split()[0])
    assert 0 < messages < evidence
    concepts = dbs.staging.execute("SELECT COUNT(*) FROM concepts").fetchone()[0]
    changed = int(_note(result.notes, "Concept:").split("only the ")[1].split()[0])
    assert 2 <= changed < concepts
    assert graph.counts() == expected(dbs.settings)
    assert _one(graph, "MATCH (c:Concept {id: $c}) RETURN count(c) AS n", c=gone) == 0
    assert snapshot(graph) == fresh_full_load(graph, dbs.settings, later)
    # A concept leaves the graph with no evidence row touched (its state alone): its edges go too.
    left = sorted(_live_concepts(dbs))[-1]
    row = concept_store.load_concepts(dbs.staging)[left]
    row.state = "split"
    with Transaction(dbs.staging):
        concept_store.upsert_concepts(dbs.staging, [row])
    _stage_succeeded(dbs, _later_run(dbs), "concepts")
    again = load(dbs.settings, later)
    assert "only the" in _note(again.notes, "Message-EVIDENCE_FOR-Concept:") and again.counts["edges_deleted"] > 0
    assert snapshot(graph) == fresh_full_load(graph, dbs.settings, later)
    # DETACH DELETE took the edges with the node: the manifest must have let go of them too, or a concept that
    # comes back would find its edges "unchanged" and never resend them
    assert manifests(dbs.settings)[0] == manifests(dbs.settings)[-1]


def test_a_concept_state_change_logs_every_message_of_its_evidence(tmp_path: Path) -> None:
    """A merged concept's EVIDENCE_FOR edges leave the graph: the log names each of its evidence's messages."""
    dbs = open_dbs(tmp_path / "data")
    try:
        write_archive(dbs.archive, [conversation("garden", GARDEN), conversation("bread", BREAD)])
        run_id = dbs.run_id()
        for stage in (stage_segment, stage_extract, stage_concepts):
            assert stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings).status == "succeeded"
        start = staging_changes.mark(dbs.staging)
        assert list(staging_changes.changed_since(dbs.staging, EVIDENCE, start)) == []
        concept = sorted(_live_concepts(dbs))[0]
        row = concept_store.load_concepts(dbs.staging)[concept]
        row.state = "merged"
        with Transaction(dbs.staging):
            concept_store.upsert_concepts(dbs.staging, [row])
        messages = dbs.staging.execute(
            "SELECT DISTINCT message_id FROM concept_evidence WHERE concept_id = ? ORDER BY 1", (concept,)
        )
        assert list(staging_changes.changed_since(dbs.staging, EVIDENCE, start)) == [str(r[0]) for r in messages]
        assert list(staging_changes.changed_since(dbs.staging, CONCEPT, start)) == [concept]
        # the scoped reads over every id are the layers' full SQL (merged concept included: both leave it out)
        for layer, ids in (
            (EVIDENCE_FOR, "SELECT message_id FROM concept_evidence"),
            (CONCEPTS, "SELECT concept_id FROM concepts"),
        ):
            everyone = json.dumps(sorted({str(r[0]) for r in dbs.staging.execute(ids)}))
            full = sorted(map(tuple, dbs.staging.execute(layer.sql)))
            scoped = sorted(map(tuple, dbs.staging.execute(SCOPED[layer.name].rows, {"scope": everyone})))
            assert scoped == full and full, layer.name
    finally:
        dbs.close()


def manifests(settings: Settings) -> list[set[tuple[str, str, int]]]:
    """Each target's manifest (layer, key, hash), in the order the targets were first loaded."""
    with closing(sqlite3.connect(settings.staging_path)) as conn:
        targets = [str(r[0]) for r in conn.execute("SELECT target FROM load_targets ORDER BY rowid")]
        return [
            set(conn.execute("SELECT layer, key, row_hash FROM load_manifest WHERE target = ?", (t,)).fetchall())
            for t in targets
        ]


def _note(notes: list[str], prefix: str) -> str:
    return next(note for note in notes if note.startswith(prefix))
