"""The one stage contract (clients/stage.py, flows/stage_runner.py): a stage sees only the settings sections it
declares, the runner records whatever a stage returns or raises, and recall's settings are in no stage's
fingerprint."""

from __future__ import annotations

import json
import pickle
import sqlite3
from pathlib import Path

import pytest

from clients.stage import UndeclaredSettingsError, declared_only
from contracts.errors import StageError
from contracts.memory import RecallRequest
from contracts.settings import Settings
from flows.registry import STAGES
from flows.stage_runner import run_stage_now
from staging.archive import open_archive
from staging.ledger import open_run, open_staging
from tests.graph_helpers import GraphEnv

pytest_plugins = ["tests.graph_fixtures"]

TOPICS = {
    "bread": ["I bake sourdough bread every weekend.", "The starter needs feeding twice a day."],
    "garden": ["My tomatoes in the vegetable garden are ripe.", "Compost helps the tomato plants grow."],
    "lisbon": ["We are planning a trip to Lisbon in May.", "Take tram 28 early in Lisbon."],
}


def themed_export(path: Path) -> Path:
    lines = []
    for c, (topic, texts) in enumerate(TOPICS.items()):
        for t, text in enumerate(texts):
            role = "user" if t % 2 == 0 else "assistant"
            message = {"conversation_id": topic, "id": f"{topic}-{t}", "role": role, "text": text}
            message["created_at"] = f"2024-0{c + 1}-01T10:0{t}:00Z"
            lines.append(json.dumps(message))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_stage_sees_only_its_declared_settings_sections() -> None:
    """An undeclared section fails on first read, naming the stage and the section; declared ones, the runner
    section and the data dir read as usual; the restricted settings still pickle (for worker processes)."""
    settings = declared_only(Settings(), "segment", ("segment",))
    assert settings.segment.max_tokens > 0
    assert settings.runner.local_workers >= 0
    assert settings.staging_path.name == "staging.db"
    with pytest.raises(UndeclaredSettingsError, match=r"stage 'segment' read settings\.memory\.hub_share"):
        _ = settings.memory.hub_share
    assert pickle.loads(pickle.dumps(settings)).segment == settings.segment


def test_every_declared_section_exists_and_no_stage_declares_recall() -> None:
    """Each stage's sections are real Settings sections; recall's settings belong to no stage."""
    for stage in STAGES:
        assert set(stage.settings_sections) <= set(Settings.model_fields), stage.name
        assert "recall" not in stage.settings_sections, stage.name


def test_recall_settings_keep_their_old_memory_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """CHATMEM_MEMORY__LEXICAL_WEIGHT still sets recall.lexical_weight (CHATMEM_RECALL__* wins); the build
    settings stay in `memory`, and recall.key_roles follows memory.key_roles."""
    monkeypatch.setenv("CHATMEM_MEMORY__LEXICAL_WEIGHT", "0.25")
    monkeypatch.setenv("CHATMEM_MEMORY__DENSE_WEIGHT", "0.5")
    monkeypatch.setenv("CHATMEM_RECALL__DENSE_WEIGHT", "0.75")
    monkeypatch.setenv("CHATMEM_MEMORY__KEY_ROLES", '["user"]')
    settings = Settings()
    assert (settings.recall.lexical_weight, settings.recall.dense_weight) == (0.25, 0.75)
    assert "lexical_weight" not in settings.memory.model_dump()
    assert settings.recall.key_roles == settings.memory.key_roles == ["user"]


def test_a_bug_in_ingest_is_a_recorded_stage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ingest goes through the runner like every stage: an unexpected exception is a StageError with the re-run
    command, and the ledger row says failed with the cause (it used to surface raw, with a hand-written row)."""
    import ingest.stage

    def broken(*_args: object, **_kwargs: object) -> object:
        raise RuntimeError("parser bug")

    monkeypatch.setattr(ingest.stage, "_ingest_one", broken)
    settings = Settings(data_dir=tmp_path / "data")
    settings.data_dir.mkdir()
    export = themed_export(tmp_path / "notes.jsonl")
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    run_id = open_run(staging, stages=["ingest"], exports=[str(export)], settings={}, code_version="t")
    with pytest.raises(StageError, match="RuntimeError: parser bug") as raised:
        run_stage_now("ingest", archive, staging, run_id=run_id, settings=settings, exports=[export])
    assert raised.value.rerun_hint == f"chatmem stage ingest --run-id {run_id}"
    row = staging.execute("SELECT status, error, rerun_hint FROM stage_runs WHERE stage = 'ingest'").fetchone()
    assert tuple(row) == ("failed", "RuntimeError: parser bug", raised.value.rerun_hint)


@pytest.mark.prefect
@pytest.mark.slow
def test_a_recall_only_setting_rebuilds_nothing_and_recall_uses_it(tmp_path: Path, graph: GraphEnv) -> None:
    """After a full run into the graph, a new recall weight (recall.lexical_weight) leaves every stage unchanged:
    the next run skips cues and load; a recall then ranks with the new weight."""
    from flows.pipeline import run_pipeline
    from memory.service import Memory

    export = themed_export(tmp_path / "exports" / "notes.jsonl")
    sections = {"load": graph.load_settings(), "memory": {"key_embedder": "embed"}}
    before = Settings(data_dir=tmp_path / "data", **sections)  # type: ignore[arg-type]
    first, results = run_pipeline(before, [export], quiet=True)
    assert {r.stage: r.status for r in results}["load"] == "succeeded", results

    after = Settings(data_dir=tmp_path / "data", recall={"lexical_weight": 0.25}, **sections)  # type: ignore[arg-type]
    _, results = run_pipeline(after, [export], quiet=True)
    statuses = {r.stage: r.status for r in results}
    assert statuses["cues"] == statuses["load"] == "skipped", results
    assert all(f"unchanged since run {first}" in r.notes[0] for r in results if r.stage in ("cues", "load"))

    request = RecallRequest(query="tomatoes in the garden", budget_tokens=5000)
    old = Memory.open(before).recall(request)
    new_memory = Memory.open(after)
    assert new_memory.settings.recall.lexical_weight == 0.25
    new = new_memory.recall(request)
    assert new.pieces and old.pieces
    assert [(p.content_id, round(p.score, 6)) for p in new.pieces] != [
        (p.content_id, round(p.score, 6)) for p in old.pieces
    ]
    with sqlite3.connect(before.staging_path) as conn:
        cues_runs = conn.execute("SELECT COUNT(*) FROM stage_runs WHERE stage = 'cues' AND status = 'succeeded'")
        assert cues_runs.fetchone()[0] == 1  # built once
