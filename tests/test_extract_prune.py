"""The extraction cache's share-or-prune rule (docs/runs.md): what an extract run keeps and deletes."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest
from concept_support import CountingOffline, Dbs, ScriptedExtractor, conversation, open_dbs, write_archive
from stage_support import stage_extract, stage_segment

from extract import offline, prompts
from extract.types import SegmentInput
from staging import extractions as extraction_store

GARDEN = [
    ("user", "I want to grow a vegetable garden this spring. My vegetable garden needs compost."),
    ("assistant", "A vegetable garden does well with compost and six hours of sun."),
]
TRIP = [
    ("user", "We're planning a trip to Lisbon in May. I love the tram rides in Lisbon."),
    ("assistant", "Lisbon in May is lovely; take tram 28 early."),
]
TRIP_EDITED = [("user", "We're planning a trip to Porto in June. I love the river walks in Porto."), TRIP[1]]


def _archive(dbs: Dbs, trip: Sequence[tuple[str, str]], tag: str) -> str:
    write_archive(dbs.archive, [conversation("garden", GARDEN), conversation("trip", trip)], tag=tag)
    run_id = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    return run_id


def _answer(segment: SegmentInput) -> str:
    """A model's answer: one hypothesis typed "Project" (a mapper decision) citing the first message."""
    first = segment.messages[0]
    span = {"source_id": "?", "message_id": first.message_id, "text": first.text[:20], "confidence": 0.9}
    hypothesis = {
        "concept_id": "Thing",
        "title": "Thing",
        "type": "Project",
        "description": "d",
        "state": "active",
        "confidence": 0.7,
        "aliases": [],
        "evidence_spans": [span],
        "relations": [],
    }
    return json.dumps({"hypotheses": [hypothesis]})


def _llm(model: str, version: tuple[str, ...] = prompts.VERSION_PARTS) -> ScriptedExtractor:
    extractor = ScriptedExtractor(_answer, name="llm")
    extractor.cache_key_parts = (*version, model, "low")
    return extractor


def _old_rules() -> CountingOffline:
    extractor = CountingOffline()
    extractor.cache_key_parts = ("offline", "rules-v1", *extractor.cache_key_parts[2:])
    return extractor


def _extract(dbs: Dbs, run_id: str, extractor: object) -> int:
    stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=extractor)
    return int(getattr(extractor, "calls", 0))


def _state(staging: sqlite3.Connection) -> dict[str, set[tuple[object, ...]]]:
    """The cache as content: extractions, mapper decisions and fact mentions, without run ids."""
    return {
        "extractions": set(staging.execute("SELECT cache_key, key_parts, status, hypotheses FROM extractions")),
        "mapper_decisions": set(
            staging.execute("SELECT cache_key, ordinal, rule, before, after FROM mapper_decisions")
        ),
        "fact_mentions": set(
            staging.execute("SELECT cache_key, ordinal, subject, attribute, value FROM fact_mentions")
        ),
        "segment_extractions": set(staging.execute("SELECT segment_id, cache_key FROM segment_extractions")),
    }


def _parts(staging: sqlite3.Connection) -> set[tuple[str, ...]]:
    return {tuple(json.loads(r[0])) for r in staging.execute("SELECT key_parts FROM extractions")}


def _decided(staging: sqlite3.Connection) -> set[tuple[str, ...]]:
    """The key parts of the extractions that have mapper decisions."""
    rows = staging.execute(
        "SELECT DISTINCT e.key_parts FROM mapper_decisions d JOIN extractions e ON e.cache_key = d.cache_key"
    )
    return {tuple(json.loads(r[0])) for r in rows}


def test_extractions_are_kept_or_pruned_as_docs_runs_md_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After each extract run: an older chatmem's extractions (other offline rules, another LLM prompt) and those
    of retired segments go, with their mapper decisions and fact mentions; this chatmem's extractions of current
    segments stay under any settings (a paid model switched back to, another max_concepts: no call); a run killed
    in the middle, re-run, ends with the rows of a clean build plus those kept."""
    dbs = open_dbs(tmp_path / "d", extract={"batch_size": 1})
    run_id = _archive(dbs, TRIP, "a")
    _extract(dbs, run_id, _old_rules())
    _extract(dbs, run_id, _llm("model-a", ("prompt-v1", "schema-v1")))  # an older prompt's paid extractions
    assert ("offline", "rules-v1") not in {p[:2] for p in _parts(dbs.staging)}  # the old rules' rows went
    assert _decided(dbs.staging) == {("prompt-v1", "schema-v1", "model-a", "low")}  # the old prompt's answers
    _extract(dbs, run_id, _llm("model-a"))
    _extract(dbs, run_id, CountingOffline(max_concepts=2))
    max5 = CountingOffline()
    assert _extract(dbs, run_id, max5) == 2
    assert _parts(dbs.staging) == {
        (*prompts.VERSION_PARTS, "model-a", "low"),  # paid, current segments: kept for any model
        (
            *offline.VERSION_PARTS,
            f"open-{offline.OPEN_RANKS}",
            "max-2",
        ),  # this chatmem's rules under other settings: kept
        max5.cache_key_parts,
    }
    assert max5.cache_key_parts[:4] == offline.VERSION_PARTS and max5.cache_key_parts[5] == "max-5"
    orphans = "SELECT COUNT(*) FROM {} WHERE cache_key NOT IN (SELECT cache_key FROM extractions)"
    assert all(dbs.staging.execute(orphans.format(t)).fetchone()[0] == 0 for t in ("mapper_decisions", "fact_mentions"))
    assert _decided(dbs.staging) == {(*prompts.VERSION_PARTS, "model-a", "low")}  # the old prompt's went
    assert _extract(dbs, run_id, _llm("model-a")) == 0 and _extract(dbs, run_id, CountingOffline(max_concepts=2)) == 0

    later = _archive(dbs, TRIP_EDITED, "b")  # trip's segment retired: its extractions go, whatever the extractor

    def killed(*args: object) -> int:
        raise KeyboardInterrupt  # after the extractions were written, before the prune

    with monkeypatch.context() as patch:
        patch.setattr(extraction_store, "prune", killed)
        with pytest.raises(KeyboardInterrupt):
            _extract(dbs, later, CountingOffline())
    assert dbs.staging.execute("SELECT COUNT(*) FROM extractions").fetchone()[0] == 7  # nothing pruned yet
    assert _extract(dbs, later, CountingOffline()) == 0  # the re-run: trip's new segment is cached, the prune done
    current = "SELECT content_hash FROM current_segments"
    assert (
        dbs.staging.execute(f"SELECT COUNT(*) FROM extractions WHERE content_hash NOT IN ({current})").fetchone()[0]
        == 0
    )
    assert len(_parts(dbs.staging)) == 3 and dbs.staging.execute("SELECT COUNT(*) FROM extractions").fetchone()[0] == 4

    clean = open_dbs(tmp_path / "clean", extract={"batch_size": 1})
    write_archive(clean.archive, [conversation("garden", GARDEN), conversation("trip", TRIP_EDITED)], tag="b")
    clean_run = clean.run_id()
    stage_segment.run(clean.archive, clean.staging, run_id=clean_run, settings=clean.settings)
    _extract(clean, clean_run, CountingOffline())
    ours, theirs = _state(dbs.staging), _state(clean.staging)
    kept = {r[0] for r in dbs.staging.execute("SELECT cache_key FROM extractions WHERE key_parts NOT LIKE '%max-5%'")}
    assert {k: {r for r in v if r[0] not in kept} for k, v in ours.items() if k != "segment_extractions"} == {
        k: v for k, v in theirs.items() if k != "segment_extractions"
    }
    assert {r[1] for r in ours["segment_extractions"]} == {r[1] for r in theirs["segment_extractions"]}
