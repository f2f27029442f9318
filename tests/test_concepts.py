"""The concepts stage (extract.stage_concepts + extract.concept_loop) on real SQLite files.

Each conversation here is one segment; a scripted extractor answers per conversation with raw hypotheses, so
the whole path (segment -> extract -> mapper -> concept loop) runs as in production.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from concept_support import T0, Dbs, ScriptedExtractor, conversation, open_dbs, write_archive
from stage_support import stage_concepts, stage_extract, stage_segment

from clients.embedders import embedder_key
from contracts.errors import StageError
from contracts.results import StageResult
from extract import concept_loop
from extract.types import SegmentInput

Spec = dict[str, Any]


def hyp(title: str, kind: str = "project", confidence: float = 0.8, spans: int = 2, **extra: Any) -> Spec:
    return {"title": title, "type": kind, "confidence": confidence, "spans": spans, **extra}


def answer(specs: dict[str, list[Spec]]) -> Callable[[SegmentInput], str]:
    """Raw model JSON for a segment from `specs[conversation_id]`; evidence cites the segment's first messages (a
    spec's `by`: only messages of that role)."""

    def reply(segment: SegmentInput) -> str:
        out = []
        for spec in specs.get(segment.conversation_id, []):
            cited = [m for m in segment.messages if spec.get("by") in (None, m.role)]
            spans = [
                {"source_id": segment.segment_id, "message_id": m.message_id, "text": m.text, "confidence": 0.8}
                for m in cited[: spec["spans"]]
            ]
            out.append(
                {
                    "concept_id": spec["title"].lower().replace(" ", "-"),
                    "title": spec["title"],
                    "type": spec["type"],
                    "description": spec.get("description", f"about {spec['title']}"),
                    "state": "active",
                    "confidence": spec["confidence"],
                    "aliases": spec.get("aliases", []),
                    "evidence_spans": spans,
                    "relations": spec.get("relations", []),
                    "revision_count": 0,
                    "first_seen": None,
                    "last_seen": None,
                }
            )
        return json.dumps({"hypotheses": out})

    return reply


def chat(conversation_id: str, days: int = 0) -> Any:
    """Two distinct messages, `days` after T0."""
    turns = [("user", f"{conversation_id}: question text"), ("assistant", f"{conversation_id}: answer text")]
    return conversation(conversation_id, turns, start=T0 + timedelta(days=days))


def pipeline(
    tmp_path: Path, chats: list[Any], specs: dict[str, list[Spec]], name: str = "scripted", **sections: object
) -> tuple[Dbs, StageResult]:
    dbs = open_dbs(tmp_path, **sections)
    write_archive(dbs.archive, chats)
    run_id = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    extractor = ScriptedExtractor(answer(specs), name=name)
    stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=extractor)
    return dbs, stage_concepts.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)


def concepts(dbs: Dbs) -> dict[str, Any]:
    return {r["title"]: r for r in dbs.staging.execute("SELECT * FROM concepts")}


def test_a_second_mention_attaches_with_evidence_revision_and_times(tmp_path: Path) -> None:
    """Two segments, one title: one concept, revision 1, four evidence rows, seen from the first to the last."""
    specs = {"a": [hyp("Kitchen renovation")], "b": [hyp("kitchen renovation")]}
    dbs, result = pipeline(tmp_path, [chat("a"), chat("b", days=10)], specs)
    [row] = concepts(dbs).values()
    assert (row["revision_count"], row["evidence_count"], row["state"]) == (1, 4, "active")
    assert row["first_seen"].startswith("2024-03-01") and row["last_seen"].startswith("2024-03-11")
    decisions = [r[0] for r in dbs.staging.execute("SELECT decision FROM concept_inputs ORDER BY rowid")]
    assert decisions == ["create", "attach"] and result.counts["duplicate_titles"] == 0


def test_a_fuzzy_match_attaches_and_keeps_the_other_name_as_an_alias(tmp_path: Path) -> None:
    """ "training for the marathon" resolves to "Marathon training" (same words, same type)."""
    specs = {"a": [hyp("Marathon training", "goal")], "b": [hyp("training for the marathon", "goal")]}
    dbs, _ = pipeline(tmp_path, [chat("a"), chat("b", days=1)], specs)
    [row] = concepts(dbs).values()
    assert json.loads(row["aliases"]) == ["training for the marathon"]
    method = dbs.staging.execute("SELECT method FROM concept_inputs WHERE decision != 'create'").fetchone()[0]
    assert method == "fuzzy"


def test_low_confidence_hypotheses_are_rejected(tmp_path: Path) -> None:
    """Below reject_below: a 'reject' input row and no concept."""
    dbs, result = pipeline(tmp_path, [chat("a")], {"a": [hyp("Vague notion", confidence=0.1)]})
    assert concepts(dbs) == {} and result.counts["rejected"] == 1
    assert dbs.staging.execute("SELECT decision FROM concept_inputs").fetchone()[0] == "reject"


def test_thin_evidence_is_weak_until_more_arrives(tmp_path: Path) -> None:
    """One span: weak; a second segment adds evidence: active, with the transition recorded."""
    specs = {"a": [hyp("Pottery class", spans=1)], "b": [hyp("Pottery class", spans=1)]}
    dbs, _ = pipeline(tmp_path, [chat("a"), chat("b", days=2)], specs)
    assert concepts(dbs)["Pottery class"]["state"] == "active"
    moves = dbs.staging.execute("SELECT from_state, to_state, reason FROM concept_transitions ORDER BY ordinal")
    assert [tuple(r) for r in moves] == [(None, "weak", "created"), ("weak", "active", "evidence")]


def test_an_alias_naming_another_concept_merges_the_two(tmp_path: Path) -> None:
    """ "Home remodel" and "Kitchen renovation" exist; a hypothesis says one is an alias of the other: merge."""
    specs = {
        "a": [hyp("Kitchen renovation")],
        "b": [hyp("Home remodel", spans=1)],
        "c": [hyp("Kitchen renovation", aliases=["Home remodel"])],
    }
    dbs, result = pipeline(tmp_path, [chat("a"), chat("b", 1), chat("c", 2)], specs)
    rows = concepts(dbs)
    survivor, gone = rows["Kitchen renovation"], rows["Home remodel"]
    assert gone["state"] == "merged" and gone["merged_into"] == survivor["concept_id"]
    assert survivor["evidence_count"] == 5 and "Home remodel" in json.loads(survivor["aliases"])
    reason = dbs.staging.execute(
        "SELECT reason, other_id FROM concept_transitions WHERE to_state = 'merged'"
    ).fetchone()
    assert reason["other_id"] == survivor["concept_id"] and "Home remodel" in reason["reason"]
    assert result.counts["merged"] == 1


def test_a_concept_seen_as_two_types_by_a_model_is_split(tmp_path: Path) -> None:
    """Two segments call "Python" an entity, two a project: parent 'split', one child per type."""
    specs = {k: [hyp("Python", "entity" if k in "ab" else "project")] for k in "abcd"}
    dbs, result = pipeline(tmp_path, [chat(k, i) for i, k in enumerate("abcd")], specs, name="llm")
    rows = concepts(dbs)
    assert rows["Python"]["state"] == "split" and result.counts["split"] == 1
    assert (rows["Python (entity)"]["type"], rows["Python (project)"]["type"]) == ("entity", "project")
    assert rows["Python (entity)"]["evidence_count"] == rows["Python (project)"]["evidence_count"] == 4


def test_offline_type_disagreements_do_not_split(tmp_path: Path) -> None:
    """The same disagreement from the offline extractor (cue-based types) keeps one concept."""
    specs = {k: [hyp("Python", "entity" if k in "ab" else "project")] for k in "abcd"}
    dbs, result = pipeline(tmp_path, [chat(k, i) for i, k in enumerate("abcd")], specs, name="offline")
    assert result.counts["split"] == 0 and list(concepts(dbs)) == ["Python"]


def test_relations_point_at_the_stored_concepts(tmp_path: Path) -> None:
    """A relation to a sibling hypothesis is stored between the two concepts' ids."""
    relation = {"target_id": "Save money", "relation": "conflicts_with", "confidence": 0.6}
    specs = {"a": [hyp("Kitchen renovation", relations=[relation]), hyp("Save money", "goal")]}
    dbs, result = pipeline(tmp_path, [chat("a")], specs)
    rows = [tuple(r) for r in dbs.staging.execute("SELECT concept_id, relation, target_id FROM concept_relations")]
    assert rows == [("kitchen-renovation", "conflicts_with", "save-money")] and result.counts["relations_added"] == 1


def test_a_rerun_with_nothing_new_changes_nothing(tmp_path: Path) -> None:
    """Handled hypotheses are skipped: the second run is 'skipped' and the store is unchanged."""
    specs = {"a": [hyp("Kitchen renovation")], "b": [hyp("Kitchen renovation")]}
    dbs, _ = pipeline(tmp_path, [chat("a"), chat("b", 1)], specs)
    before = [tuple(r) for r in dbs.staging.execute("SELECT * FROM concepts")]
    again = stage_concepts.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings)
    assert again.status == "skipped" and again.counts["hypotheses"] == 0
    assert [tuple(r) for r in dbs.staging.execute("SELECT * FROM concepts")] == before


def test_a_killed_run_resumes_to_the_same_store_as_a_clean_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches commit whole: after a crash in the third segment, a re-run ends where a clean run ends."""
    specs = {k: [hyp("Kitchen renovation" if i % 2 else f"Topic {k}", spans=1 + i % 2)] for i, k in enumerate("abcde")}
    chats = [chat(k, i) for i, k in enumerate("abcde")]
    clean, _ = pipeline(tmp_path / "clean", chats, specs, concepts={"batch_size": 1})
    real = concept_loop.ConceptLoop.segment
    calls = {"n": 0}

    def crash_on_third(self: concept_loop.ConceptLoop, *args: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("power cut")
        real(self, *args)

    monkeypatch.setattr(concept_loop.ConceptLoop, "segment", crash_on_third)
    with pytest.raises(StageError, match="power cut"):
        pipeline(tmp_path / "crashed", chats, specs, concepts={"batch_size": 1})
    monkeypatch.setattr(concept_loop.ConceptLoop, "segment", real)
    crashed = open_dbs(tmp_path / "crashed", concepts={"batch_size": 1})
    stage_concepts.run(crashed.archive, crashed.staging, run_id=crashed.run_id(), settings=crashed.settings)
    columns = "concept_id, title, type, state, revision_count, evidence_count, first_seen, last_seen, merged_into"
    query = f"SELECT {columns} FROM concepts ORDER BY concept_id"
    assert [tuple(r) for r in crashed.staging.execute(query)] == [tuple(r) for r in clean.staging.execute(query)]


def test_embedding_similarity_resolves_a_refined_name_and_caches_the_name_vectors(tmp_path: Path) -> None:
    """concepts.similarity=embedding: "learning python programming" attaches to "Learning Python" by meaning
    (character 3-grams keep them apart), and the names' vectors land in staging.db's embedding cache."""
    specs = {"a": [hyp("Learning Python", "goal")], "b": [hyp("learning python programming", "goal")]}
    chats = [chat("a"), chat("b", days=1)]
    letters, _ = pipeline(tmp_path / "letters", chats, specs)
    assert len(concepts(letters)) == 2
    dbs, _ = pipeline(tmp_path / "meaning", chats, specs, concepts={"similarity": "embedding"})
    [row] = concepts(dbs).values()
    assert row["title"] == "Learning Python" and json.loads(row["aliases"]) == ["learning python programming"]
    method = dbs.staging.execute("SELECT method FROM concept_inputs WHERE decision != 'create'").fetchone()[0]
    assert method == "similarity"
    cached = dbs.staging.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (embedder_key(dbs.settings.embed),))
    assert cached.fetchone()[0] >= 2


def test_evidence_counts_kept_incrementally_equal_the_stored_evidence(tmp_path: Path) -> None:
    """Many attaches to one concept: its evidence count and first/last seen equal a count over its evidence rows."""
    days = [7, 0, 3, 12, 5, 9]
    specs = {f"c{d}": [hyp("Sourdough baking", spans=1 + d % 2)] for d in days}
    dbs, _ = pipeline(tmp_path, [chat(f"c{d}", days=d) for d in days], specs)
    row = concepts(dbs)["Sourdough baking"]
    stored = dbs.staging.execute(
        "SELECT COUNT(*), MIN(created_at), MAX(created_at) FROM concept_evidence WHERE concept_id = ?",
        (row["concept_id"],),
    ).fetchone()
    assert (row["evidence_count"], row["first_seen"], row["last_seen"]) == tuple(stored)
    assert row["evidence_count"] == sum(1 + d % 2 for d in days) and row["revision_count"] == len(days) - 1


def test_a_product_with_and_without_its_vendor_is_one_concept(tmp_path: Path) -> None:
    """ "Apache Spark" and "Spark" (either order) are one concept titled as the first one came, the other name an
    alias; "Google Drive" and "Drive" stay two (the rest is a common word, not a name)."""
    specs = {
        "a": [hyp("Apache Spark", "entity"), hyp("Google Drive", "entity")],
        "b": [hyp("Spark", "entity"), hyp("Drive", "entity")],
        "c": [hyp("Glue", "entity")],
        "d": [hyp("AWS Glue", "entity")],
    }
    dbs, _ = pipeline(tmp_path, [chat("a"), chat("b", 1), chat("c", 2), chat("d", 3)], specs)
    rows = concepts(dbs)
    assert set(rows) == {"Apache Spark", "Google Drive", "Drive", "Glue"}
    assert "Spark" in json.loads(rows["Apache Spark"]["aliases"]) and rows["Apache Spark"]["evidence_count"] == 4
    assert "AWS Glue" in json.loads(rows["Glue"]["aliases"]) and rows["Glue"]["evidence_count"] == 4
    assert (
        concept_loop.vendor_variant("Microsoft Excel") == "Excel" and concept_loop.vendor_variant("Apple Music") is None
    )
