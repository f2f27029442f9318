"""The archive layers read only what changed (load/archive_delta.py): after a re-export that changes a few
conversations, the load reads those conversations' rows alone and the graph equals a fresh full load of the same
data, also when the load is killed half way and run again. Real archive.db and staging.db, the real ingest stage,
the real local Bolt server (tests/graph_fixtures.py)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from clients.graph import Graph
from contracts.errors import StageError
from contracts.settings import Settings
from load import archive_delta
from load.layers import ARCHIVE_LAYERS, LAYERS, EdgeLayer, NodeLayer
from staging import archive_changes, archive_loaded
from staging.archive import open_archive
from tests.graph_helpers import GraphEnv, expected, ingest, load

pytest_plugins = ["tests.graph_fixtures"]

CONVERSATIONS = 20
CHANGED = ["c03", "c05", "c07", "c20"]


def export(path: Path, *, changed: bool = False, edit: str | None = None) -> Path:
    """20 conversations of 6 turns with a side branch off the second turn; `changed`: the service's next full
    export, every conversation again, with c03's first turn edited, c05's active path moved to a new reply,
    c07 continued by two turns and a new conversation c20. `edit`: a conversation whose third turn is edited."""
    lines: list[dict[str, Any]] = []

    def add(conv: str, mid: str, role: str, text: str, parent: str | None, minute: int) -> None:
        stamp = f"2024-05-{1 + int(conv[1:]) % 28:02d}T10:{minute:02d}:00Z"
        lines.append(
            {"conversation_id": conv, "id": mid, "role": role, "text": text, "parent_id": parent, "created_at": stamp}
        )

    for c in range(CONVERSATIONS + (1 if changed else 0)):
        conv = f"c{c:02d}"
        turns = 8 if changed and conv == "c07" else 6
        for t in range(turns):
            text = f"turn {t} of {conv}" + (" (edited)" if changed and conv == "c03" and t == 0 else "")
            text += " (edited again)" if conv == edit and t == 2 else ""
            add(conv, f"{conv}-m{t}", "user" if t % 2 == 0 else "assistant", text, f"{conv}-m{t - 1}" if t else None, t)
        add(conv, f"{conv}-alt", "assistant", "an earlier reply", f"{conv}-m1", 30)
        if changed and conv == "c05":
            add(conv, f"{conv}-new", "assistant", "a newer reply", f"{conv}-m1", 59)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def snapshot(graph: GraphEnv, database: str | None = None) -> dict[str, Any]:
    """Every node (labels, properties) and relationship (type, ends, properties) of a database."""
    target = graph.target()
    if database is not None:
        target = type(target)(target.uri, target.user, target.password, database, key=f"test#{database}")
    with Graph(target) as g:
        nodes = g.run("MATCH (n) RETURN labels(n) AS labels, properties(n) AS props")
        edges = g.run("MATCH (a)-[r]->(b) RETURN type(r) AS type, a.id AS src, b.id AS dst, properties(r) AS props")
    return {
        "nodes": sorted(json.dumps([sorted(r["labels"]), r["props"]], sort_keys=True) for r in nodes),
        "edges": sorted(json.dumps([r["type"], r["src"], r["dst"], r["props"]], sort_keys=True) for r in edges),
    }


def fresh_full_load(graph: GraphEnv, settings: Settings, run_id: str) -> dict[str, Any]:
    """The same data dir loaded into a new, empty database (another target: no manifest, no mark)."""
    database = graph.bolt.new_database()
    other = Settings(data_dir=settings.data_dir, load=graph.load_settings(database=database))
    result = load(other, run_id)
    assert result.status == "succeeded" and not any("only the" in note for note in result.notes)
    return snapshot(graph, database)


def rows_of(archive: Path, conversations: list[str]) -> int:
    """The archive layers' rows of some conversations, counted with plain SQL of their own."""
    marks = ",".join("?" * len(conversations))
    with closing(sqlite3.connect(archive)) as conn:

        def count(sql: str) -> int:
            return int(conn.execute(sql.format(marks=marks), conversations).fetchone()[0])

        messages = count("SELECT COUNT(*) FROM messages WHERE conversation_id IN ({marks})")
        active = count("SELECT COUNT(*) FROM messages WHERE is_active = 1 AND conversation_id IN ({marks})")
        with_active = count(
            "SELECT COUNT(DISTINCT conversation_id) FROM messages WHERE is_active = 1 AND conversation_id IN ({marks})"
        )
        branches = count(
            "SELECT COUNT(*) FROM messages WHERE is_active = 0 AND parent_id IS NOT NULL"
            " AND conversation_id IN ({marks})"
        )
    # Conversation + Message + HAS_MESSAGE + NEXT (one fewer than the active messages per conversation) + BRANCH
    return len(conversations) + messages + messages + (active - with_active) + branches


def test_a_reexport_that_changes_a_few_conversations_reads_only_theirs_and_equals_a_full_load(
    graph: GraphEnv, tmp_path: Path
) -> None:
    settings = graph.settings(tmp_path / "data")
    first = load(settings, ingest(settings, export(tmp_path / "a.jsonl")))
    assert first.status == "succeeded" and any("diffed whole" in note for note in first.notes)
    run_id = ingest(settings, export(tmp_path / "b.jsonl", changed=True))
    with closing(open_archive(settings.archive_path)) as archive:
        since = archive_loaded.loaded_mark(
            settings.data_dir,
            _target_key(settings),
            archive_delta.fingerprint(ARCHIVE_LAYERS),
            archive_delta.manifest_rows(_staging(settings), _target_key(settings), ARCHIVE_LAYERS),
        )
        assert since is not None
        assert list(archive_changes.changed_since(archive, since)) == CHANGED
    second = load(settings, run_id)
    assert second.status == "succeeded"
    assert any(f"only the {len(CHANGED)} conversation(s)" in note for note in second.notes)
    # Read: the changed conversations' rows and nothing else (the staging layers hold no rows here).
    assert second.counts["rows_read"] == rows_of(settings.archive_path, CHANGED) < first.counts["rows_read"] / 4
    assert second.counts["nodes_upserted"] + second.counts["edges_upserted"] > 0 and second.counts["edges_deleted"] > 0
    assert graph.counts() == expected(settings)
    assert snapshot(graph) == fresh_full_load(graph, settings, run_id)
    # The same export again: nothing changed, nothing to load.
    again = load(settings, ingest(settings, export(tmp_path / "c.jsonl", changed=True)))
    assert again.status == "skipped"


def test_a_load_killed_in_the_archive_layers_is_rerun_and_equals_a_full_load(graph: GraphEnv, tmp_path: Path) -> None:
    """kill -9 of the server in the Message layer of a delta load: the re-run diffs everything once (the killed
    load may have committed batches it never recorded), the graph ends equal to a fresh full load, and the load
    after it reads only what changed again."""
    settings = graph.settings(tmp_path / "data")
    assert load(settings, ingest(settings, export(tmp_path / "a.jsonl"))).status == "succeeded"
    run_id = ingest(settings, export(tmp_path / "b.jsonl", changed=True))
    small = settings.model_copy(update={"load": settings.load.model_copy(update={"batch_size": 2})})
    seen: list[str] = []

    @contextmanager
    def kill_in_messages(label: str, total: int) -> Iterator[Callable[[int], object]]:
        def advance(rows: int) -> None:
            seen.append(label)
            if seen.count("load Message (rows)") == 2:
                graph.bolt.kill()

        yield advance

    with pytest.raises(StageError):
        load(small, run_id, progress=kill_in_messages)
    assert seen.count("load Message (rows)") == 2
    graph.bolt.ensure_up()
    result = load(small, run_id)
    assert result.status == "succeeded" and any("the previous load did not finish" in n for n in result.notes)
    assert snapshot(graph) == fresh_full_load(graph, settings, run_id)
    later = load(small, ingest(settings, export(tmp_path / "c.jsonl", changed=True, edit="c09")))
    assert any("only the 1 conversation(s)" in note for note in later.notes)
    assert later.counts["rows_read"] == rows_of(settings.archive_path, ["c09"]) and later.counts["nodes_upserted"] == 1


def test_a_cleared_manifest_voids_the_mark_and_the_load_diffs_everything(graph: GraphEnv, tmp_path: Path) -> None:
    """staging.db forgot what it loaded (the mark file kept): the mark is not trusted, every row is read."""
    settings = graph.settings(tmp_path / "data")
    path = export(tmp_path / "a.jsonl")
    first = load(settings, ingest(settings, path))
    with closing(_staging(settings)) as staging:
        staging.executescript("DELETE FROM load_manifest; UPDATE load_targets SET watermark = NULL;")
    again = load(settings, ingest(settings, path))
    assert again.counts["rows_read"] == first.counts["rows_read"] and any("diffed whole" in n for n in again.notes)
    assert graph.counts() == expected(settings)


def test_each_scoped_read_yields_the_layers_rows_of_its_conversations(tmp_path: Path) -> None:
    """SCOPED[layer].rows over every conversation is exactly the layer's full SQL (no drift between the two)."""
    settings = Settings(data_dir=tmp_path / "data")
    ingest(settings, export(tmp_path / "a.jsonl"))
    ingest(settings, export(tmp_path / "b.jsonl", changed=True))
    with closing(open_archive(settings.archive_path)) as archive:
        everyone = json.dumps([str(r[0]) for r in archive.execute("SELECT id FROM conversations")])
        for layer in ARCHIVE_LAYERS:
            full = sorted(map(tuple, archive.execute(layer.sql)))
            scoped = sorted(map(tuple, archive.execute(archive_delta.SCOPED[layer.name].rows, {"scope": everyone})))
            assert scoped == full and full, layer.name
        some = json.dumps(["c05"])
        rows = archive.execute(archive_delta.SCOPED["Message-NEXT-Message"].rows, {"scope": some}).fetchall()
        assert rows and all(str(r[0]).startswith("c05:") and str(r[1]).startswith("c05:") for r in rows)


def test_the_archive_logs_changed_conversations_and_not_unchanged_rewrites(tmp_path: Path) -> None:
    """Triggers log an updated message's and an updated conversation's id; the same export again logs nothing."""
    settings = Settings(data_dir=tmp_path / "data")
    ingest(settings, export(tmp_path / "a.jsonl"))
    with closing(open_archive(settings.archive_path)) as archive:
        start = archive_changes.mark(archive)
    ingest(settings, export(tmp_path / "again.jsonl"))  # another file, the same content
    with closing(open_archive(settings.archive_path)) as archive:
        assert list(archive_changes.changed_since(archive, start)) == []
        archive.execute("UPDATE messages SET is_hidden = 1 WHERE uuid = 'c11:c11-m2'")
        archive.execute("UPDATE conversations SET title = 'renamed' WHERE id = 'c12'")
        archive.execute("UPDATE conversations SET message_count = message_count WHERE id = 'c13'")
        archive.commit()
        assert list(archive_changes.changed_since(archive, start)) == ["c11", "c12"]
        assert archive_changes.comparable(archive, start)


def test_tag_layers_an_older_chatmem_loaded_are_deleted_from_the_graph(graph: GraphEnv, tmp_path: Path) -> None:
    """A graph written with Tag nodes and TAGGED edges (the layers before issue 23): the next load deletes them
    and its manifest forgets them; everything else stays."""
    settings = graph.settings(tmp_path / "data")
    run_id = ingest(settings, export(tmp_path / "a.jsonl"))
    with closing(_staging(settings)) as staging:
        staging.execute("CREATE TABLE old_tags (id TEXT, conversation_id TEXT)")
        staging.executemany("INSERT INTO old_tags VALUES (?, ?)", [(f"conv:c{c:02d}", f"c{c:02d}") for c in range(5)])
        staging.commit()
    old_tags = NodeLayer("Tag", "staging", ("old_tags",), "SELECT id, 'conversation' AS kind FROM old_tags")
    old_tagged = EdgeLayer(
        "TAGGED",
        "Tag",
        "Message",
        "staging",
        ("old_tags",),
        "SELECT t.id AS src, t.conversation_id || ':' || t.conversation_id || '-m' || n.value AS dst,"
        " 1.0 AS weight FROM old_tags t, json_each('[0,1,2,3,4,5]') n",
        anchor="dst",
    )
    assert load(settings, run_id, layers=(*LAYERS, old_tags, old_tagged)).status == "succeeded"
    assert graph.counts()["nodes"]["Tag"] == 5 and graph.counts()["edges"]["TAGGED"] == 30
    result = load(settings, run_id)
    assert result.status == "succeeded" and result.counts["nodes_deleted"] == 5
    assert result.counts["edges_deleted"] == 30
    assert graph.counts() == expected(settings)
    with closing(_staging(settings)) as staging:
        listed = staging.execute("SELECT COUNT(*) FROM load_manifest WHERE layer LIKE 'Tag%'").fetchone()[0]
    assert listed == 0


def _staging(settings: Settings) -> sqlite3.Connection:
    return sqlite3.connect(settings.staging_path)


def _target_key(settings: Settings) -> str:
    from clients.graph_target import resolve_target

    target, _ = resolve_target(settings, start=False)
    assert target is not None
    return target.key
