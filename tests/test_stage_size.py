"""The runner's guess at a stage run's size (flows/stage_size.py): a stage declared own_process gets a process of its
own for a large run (--force, its first run, changed settings or version, its own guess from the ledger's counts)
and stays in the runner's for a scheduled day's few changes.

The ledger rows are written through the ledger's own API (staging.ledger.StageRun) into a real staging.db, with
the counts the stages record; the cluster stage's guess is checked against its real incremental and refit runs in
tests/test_cluster_incremental.py.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType

import pytest

from clients.batches import map_in_process
from clients.stage import StageContext, declared_only
from contracts.errors import ConfigError
from contracts.settings import Settings
from contracts.version import code_version
from extract import stage_concepts
from flows.fingerprint import settings_sections
from flows.registry import spec
from flows.stage_runner import ALWAYS, run_stage_now
from flows.stage_size import large_run
from memory import stage as cues_stage
from staging.ledger import StageRun, open_run, open_staging
from staging.liveness import INTERRUPT_PREFIX


@pytest.fixture
def staging(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = open_staging(tmp_path / "staging.db")
    yield conn
    conn.close()


def record(
    staging: sqlite3.Connection,
    settings: Settings,
    stage: str,
    run_id: str,
    counts: Mapping[str, int] | None = None,
    *,
    version: str | None = None,
    status: str = "succeeded",
) -> int:
    """One stage run as the runner records it (the declared sections as settings, the package version, counts):
    succeeded; failed with or without counts (a stage whose items partly failed records them); interrupted; or left
    'running' (killed). Returns its id."""
    if staging.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
        open_run(staging, stages=["all"], exports=[], settings={}, code_version=code_version(), run_id=run_id)
    row = StageRun(
        staging,
        run_id=run_id,
        stage=stage,
        input_fingerprint="f",
        settings=settings_sections(settings, spec(stage)),
        code_version=version or code_version(),
    )
    if status == "succeeded":
        row.succeed(rows_in=0, rows_out=0, counts=counts or {})
    elif status == "failed":
        row.fail("StageError: boom", "chatmem run", rows_in=0, rows_out=0, counts=counts)
    elif status == "interrupted":
        row.fail(f"{INTERRUPT_PREFIX} Ctrl-C", "chatmem run")
    return row.id


def extracted(staging: sqlite3.Connection, run_id: str, segments: int, start: int = 0) -> None:
    """`segments` segments pointed at their extraction by run `run_id` (what the extract stage writes)."""
    staging.executemany(
        "INSERT OR REPLACE INTO segment_extractions (segment_id, cache_key, run_id) VALUES (?, ?, ?)",
        ((f"s{n}", f"k{n}-{run_id}", run_id) for n in range(start, start + segments)),
    )
    staging.commit()


def guess(
    staging: sqlite3.Connection, settings: Settings, stage: str, run_id: str, force: bool = False, stage_run_id: int = 0
) -> str:
    """What the runner decides for `stage` in run `run_id`, with the stage's own module (its `large_run`)."""
    module = {"concepts": stage_concepts, "cues": cues_stage}.get(stage) or ModuleType("no_guess")
    ctx = StageContext(
        stage=stage,
        run_id=run_id,
        settings=declared_only(settings, stage, spec(stage).settings_sections),
        archive=staging,  # not read by these guesses
        staging=staging,
        stage_run_id=stage_run_id,
        force=force,
    )
    return large_run(spec(stage), module, ctx, settings, force)


def test_force_the_first_run_and_changed_settings_or_version_are_large(
    staging: sqlite3.Connection, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path)
    assert guess(staging, settings, "concepts", "r1") == "its first run"
    record(staging, settings, "concepts", "r1", {}, status="failed")
    assert guess(staging, settings, "concepts", "r2") == "its first run"  # a failed run did not do its work
    record(staging, settings, "concepts", "r2", {})
    assert guess(staging, settings, "concepts", "r3") == ""  # nothing extracted since: a small run
    assert guess(staging, settings, "concepts", "r3", force=True) == "--force"
    changed = Settings(data_dir=tmp_path)
    changed.concepts = changed.concepts.model_copy(update={"batch_size": settings.concepts.batch_size + 1})
    assert guess(staging, changed, "concepts", "r3") == "its settings changed since its last run"
    other = Settings(data_dir=tmp_path)
    other.garden = other.garden.model_copy(update={"keep_per_conversation": other.garden.keep_per_conversation + 1})
    assert guess(staging, other, "concepts", "r3") == ""  # a section concepts does not declare
    record(staging, settings, "concepts", "r3", {}, version="chatmem 0.0.1")
    assert "is not the version of its last run (chatmem 0.0.1)" in guess(staging, settings, "concepts", "r4")


def test_a_run_stopped_part_way_since_upstream_or_here_is_large(staging: sqlite3.Connection, tmp_path: Path) -> None:
    """What a failed, interrupted or killed run wrote, no count says: the next run of it or a later stage is large;
    a stopped run of a later stage, or the stage run now running (this one), is not a reason."""
    settings = Settings(data_dir=tmp_path)
    record(staging, settings, "cues", "r1", {"content": 100})
    record(staging, settings, "segment", "r1", {"conversations": 1000})
    record(staging, settings, "load", "r2", status="failed")  # after cues: not its concern
    now = record(staging, settings, "cues", "r2", status="running")  # the stage run this guess is for
    assert guess(staging, settings, "cues", "r2", stage_run_id=now) == ""
    for status, stage in (("interrupted", "extract"), ("running", "ingest"), ("failed", "cues")):
        stopped = record(staging, settings, stage, f"r-{status}", status=status)
        said = guess(staging, settings, "cues", "r3", stage_run_id=now)
        assert said == f"a run of {stage} stopped part-way since its last run (r-{status}: {status})"
        staging.execute("DELETE FROM stage_runs WHERE id = ?", (stopped,))
        staging.commit()


def test_a_stage_without_its_own_guess_always_gets_a_process(staging: sqlite3.Connection, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    record(staging, settings, "cluster", "r1", {"incremental": 1})
    assert guess(staging, settings, "cluster", "r2") == "declared own_process"  # ModuleType: no large_run


def test_a_guess_that_fails_is_a_large_run(staging: sqlite3.Connection, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    record(staging, settings, "concepts", "r1", {})
    staging.execute("DROP TABLE segment_extractions")  # what the concepts guess counts in
    assert guess(staging, settings, "concepts", "r2").startswith("its size could not be guessed (OperationalError")


def test_concepts_is_large_when_the_segments_extracted_again_are_a_large_share(
    staging: sqlite3.Connection, tmp_path: Path
) -> None:
    """Counted in segment_extractions, not in the extract runs' counts: a failed or killed extract run's writes
    count too."""
    settings = Settings(data_dir=tmp_path)
    extracted(staging, "r1", 1000)
    record(staging, settings, "concepts", "r1", {})
    extracted(staging, "r2", 30, start=1000)  # new segments
    extracted(staging, "r3", 19, start=0)  # old ones extracted again
    assert guess(staging, settings, "concepts", "r3") == ""  # 49 of 1,030: under 5 %
    extracted(staging, "r4", 3, start=500)
    assert guess(staging, settings, "concepts", "r4") == "52 of 1030 segment(s) extracted again since its last run"


def test_cues_is_large_after_a_refit_or_past_the_rebuild_share(staging: sqlite3.Connection, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    share = settings.memory.rebuild_share
    assert share == pytest.approx(0.1)  # the figures below are written for the default
    record(staging, settings, "segment", "r1", {"conversations": 1000})
    record(staging, settings, "extract", "r1", {"segments": 3000})
    record(staging, settings, "cues", "r1", {"content": 10_000, "incremental": 0})
    record(staging, settings, "ingest", "r2", {"conversations_written": 50, "messages_inserted": 400})
    record(staging, settings, "concepts", "r2", {"extractions_read": 100})
    record(staging, settings, "cluster", "r2", {"incremental": 1})
    assert guess(staging, settings, "cues", "r2") == ""
    record(staging, settings, "concepts", "r2b", {"extractions_read": 250})  # a concept store rebuilt, say
    assert (
        guess(staging, settings, "cues", "r2b")
        == "the concepts of 350 of 3000 segment(s) handled again since its last run"
    )
    record(staging, settings, "cues", "r2b", {"content": 10_000, "incremental": 0})
    record(staging, settings, "cluster", "r3", {"incremental": 0})  # the topics fitted again
    assert guess(staging, settings, "cues", "r3") == "the topics were fitted again since its last run"
    record(staging, settings, "cues", "r3", {"content": 10_400, "incremental": 0})
    record(staging, settings, "ingest", "r4", {"conversations_written": 100, "messages_inserted": 300})
    record(staging, settings, "cluster", "r4", {"incremental": 1})
    assert guess(staging, settings, "cues", "r4") == "100 conversation(s) written since its last run, of 1000"
    # the drift adds up over incremental builds: 900 since the full one, +150 now, of its 10,000 messages
    record(staging, settings, "cues", "r4", {"content": 11_300, "incremental": 1, "messages_since_full": 900})
    record(staging, settings, "ingest", "r5", {"conversations_written": 20, "messages_inserted": 100})
    assert guess(staging, settings, "cues", "r5") == ""
    record(staging, settings, "ingest", "r6", {"conversations_written": 20, "messages_retired": 50})
    said = guess(staging, settings, "cues", "r6")
    assert said == "1050 message(s) added or removed since its last full build, of 10400"
    off = Settings(data_dir=tmp_path)
    off.memory = off.memory.model_copy(update={"rebuild_share": 0.0})
    assert guess(staging, off, "cues", "r6") == "its settings changed since its last run"


def test_run_stage_now_refuses_a_stage_process_with_the_callers_pool(
    staging: sqlite3.Connection, tmp_path: Path
) -> None:
    """A child cannot use the caller's map_batches: said at once rather than dropped silently."""
    settings = Settings(data_dir=tmp_path)
    with pytest.raises(ConfigError, match="own_process and map_batches"):
        run_stage_now(
            "cluster", staging, staging, run_id="r1", settings=settings, own_process=ALWAYS, map_batches=map_in_process
        )


def test_an_archive_too_small_to_cluster_stays_in_the_runner_even_on_its_first_run(
    staging: sqlite3.Connection, tmp_path: Path
) -> None:
    """Session 38's cold try: a 2-conversation export took 50 s, concepts, cluster and cues each in a process of
    its own (a start and the imports again, 2-3 s each on a busy machine) for a handful of rows. Fewer current
    segments than cluster.min_points (the segment stage's count): in the runner, first run and --force alike; at
    cluster.min_points, or with no count yet, the rules as before."""
    settings = Settings(data_dir=tmp_path)
    record(staging, settings, "segment", "r1", {"segments_current": settings.cluster.min_points - 1})
    for stage in ("concepts", "cues", "cluster"):
        assert guess(staging, settings, stage, "r1") == "", stage
        assert guess(staging, settings, stage, "r1", force=True) == "", stage
    record(staging, settings, "segment", "r2", {"segments_current": settings.cluster.min_points})
    assert guess(staging, settings, "concepts", "r2") == "its first run"
    assert guess(staging, settings, "cluster", "r2", force=True) == "--force"
