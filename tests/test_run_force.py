"""`chatmem run --force` on the stages that have an incremental path of their own (issue 21, F7): cues rebuilds
every conversation and cluster tunes and fits again, each giving what a clean build on the same data gives,
where a plain re-run would carry the last run's rows (cues) or place segments in the saved model (cluster).

Real stages on a real data dir: the module data dir of tests/test_cues_incremental.py (ingest to cues, run r1),
copied per test.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from stage_support import cluster_stage, garden_stage, stage_concepts
from stage_support import cues_stage as cues

from clients.embedders import StaticMiniLM
from contracts.results import StageResult
from staging.archive import open_archive
from staging.ledger import open_run, open_staging
from tests.test_cues_incremental import base_dir, copy_of, embedder, rows, settings_for

__all__ = ["base_dir", "embedder"]  # the module fixtures, used here by name

MEMORY_TABLES = ("memory_content", "memory_edges", "memory_cues", "memory_tags")


def _stage(stage: Any, data: Path, run_id: str, embedder: StaticMiniLM | None, *, force: bool) -> StageResult:
    settings = settings_for(data)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    extra = {} if embedder is None else {"embedder": embedder}  # the stages that embed take the module's model
    try:
        open_run(staging, stages=["cues"], exports=[], settings={}, code_version="test", run_id=run_id)
        return stage.run(archive, staging, run_id=run_id, settings=settings, force=force, **extra)  # type: ignore[no-any-return]
    finally:
        archive.close()
        staging.close()


def test_force_rebuilds_every_conversation_of_cues_equal_to_the_clean_build(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """Unchanged data: a plain cues run is incremental (nothing rebuilt); with --force it is a full build whose
    memory rows equal the clean build's (run r1)."""
    data = copy_of(base_dir, tmp_path)
    plain = _stage(cues, data, "r2", embedder, force=False)
    assert plain.counts["incremental"] == 1 and plain.counts["conversations_rebuilt"] == 0
    forced = _stage(cues, data, "r3", embedder, force=True)
    assert forced.status == "succeeded" and forced.counts["incremental"] == 0, forced.counts
    assert any("--force: every conversation rebuilt" in note for note in forced.notes), forced.notes
    for table in MEMORY_TABLES:
        assert rows(data / "staging.db", table, "r3") == rows(base_dir / "staging.db", table, "r1"), table


def _assignments(staging_path: Path, run_id: str) -> set[tuple[Any, ...]]:
    with sqlite3.connect(staging_path) as conn:
        return {
            tuple(row)
            for row in conn.execute("SELECT kind, item_id, topic, source FROM topic_links WHERE run_id = ?", (run_id,))
        }


def test_force_tunes_and_fits_cluster_again_equal_to_the_clean_build(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """Unchanged data: with --force the cluster stage fits again (not the incremental placement) and its topic
    links equal the clean build's (run r1)."""
    data = copy_of(base_dir, tmp_path)
    forced = _stage(cluster_stage, data, "r2", embedder, force=True)
    assert forced.status == "succeeded" and forced.counts.get("incremental", 0) == 0, forced.counts
    assert any("--force: tuned and fitted again" in note for note in forced.notes), forced.notes
    assert _assignments(data / "staging.db", "r2") == _assignments(base_dir / "staging.db", "r1")


CONCEPT_TABLES = ("concepts", "concept_evidence", "concept_relations")


def _table(staging_path: Path, table: str) -> list[tuple[Any, ...]]:
    """A table's rows without the run columns (which run wrote a row is not what it holds)."""
    with sqlite3.connect(staging_path) as conn:
        names = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if "run" not in r[1]]
        return sorted(tuple(r) for r in conn.execute(f"SELECT {', '.join(names)} FROM {table}"))


def test_force_resolves_every_extraction_into_concepts_again_equal_to_the_clean_build(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """Unchanged data: a plain concepts run reads no extraction (nothing new); with --force the store is rebuilt
    from every current extraction and holds what the clean build's does."""
    data = copy_of(base_dir, tmp_path)
    plain = _stage(stage_concepts, data, "r2", None, force=False)
    assert plain.counts["extractions_read"] == 0, plain.counts
    forced = _stage(stage_concepts, data, "r3", None, force=True)
    assert forced.status == "succeeded" and forced.counts["extractions_read"] > 0, forced.counts
    assert any("--force: concept store rebuilt" in note for note in forced.notes), forced.notes
    for table in CONCEPT_TABLES:
        assert _table(data / "staging.db", table) == _table(base_dir / "staging.db", table), table


def test_force_gardens_in_full_not_from_the_kept_state(base_dir: Path, tmp_path: Path, embedder: StaticMiniLM) -> None:
    """Unchanged data: once the garden has kept its state (its first run), a plain run takes the incremental path;
    with --force it plans over every fact and concept again, and leaves the same facts and concepts."""
    data = copy_of(base_dir, tmp_path)
    first = _stage(garden_stage, data, "r2", None, force=False)
    plain = _stage(garden_stage, data, "r3", None, force=False)
    assert first.counts["incremental"] == 0 and plain.counts["incremental"] == 1, (first.counts, plain.counts)
    before = {table: _table(data / "staging.db", table) for table in ("facts", "concepts")}
    forced = _stage(garden_stage, data, "r4", None, force=True)
    assert forced.status == "succeeded" and forced.counts["incremental"] == 0, forced.counts
    assert any("--force: gardened in full" in note for note in forced.notes), forced.notes
    assert {table: _table(data / "staging.db", table) for table in before} == before
    after = _stage(garden_stage, data, "r5", None, force=False)  # its kept state built again by the full plan
    assert after.counts["incremental"] == 1, after.counts
