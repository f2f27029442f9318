"""The extract stage (extract.stage_extract) on real SQLite files: cache, mapper decisions, failures, usage."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from concept_support import CountingOffline, Dbs, ScriptedExtractor, conversation, open_dbs, write_archive
from stage_support import stage_extract, stage_segment

from contracts.errors import ConfigError, StageError
from extract.types import ExtractionFailure, SegmentInput

GARDEN = [
    ("user", "I want to grow a vegetable garden this spring. The vegetable garden needs compost."),
    ("assistant", "A vegetable garden does well with compost and six hours of sun."),
]
TRIP = [
    ("user", "We're planning a trip to Lisbon in May. Lisbon has great tram rides."),
    ("assistant", "Lisbon in May is lovely; take tram 28 early."),
]


def segmented(tmp_path: Path, **sections: object) -> tuple[Dbs, str]:
    dbs = open_dbs(tmp_path, **sections)
    write_archive(dbs.archive, [conversation("garden", GARDEN), conversation("trip", TRIP)])
    run_id = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    return dbs, run_id


def test_rerun_with_nothing_changed_makes_zero_extractor_calls(tmp_path: Path) -> None:
    """The cache: the second run hands no segment to the (real, offline) extractor."""
    dbs, run_id = segmented(tmp_path)
    extractor = CountingOffline()
    first = stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=extractor)
    assert extractor.calls == 2 and first.counts["extractor_calls"] == 2 and first.counts["hypotheses_kept"] > 0
    again = stage_extract.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings, extractor=extractor)
    assert extractor.calls == 2 and again.counts["extractor_calls"] == 0 and again.counts["segments_cached"] == 2
    assert again.status == "skipped"


def test_a_rerun_reads_only_the_segments_not_current_under_its_key(tmp_path: Path) -> None:
    """A day's run over a large archive: the segments whose current extraction is this extractor's of their
    present content are not read at all (counted as cached), so the stage follows what changed."""
    dbs, run_id = segmented(tmp_path)
    extractor = CountingOffline()
    stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=extractor)
    write_archive(dbs.archive, [conversation("trip", [*TRIP, ("user", "And what about Porto in June?")])])
    stage_segment.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings)
    read: list[str] = []
    dbs.staging.set_trace_callback(read.append)
    again = stage_extract.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings, extractor=extractor)
    dbs.staging.set_trace_callback(None)
    assert extractor.calls == 3 and again.counts["extractor_calls"] == 1
    assert (again.counts["segments"], again.counts["segments_cached"]) == (2, 1)
    members = [sql for sql in read if "JOIN segment_messages" in sql]
    assert members and all("'garden'" not in sql for sql in members)  # the garden conversation's pages: never


def test_a_changed_extractor_key_extracts_again(tmp_path: Path) -> None:
    """Another prompt/model/version (cache_key_parts) is another cache entry: every segment is extracted."""
    dbs, run_id = segmented(tmp_path)
    stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=CountingOffline())
    other = CountingOffline(max_concepts=2)
    stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=other)
    assert other.calls == 2
    current = {r[0] for r in dbs.staging.execute("SELECT cache_key FROM segment_extractions")}
    assert len(current) == 2 and all(
        json.loads(r[0])[-1] == "max-2"
        for r in dbs.staging.execute(
            "SELECT key_parts FROM extractions WHERE cache_key IN (SELECT cache_key FROM segment_extractions)"
        )
    )


def _raw_answer(segment: SegmentInput) -> str:
    first = segment.messages[0]
    span = {"source_id": "?", "message_id": first.message_id, "text": first.text[:20], "confidence": 0.9}
    bad = {"source_id": "?", "message_id": "not-in-segment", "text": "anything", "confidence": 0.9}
    hypothesis = {
        "concept_id": "Thing",
        "title": "Thing",
        "type": "Project",
        "description": "d",
        "state": "active",
        "confidence": 0.7,
        "aliases": [],
        "evidence_spans": [span, bad],
        "relations": [],
        "revision_count": 0,
        "first_seen": None,
        "last_seen": None,
    }
    return json.dumps({"hypotheses": [hypothesis]})


def test_every_mapper_decision_is_a_staging_row(tmp_path: Path) -> None:
    """A model's "Project" and a span citing another message: both decisions stored with before, after, rule."""
    dbs, run_id = segmented(tmp_path)
    result = stage_extract.run(
        dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=ScriptedExtractor(_raw_answer)
    )
    rows = dbs.staging.execute("SELECT rule, before, after, run_id FROM mapper_decisions ORDER BY rule").fetchall()
    by_rule = {r["rule"]: r for r in rows}
    assert json.loads(by_rule["type_synonym"]["after"]) == "project"
    assert by_rule["evidence_message_not_in_segment"]["after"] is None and by_rule["type_synonym"]["run_id"] == run_id
    assert result.counts["mapper_decisions"] == len(rows)
    stored = json.loads(dbs.staging.execute("SELECT hypotheses FROM extractions LIMIT 1").fetchone()[0])
    assert stored[0]["type"] == "project" and len(stored[0]["evidence_spans"]) == 1


def test_failed_segments_are_recorded_and_retried_next_run(tmp_path: Path) -> None:
    """A failure is a 'failed' row, and the stage run fails saying how many (the rest written, counts kept);
    the next run tries that segment again (and only that one)."""
    dbs, run_id = segmented(tmp_path)

    def flaky(segment: SegmentInput) -> object:
        if segment.conversation_id == "trip" and not flaky.healed:  # type: ignore[attr-defined]
            return ExtractionFailure("HTTP 500 after 4 retries")
        return _raw_answer(segment)

    flaky.healed = False  # type: ignore[attr-defined]
    extractor = ScriptedExtractor(flaky)
    with pytest.raises(StageError, match=r"1 segment failed of 2 \(1 HTTP 500 after 4 retries\)"):
        stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=extractor)
    ledger = dbs.staging.execute("SELECT status, counts, notes FROM stage_runs WHERE stage = 'extract'").fetchone()
    assert ledger["status"] == "failed" and json.loads(ledger["counts"])["failed"] == 1 and "re-run" in ledger["notes"]
    failed = dbs.staging.execute("SELECT reason FROM extractions WHERE status = 'failed'").fetchone()
    assert failed["reason"] == "HTTP 500 after 4 retries"
    flaky.healed = True  # type: ignore[attr-defined]
    again = stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=extractor)
    assert extractor.calls == 3 and again.counts["extracted"] == 1 and again.counts["failed"] == 0


def test_only_the_first_failed_segments_are_logged_as_warnings(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """8 segments fail: the first 5 are WARNING lines, then one line says the rest are logged with -v only, and
    those 3 are INFO; the stage's error still counts all 8."""
    dbs = open_dbs(tmp_path)
    write_archive(
        dbs.archive, [conversation(f"c{i}", [("user", f"Planning trip number {i} to Lisbon.")]) for i in range(8)]
    )
    run_id = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    extractor = ScriptedExtractor(lambda segment: ExtractionFailure("HTTP 400: bad request"))
    with caplog.at_level("INFO", logger="extract.stage_extract"), pytest.raises(StageError, match="8 segments failed"):
        stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=extractor)
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "extract.stage_extract"]
    per_segment = [level for level, message in said if message.startswith("extract - segment ")]
    assert per_segment == ["WARNING"] * 5 + ["INFO"] * 3, said
    assert ("WARNING", "extract - more segments failed: each is logged with -v only") in said


def test_tokens_per_1k_messages_come_from_usage(tmp_path: Path) -> None:
    """Usage of 100 + 20 tokens per call over 2 segments of 2 messages: 60,000 tokens per 1k messages."""
    dbs, run_id = segmented(tmp_path)
    extractor = ScriptedExtractor(_raw_answer, usage=(100, 20))
    result = stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=extractor)
    assert result.counts["prompt_tokens"] == 200 and result.counts["completion_tokens"] == 40
    assert result.counts["tokens_per_1k_messages"] == 60_000


def test_the_offline_extractor_is_the_announced_default(tmp_path: Path) -> None:
    """No extract.llm settings: the offline extractor runs, says so in the notes, and spends 0 tokens."""
    dbs, run_id = segmented(tmp_path)
    result = stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    assert result.notes[0].startswith("extractor: offline") and result.counts["tokens_per_1k_messages"] == 0
    assert {r[0] for r in dbs.staging.execute("SELECT extractor FROM extractions")} == {"offline"}


def test_a_configured_llm_that_cannot_load_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """extract.llm set but the LLM extractor module missing: exit-2 ConfigError naming the fix; ledger says failed."""
    monkeypatch.setitem(sys.modules, "extract.llm", None)  # makes `import extract.llm` raise ImportError
    dbs, run_id = segmented(tmp_path, extract={"llm": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}})
    with pytest.raises(ConfigError, match="CHATMEM_EXTRACT__LLM") as caught:
        stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    assert caught.value.exit_code == 2
    status = dbs.staging.execute("SELECT status FROM stage_runs WHERE stage = 'extract'").fetchone()[0]
    assert status == "failed"


def test_a_small_local_run_extracts_in_its_own_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A day's few new segments do not start the local worker processes (their start costs more than the work);
    past IN_PROCESS_BELOW the same segments go to the pool, and both write the same extractions."""
    from clients.batches import map_in_process
    from extract import stage_extract as module

    handed: list[int] = []

    def pool(job: object, batches: list[object]) -> object:  # stands for the local worker pool: records, runs here
        handed.append(len(batches))
        return map_in_process(job, batches)  # type: ignore[arg-type]

    written = []
    for name, below in (("small", module.IN_PROCESS_BELOW), ("pooled", 0)):
        monkeypatch.setattr(module, "IN_PROCESS_BELOW", below)
        dbs, run_id = segmented(tmp_path / name)
        result = stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, map_batches=pool)
        assert result.counts["extractor_calls"] == 2 and result.counts["hypotheses_kept"] > 0
        written.append(dbs.staging.execute("SELECT cache_key, hypotheses FROM extractions ORDER BY 1").fetchall())
        assert bool(handed) is (name == "pooled"), name
    assert written[0] == written[1]
