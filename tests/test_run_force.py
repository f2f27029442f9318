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

from stage_support import cluster_stage
from stage_support import cues_stage as cues

from clients.embedders import StaticMiniLM
from contracts.results import StageResult
from staging.archive import open_archive
from staging.ledger import open_run, open_staging
from tests.test_cues_incremental import base_dir, copy_of, embedder, rows, settings_for

__all__ = ["base_dir", "embedder"]  # the module fixtures, used here by name

MEMORY_TABLES = ("memory_content", "memory_edges", "memory_cues", "memory_tags")


def _stage(stage: Any, data: Path, run_id: str, embedder: StaticMiniLM, *, force: bool) -> StageResult:
    settings = settings_for(data)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        open_run(staging, stages=["cues"], exports=[], settings={}, code_version="test", run_id=run_id)
        return stage.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder, force=force)  # type: ignore[no-any-return]
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
