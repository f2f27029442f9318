"""The cues stage's incremental path (memory/cues_incremental.py): a small new dump rebuilds only its conversations,
the rest is carried from the previous run; above memory.rebuild_share, or with other memory settings, the stage
builds in full; older runs' memory rows are pruned.

Real stages on a real data dir: a generic JSONL export (60 two-turn conversations in three themes) ingested,
segmented, extracted (offline), clustered and built into cues once for the module (run r1), copied per test; then
a second dump (two new conversations, one turn added to an existing one) goes through the same stages as run r2.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from stage_support import (
    cluster_stage,
    ingest_stage,
    stage_concepts,
    stage_embed,
    stage_embed_concepts,
    stage_extract,
    stage_segment,
)
from stage_support import cues_stage as cues

from clients.embedders import StaticMiniLM
from contracts.memory import RecallRequest
from contracts.results import StageResult
from contracts.settings import Settings
from memory import cues_state
from memory.service import Memory
from staging import memory as store
from staging.archive import open_archive
from staging.ledger import open_run, open_staging
from staging.memory_history import LIVE
from tests.test_cluster import themed_export

NEW_DUMP = [
    ("airship-0", "airship-0-0", "user", "The zeppelin hangar at Friedrichshafen holds an airship museum."),
    ("airship-0", "airship-0-1", "assistant", "Airship tours leave the zeppelin hangar every morning."),
    ("airship-1", "airship-1-0", "user", "Which zeppelin crossed the Atlantic? The airship hangar story."),
    ("baking-0", "baking-0-2", "user", "One more question about the sourdough starter and the oven crust."),
]


@pytest.fixture(scope="module")
def embedder() -> StaticMiniLM:
    return StaticMiniLM()


def settings_for(data_dir: Path, **memory: Any) -> Settings:
    settings = Settings(data_dir=data_dir)
    settings.cluster = settings.cluster.model_copy(update={"n_trials": 4})
    settings.memory = settings.memory.model_copy(update=memory)
    return settings


def run_all(
    settings: Settings, export: Path, run_id: str, embedder: StaticMiniLM, *, cluster: bool = True
) -> StageResult:
    """Every stage up to cues, as `chatmem run` orders them (cluster left out with `cluster=False`: the topics stay
    the last cluster run's); returns the cues stage's result."""
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        open_run(staging, stages=["all"], exports=[str(export)], settings={}, code_version="test", run_id=run_id)
        ingest_stage.run(archive, staging, run_id=run_id, settings=settings, exports=[export])
        for stage in (stage_segment, stage_extract, stage_concepts):
            stage.run(archive, staging, run_id=run_id, settings=settings)
        for embed in (stage_embed, stage_embed_concepts):
            embed.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder)
        if cluster:
            cluster_stage.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder)
        return cues.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder)
    finally:
        archive.close()
        staging.close()


def cues_again(settings: Settings, run_id: str, embedder: StaticMiniLM) -> StageResult:
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        open_run(staging, stages=["cues"], exports=[], settings={}, code_version="test", run_id=run_id)
        return cues.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder)
    finally:
        archive.close()
        staging.close()


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory: pytest.TempPathFactory, embedder: StaticMiniLM) -> Path:
    """A data dir built through cues once (run r1, a full build)."""
    root = tmp_path_factory.mktemp("cues-incremental")
    result = run_all(settings_for(root / "data"), dated(themed_export(root / "themes.jsonl")), "r1", embedder)
    assert result.status == "succeeded" and result.counts["incremental"] == 0
    return root / "data"


def dated(path: Path) -> Path:
    """The export with a time on every message (one conversation a day): recall's day tags need them."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for i, record in enumerate(records):
        record["created_at"] = f"2024-{1 + i // 2 // 28 % 12:02d}-{1 + i // 2 % 28:02d}T10:0{i % 2}:00Z"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def new_dump(path: Path) -> Path:
    lines = [
        json.dumps({"conversation_id": c, "id": m, "role": r, "text": t, "created_at": f"2025-02-0{i + 1}T09:00:00Z"})
        for i, (c, m, r, t) in enumerate(NEW_DUMP)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def copy_of(base_dir: Path, tmp_path: Path) -> Path:
    shutil.copytree(base_dir, tmp_path / "data")
    return tmp_path / "data"


def rows(staging_path: Path, table: str, run_id: str) -> set[tuple[Any, ...]]:
    """The rows of the memory of run `run_id` (shared across runs: created at or before it, not retired by then),
    less the run columns."""
    with sqlite3.connect(staging_path) as conn:
        found = conn.execute(f"SELECT * FROM {table} WHERE {LIVE}", (run_id, run_id))
        return {tuple(r)[1:-1] for r in found}


def dangling(staging_path: Path, run_id: str) -> int:
    """Edges of the run's memory whose source is no cue or tag of it, or cue -> tag edges whose tag is not in it."""
    live = {t: f"(SELECT * FROM {t} WHERE {LIVE})" for t in ("memory_edges", "memory_cues", "memory_tags")}
    with sqlite3.connect(staging_path) as conn:
        sources = conn.execute(
            f"SELECT COUNT(*) FROM {live['memory_edges']} e WHERE e.src NOT IN (SELECT cue_id FROM"
            f" {live['memory_cues']}) AND e.src NOT IN (SELECT tag_id FROM {live['memory_tags']})",
            (run_id,) * 6,
        ).fetchone()[0]
        targets = conn.execute(
            f"SELECT COUNT(*) FROM {live['memory_edges']} e WHERE e.kind = 'cue-tag'"
            f" AND e.dst NOT IN (SELECT tag_id FROM {live['memory_tags']})",
            (run_id,) * 4,
        ).fetchone()[0]
    return int(sources) + int(targets)


def runs(staging_path: Path) -> list[str]:
    with sqlite3.connect(staging_path) as conn:
        return [str(r[0]) for r in conn.execute("SELECT run_id FROM memory_runs ORDER BY 1")]


def test_a_small_dump_rebuilds_only_its_conversations_and_carries_the_rest(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """Three conversations rebuilt; every other row is r1's as it was; the graph holds together like a full build."""
    data = copy_of(base_dir, tmp_path)
    settings = settings_for(data)
    before = {t: rows(settings.staging_path, t, "r1") for t in ("memory_content", "memory_edges")}
    result = run_all(settings, new_dump(tmp_path / "new.jsonl"), "r2", embedder)
    assert result.counts["incremental"] == 1 and result.counts["conversations_rebuilt"] == 3
    with sqlite3.connect(settings.archive_path) as archive:
        in_rebuilt = archive.execute(
            "SELECT COUNT(*) FROM messages WHERE is_active = 1 AND is_hidden = 0"
            " AND conversation_id IN ('airship-0', 'airship-1', 'baking-0')"
        ).fetchone()[0]
    assert result.counts["messages_rebuilt"] == in_rebuilt and result.counts["keys_embedded"] <= in_rebuilt
    with sqlite3.connect(settings.staging_path) as conn:  # written: the rows r2 created; shared: r1's it kept
        tables = ("memory_content", "memory_cues", "memory_tags", "memory_edges")
        written = sum(conn.execute(f"SELECT COUNT(*) FROM {t} WHERE run_id = 'r2'").fetchone()[0] for t in tables)
        live = sum(len(rows(settings.staging_path, t, "r2")) for t in tables)
    assert 0 < result.rows_out == result.counts["rows_written"] == written < live
    assert result.counts["rows_shared"] == live - written
    notes = " ".join(result.notes)
    assert f"{written} row(s) written (content " in notes and f"{live - written} shared with cues run r1" in notes
    content = rows(settings.staging_path, "memory_content", "r2")
    untouched = {r for r in before["memory_content"] if r[2] not in ("airship-0", "airship-1", "baking-0")}
    assert untouched <= content and {r[0] for r in content} >= {f"{c}:{m}" for c, m, _, _ in NEW_DUMP}
    with sqlite3.connect(settings.archive_path) as archive:
        visible = {str(r[0]) for r in archive.execute("SELECT uuid FROM messages WHERE is_active = 1")}
    assert {r[0] for r in content if r[1] == "message"} == visible
    edges = rows(settings.staging_path, "memory_edges", "r2")
    carried = {e for e in before["memory_edges"] if e[2] != "cue-tag" and e[1] in {r[0] for r in untouched}}
    assert carried <= edges
    with sqlite3.connect(settings.staging_path) as conn:
        assert dangling(settings.staging_path, "r2") == 0
        cue_tag = conn.execute(
            "SELECT COUNT(*) FROM memory_edges e JOIN memory_cues c ON c.cue_id = e.src AND c.retired_run_id IS NULL"
            " WHERE e.retired_run_id IS NULL AND e.kind = 'cue-tag' AND (c.hub = 1 OR e.weight <= 0 OR e.weight > 1)"
        ).fetchone()[0]
        assert cue_tag == 0  # no hub spreads to tags, every weight a share in (0, 1]
        per_cue = conn.execute(
            "SELECT MAX(total) FROM (SELECT SUM(weight) AS total FROM memory_edges WHERE retired_run_id IS NULL"
            " AND kind = 'cue-tag' AND dst LIKE 'conv:%' GROUP BY src)"
        ).fetchone()[0]
        assert per_cue <= 1.0 + 1e-4  # a cue's conversation shares still sum to at most its whole df
    full = cues_again(settings_for(data, rebuild_share=0), "r3", embedder)  # the same inputs built in full
    assert full.counts["incremental"] == 0 and full.counts["content"] == result.counts["content"]
    assert {r[0] for r in rows(settings.staging_path, "memory_content", "r3")} == {r[0] for r in content}
    tag_edges = {(e[0], e[1]) for e in edges if e[2] == "tag-content"}
    full_edges = rows(settings.staging_path, "memory_edges", "r3")
    assert tag_edges == {(e[0], e[1]) for e in full_edges if e[2] == "tag-content"}


def test_recall_finds_the_new_conversation_in_an_incremental_memory(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """Recall over the incremental run answers from the rebuilt conversation and still from a carried one."""
    data = copy_of(base_dir, tmp_path)
    settings = settings_for(data)
    assert run_all(settings, new_dump(tmp_path / "new.jsonl"), "r2", embedder).counts["incremental"] == 1
    memory = Memory.open(settings)
    assert memory.index.run_id == "r2"
    found = memory.recall(RecallRequest(query="zeppelin airship hangar", budget_tokens=300))
    assert min(found.pieces, key=lambda p: p.rank).conversation_id in ("airship-0", "airship-1")
    old = memory.recall(RecallRequest(query="telescope jupiter moons nebula", budget_tokens=300))
    assert min(old.pieces, key=lambda p: p.rank).conversation_id.startswith("astronomy-")


def reexport(path: Path, themes: Path, added: dict[str, list[str]]) -> Path:
    """A re-export of some conversations of the base export: each one whole, as first exported, plus the user's
    new turns (a conversation in a dump is its whole new version)."""
    old = [json.loads(line) for line in themes.read_text(encoding="utf-8").splitlines()]
    lines = [record for record in old if record["conversation_id"] in added]
    for conversation, texts in added.items():
        for n, text in enumerate(texts, start=2):
            lines.append({"conversation_id": conversation, "id": f"{conversation}-{n}", "role": "user", "text": text})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def test_the_full_build_falls_due_by_messages_added_since_it_not_by_conversations_touched(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """A 0.1 share of r1's 120 messages is 12. r2 (new_dump: 3 new messages, and baking-0's two replaced by one) moves
    6 messages; r3 (four old conversations re-exported, a turn added to each; topics kept, as between two cluster
    refits) 4 more: 7 of 62 conversations touched since r1, over the share, yet both runs stay incremental. r4 (one
    conversation, two turns) brings it to 12: a full build that says why and starts the count again."""
    data = copy_of(base_dir, tmp_path)
    themes = base_dir.parent / "themes.jsonl"
    settings = settings_for(data, rebuild_share=0.1)
    r1_state = cues_state.load_state(data, "r1")
    assert r1_state is not None and r1_state.frozen.n == 120 and r1_state.drift == 0
    r2 = run_all(settings, new_dump(tmp_path / "r2.jsonl"), "r2", embedder)
    assert r2.counts["incremental"] == 1 and r2.counts["messages_since_full"] == 6
    turns = {f"baking-{n}": [f"One more question on the sourdough crust, number {n}."] for n in range(1, 5)}
    r3 = run_all(settings, reexport(tmp_path / "r3.jsonl", themes, turns), "r3", embedder, cluster=False)
    assert r3.counts["incremental"] == 1 and r3.counts["conversations_rebuilt"] == 4
    assert r3.counts["messages_since_full"] == 10
    r3_state = cues_state.load_state(data, "r3")
    assert r3_state is not None and r3_state.full_run == "r1" and len(r3_state.changed) == 7
    two = {"baking-5": ["Should the starter rest overnight?", "How long does the loaf cool before slicing?"]}
    r4 = run_all(settings, reexport(tmp_path / "r4.jsonl", themes, two), "r4", embedder, cluster=False)
    assert r4.counts["incremental"] == 0
    assert any("12 messages added or removed since full build r1, of its 120" in note for note in r4.notes)
    state = cues_state.load_state(data, "r4")
    assert state is not None and state.full_run == "r4" and state.drift == 0 and state.frozen.n == 128
    with sqlite3.connect(settings.staging_path) as staging:
        held = store.message_ids(staging, "r4", ["baking-0", "baking-5", "airship-1"])
    assert held == {
        "baking-0": {"baking-0:baking-0-2"},
        "baking-5": {f"baking-5:baking-5-{n}" for n in range(4)},
        "airship-1": {"airship-1:airship-1-0"},
    }


def test_above_the_rebuild_share_or_with_new_settings_the_stage_builds_in_full(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """3 of 62 conversations changed by one run is over a 0.04 share: full build, and it says why; so is a settings
    change."""
    data = copy_of(base_dir, tmp_path)
    result = run_all(settings_for(data, rebuild_share=0.04), new_dump(tmp_path / "new.jsonl"), "r2", embedder)
    assert result.counts["incremental"] == 0
    assert any("3 of 62 conversations changed since cues run r1" in note for note in result.notes)
    other = cues_again(settings_for(data, keyphrases_per_content=4), "r3", embedder)
    assert other.counts["incremental"] == 0
    assert any("memory settings changed" in note for note in other.notes)
    again = cues_again(settings_for(data, keyphrases_per_content=4), "r4", embedder)
    assert again.counts["incremental"] == 1 and again.counts["conversations_rebuilt"] == 0


def test_older_runs_are_pruned_but_the_stored_recall_index_run_is_kept(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """After a run only it and the stored recall index's run keep memory rows (and a state file); prune_runs off
    keeps every run."""
    data = copy_of(base_dir, tmp_path)
    settings = settings_for(data)
    Memory.open(settings)  # stores r1's recall index
    run_all(settings, new_dump(tmp_path / "new.jsonl"), "r2", embedder)
    assert runs(settings.staging_path) == ["r1", "r2"]
    Memory.open(settings)  # stores r2's index, removes r1's
    cues_again(settings, "r3", embedder)
    assert runs(settings.staging_path) == ["r2", "r3"]
    assert sorted(p.name for p in (data / cues_state.DIRECTORY).iterdir()) == ["r2.pickle", "r3.pickle"]
    cues_again(settings_for(data, prune_runs=False), "r4", embedder)
    cues_again(settings_for(data, prune_runs=False), "r5", embedder)
    assert runs(settings.staging_path) == ["r2", "r3", "r4", "r5"]
    assert store.latest_run(open_staging(settings.staging_path)) == "r5"


class _Interrupted:
    """The embedder until it is asked for key vectors: then Ctrl-C (KeyboardInterrupt), as a user presses it while
    the cues stage embeds its keys, after the run's memory rows are committed."""

    def __init__(self, inner: StaticMiniLM) -> None:
        self.inner, self.key, self.dim, self.batch_size = inner, inner.key, inner.dim, inner.batch_size

    def embed(self, texts: Any) -> Any:
        raise KeyboardInterrupt


def named_dump(path: Path) -> Path:
    """The new dump with a speaker who says her own name: her keys (names masked) differ from the texts the embed
    stage embedded, so the cues stage has keys of its own to embed."""
    lines = [
        json.dumps(
            {"conversation_id": c, "id": m, "role": r, "text": f"Zorana here. {t}", "author": "Zorana"}
            | {"created_at": f"2025-02-0{i + 1}T09:00:00Z"}
        )
        for i, (c, m, r, t) in enumerate(NEW_DUMP)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _stages_before_cues(settings: Settings, export: Path, run_id: str, embedder: StaticMiniLM) -> None:
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        open_run(staging, stages=["all"], exports=[str(export)], settings={}, code_version="test", run_id=run_id)
        ingest_stage.run(archive, staging, run_id=run_id, settings=settings, exports=[export])
        for stage in (stage_segment, stage_extract, stage_concepts):
            stage.run(archive, staging, run_id=run_id, settings=settings)
        for embed in (stage_embed, stage_embed_concepts):
            embed.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder)
        cluster_stage.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder)
    finally:
        archive.close()
        staging.close()


def _key_vectors(staging_path: Path) -> set[tuple[str, str]]:
    with sqlite3.connect(staging_path) as conn:
        return {(str(r[0]), str(r[1])) for r in conn.execute("SELECT model, content_hash FROM embeddings")}


def test_a_cues_run_interrupted_while_embedding_keys_is_no_base_and_loses_no_key_vector(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """Ctrl-C while cues embeds its keys (rows committed): no state file of that run, r1's rows and state kept;
    the next plain cues run does not start from the unfinished run, and ends with the key vectors, content rows
    and edges of a clean run."""
    clean = copy_of(base_dir, tmp_path / "clean")
    clean_result = run_all(settings_for(clean), named_dump(tmp_path / "named.jsonl"), "r2", embedder)
    assert clean_result.counts["keys_embedded"] > 0  # the speaker's keys really are the stage's own work

    data = copy_of(base_dir, tmp_path / "killed")
    settings = settings_for(data)
    _stages_before_cues(settings, named_dump(tmp_path / "named.jsonl"), "r2", embedder)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        with pytest.raises(KeyboardInterrupt):
            cues.run(archive, staging, run_id="r2", settings=settings, embedder=_Interrupted(embedder))
        assert (
            staging.execute("SELECT status FROM stage_runs WHERE run_id = 'r2' AND stage = 'cues'").fetchone()[0]
            == "interrupted"
        )
    finally:
        archive.close()
        staging.close()
    assert runs(settings.staging_path) == ["r1", "r2"]  # r2's rows were committed, r1's not pruned
    assert not cues_state.state_path(data, "r2").exists() and cues_state.state_path(data, "r1").exists()

    again = cues_again(settings, "r3", embedder)  # the plain re-run
    assert again.status == "succeeded" and again.counts["keys_embedded"] > 0
    assert not any("incremental from cues run r2" in note for note in again.notes)
    assert _key_vectors(settings.staging_path) == _key_vectors(clean / "staging.db")
    for table in ("memory_content", "memory_edges", "memory_cues", "memory_tags"):
        assert rows(settings.staging_path, table, "r3") == rows(clean / "staging.db", table, "r2"), table
    assert runs(settings.staging_path) == ["r3"]
