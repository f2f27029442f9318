"""The semantic mapper (extract.mapper.map_raw_hypotheses): raw model JSON in, contract objects and decisions out."""

from __future__ import annotations

import json
import pickle
from typing import Any

from concept_support import segment_input

from contracts.concepts import ConceptHypothesis
from extract.mapper import KnownNames, MapperDecision, keyed_names, map_raw_hypotheses

SEGMENT = segment_input(
    "seg-1",
    [
        ("user", "We are   renovating the KITCHEN this spring; the budget is tight."),
        ("assistant", "A kitchen renovation on a tight budget: start with cabinets and lighting."),
        ("user", "I also want to run a marathon in October."),
    ],
)


def hypothesis(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "concept_id": "kitchen-renovation",
        "title": "Kitchen renovation",
        "type": "project",
        "description": "Renovating the kitchen this spring.",
        "state": "active",
        "confidence": 0.8,
        "aliases": [],
        "evidence_spans": [
            {"source_id": "seg-1", "message_id": "m0", "text": "renovating the kitchen this spring", "confidence": 0.9}
        ],
        "relations": [],
        "revision_count": 0,
        "first_seen": None,
        "last_seen": None,
    }
    return base | overrides


def rules(decisions: list[MapperDecision]) -> list[str]:
    return [d.rule for d in decisions]


def test_near_miss_types_map_onto_the_ontology_with_a_decision_each() -> None:
    """ "Project", "projects" and "initiative" all become project; each change is recorded before/after."""
    raw = {
        "hypotheses": [
            hypothesis(type=t, concept_id=f"k{i}", title=f"K {i}")
            for i, t in enumerate(("Project", "projects", "initiative"))
        ]
    }
    found, decisions = map_raw_hypotheses(raw, SEGMENT)
    assert [h.type for h in found] == ["project"] * 3
    mapped = [d for d in decisions if d.rule == "type_synonym"]
    assert [(json.loads(d.before or ""), json.loads(d.after or "")) for d in mapped] == [
        ("Project", "project"),
        ("projects", "project"),
        ("initiative", "project"),
    ]


def test_an_unknown_type_rejects_the_hypothesis() -> None:
    """A type with no synonym is not guessed: the hypothesis is rejected."""
    found, decisions = map_raw_hypotheses({"hypotheses": [hypothesis(type="vibe")]}, SEGMENT)
    assert found == [] and rules(decisions) == ["type_unknown"]


def test_evidence_matches_whitespace_and_case_insensitively() -> None:
    """ "renovating the kitchen" matches "renovating the KITCHEN" across collapsed whitespace."""
    span = {"source_id": "seg-1", "message_id": "m0", "text": "We are renovating the kitchen", "confidence": 0.5}
    [found], decisions = map_raw_hypotheses({"hypotheses": [hypothesis(evidence_spans=[span])]}, SEGMENT)
    assert found.evidence_spans[0].text == "We are renovating the kitchen" and decisions == []


def test_unverifiable_spans_are_dropped_and_the_rest_kept() -> None:
    """A message id outside the segment and a text the message does not contain are dropped, with reasons."""
    spans = [
        {"source_id": "seg-1", "message_id": "m9", "text": "renovating the kitchen", "confidence": 0.5},
        {"source_id": "seg-1", "message_id": "m2", "text": "renovating the kitchen", "confidence": 0.5},
        {"source_id": "seg-1", "message_id": "m1", "text": "kitchen renovation on a tight budget", "confidence": 0.5},
    ]
    [found], decisions = map_raw_hypotheses({"hypotheses": [hypothesis(evidence_spans=spans)]}, SEGMENT)
    assert [s.message_id for s in found.evidence_spans] == ["m1"]
    assert rules(decisions) == ["evidence_message_not_in_segment", "evidence_text_not_in_message"]


def test_a_hypothesis_left_without_evidence_is_rejected() -> None:
    """No verifiable span, no concept: the cited message is never re-pointed to one that fits."""
    span = {"source_id": "seg-1", "message_id": "m2", "text": "renovating the kitchen", "confidence": 0.5}
    found, decisions = map_raw_hypotheses({"hypotheses": [hypothesis(evidence_spans=[span])]}, SEGMENT)
    assert found == [] and rules(decisions) == ["evidence_text_not_in_message", "no_evidence"]


def test_confidences_are_clamped_and_parsed() -> None:
    """1.7 -> 1.0, -0.2 -> 0.0, "0.4" -> 0.4, and a missing span confidence takes the hypothesis's."""
    span = {"source_id": "seg-1", "message_id": "m0", "text": "renovating the kitchen", "confidence": -0.2}
    bare = {"source_id": "seg-1", "message_id": "m1", "text": "tight budget"}
    [a], decisions = map_raw_hypotheses(
        {"hypotheses": [hypothesis(confidence=1.7, evidence_spans=[span, bare])]}, SEGMENT
    )
    assert a.confidence == 1.0 and [s.confidence for s in a.evidence_spans] == [0.0, 1.0]
    assert rules(decisions).count("confidence_clamped") == 2
    [b], _ = map_raw_hypotheses({"hypotheses": [hypothesis(confidence="0.4")]}, SEGMENT)
    assert b.confidence == 0.4


def test_titles_aliases_and_ids_are_normalised() -> None:
    """Quotes and spaces trimmed, the id slugged, duplicate and title-equal aliases dropped."""
    raw = hypothesis(
        title='  "Kitchen   renovation" ',
        concept_id="Kitchen Renovation!",
        aliases=["kitchen renovations", " reno ", "Reno"],
    )
    [found], decisions = map_raw_hypotheses([raw], SEGMENT)
    assert (found.title, found.concept_id, found.aliases) == ("Kitchen renovation", "kitchen-renovation", ["reno"])
    assert {
        "response_unwrapped",
        "title_normalised",
        "concept_id_normalised",
        "alias_dropped",
        "alias_normalised",
    } <= set(rules(decisions))


def test_chatmem_owned_fields_are_reset_and_times_come_from_the_evidence() -> None:
    """state, revision_count, first_seen and last_seen are chatmem's: set from the segment, not the model."""
    spans = [
        {"source_id": "x", "message_id": "m2", "text": "run a marathon", "confidence": 0.9},
        {"source_id": "seg-1", "message_id": "m0", "text": "this spring", "confidence": 0.9},
    ]
    raw = hypothesis(state="merged", revision_count=7, first_seen="1999-01-01T00:00:00Z", evidence_spans=spans)
    [found], decisions = map_raw_hypotheses({"hypotheses": [raw]}, SEGMENT)
    assert (found.state, found.revision_count) == ("active", 0)
    assert (found.first_seen, found.last_seen) == (SEGMENT.messages[0].created_at, SEGMENT.messages[2].created_at)
    assert {"state_reset", "revision_count_reset", "time_from_evidence", "evidence_source_id"} <= set(rules(decisions))
    assert all(s.source_id == "seg-1" for s in found.evidence_spans)


def test_relation_targets_resolve_to_known_or_sibling_concepts_or_are_dropped() -> None:
    """A known title resolves to its id, a sibling to its id, a synonym relation maps, an unknown target drops."""
    marathon_span = [{"source_id": "seg-1", "message_id": "m2", "text": "run a marathon", "confidence": 0.7}]
    relations = [
        {"target_id": "Home budget", "relation": "Conflicts With", "confidence": 0.6},
        {"target_id": "marathon", "relation": "supports", "confidence": 0.6},
        {"target_id": "Mars colony", "relation": "causes", "confidence": 0.6},
        {"target_id": "marathon", "relation": "is adjacent to", "confidence": 0.6},
    ]
    raw = {
        "hypotheses": [
            hypothesis(relations=relations),
            hypothesis(concept_id="marathon", title="Marathon", type="goal", evidence_spans=marathon_span),
        ]
    }
    found, decisions = map_raw_hypotheses(raw, SEGMENT, {"Home budget": "home-budget-2"})
    assert [(r.target_id, r.relation) for r in found[0].relations] == [
        ("home-budget-2", "conflicts_with"),
        ("marathon", "supports"),
    ]
    assert {"relation_target_unknown", "relation_type_unknown", "relation_synonym"} <= set(rules(decisions))


def test_known_names_fold_once_and_map_like_a_plain_dict() -> None:
    """KnownNames resolves relation targets exactly as the plain dict does, folds its names once, and pickles."""
    relations = [
        {"target_id": "Home budgets", "relation": "conflicts_with", "confidence": 0.6},
        {"target_id": "the-garden", "relation": "supports", "confidence": 0.6},
    ]
    raw = {"hypotheses": [hypothesis(relations=relations)]}
    names = {"Home budget": "home-budget-2", "home budget": "home-budget-3", "the-garden": "garden"}
    known = KnownNames(names)
    assert map_raw_hypotheses(raw, SEGMENT, known) == map_raw_hypotheses(raw, SEGMENT, names)
    found, _ = map_raw_hypotheses(raw, SEGMENT, known)
    assert [r.target_id for r in found[0].relations] == ["home-budget-3", "garden"]  # a later name wins, as before
    assert keyed_names(known) is keyed_names(known) == keyed_names(names)
    shipped = pickle.loads(pickle.dumps(known))
    assert isinstance(shipped, KnownNames) and dict(shipped) == names and shipped.keyed() == keyed_names(names)


def test_response_shapes_json_text_and_garbage() -> None:
    """A JSON string is parsed; something that is not an answer rejects everything with one decision."""
    [found], _ = map_raw_hypotheses(json.dumps({"hypotheses": [hypothesis()]}), SEGMENT)
    assert isinstance(found, ConceptHypothesis)
    for garbage in ("not json {", {"concepts": []}, 42):
        found_none, decisions = map_raw_hypotheses(garbage, SEGMENT)
        assert found_none == [] and len(decisions) == 1 and decisions[0].hypothesis == -1


def test_two_hypotheses_with_one_id_become_one_with_both_evidence() -> None:
    """The same concept twice in one answer: kept once, evidence and names combined."""
    other = [{"source_id": "seg-1", "message_id": "m1", "text": "kitchen renovation", "confidence": 0.5}]
    raw = [hypothesis(), hypothesis(title="Kitchen Renovation", evidence_spans=other, confidence=0.9)]
    [found], decisions = map_raw_hypotheses(raw, SEGMENT)
    assert [s.message_id for s in found.evidence_spans] == ["m0", "m1"] and found.confidence == 0.9
    assert "duplicate_hypothesis" in rules(decisions)


def test_unknown_fields_are_dropped_and_missing_ones_defaulted_with_decisions() -> None:
    """Extra keys do not break the contract; a missing description or confidence is defaulted, and said so."""
    raw = hypothesis(mood="happy")
    del raw["description"], raw["confidence"], raw["aliases"]
    [found], decisions = map_raw_hypotheses([raw], SEGMENT)
    assert (found.description, found.confidence, found.aliases) == ("", 0.5, [])
    assert {"unknown_field", "description_defaulted", "confidence_defaulted"} <= set(rules(decisions))
