"""memory/graph.py: the Cue-Tag-Content graph from plain inputs (hubs, consolidation, key expansion, tags)."""

from __future__ import annotations

import numpy as np
from memory_support import msg

from contracts.settings import MemorySettings
from memory.graph import EvidenceInput, GraphBuilder, TopicInput, build_graph
from memory.text import BM25, terms
from staging.memory import EdgeRow

TEXTS = [
    "I bought a road bike for commuting to work",
    "The bike needs new brake pads before winter",
    "My sister visits Lisbon in May for the tram rides",
    "Baking sourdough bread needs a strong starter",
    "The sourdough starter died while I was away",
    "Planning a garden with tomatoes and basil",
    "Tomatoes need six hours of sun every day",
    "Reading a novel about the history of Lisbon",
    "A quiet evening with tea and a novel",
    "Swimming lessons start next week at the pool",
]


def _messages() -> list:
    return [msg(f"c{i % 3}", i, text, day=i) for i, text in enumerate(TEXTS)]


def test_a_cue_linked_to_most_content_is_a_hub_with_lower_idf_and_no_tag_edges() -> None:
    """Hub control: a concept cited by 8 of 10 messages is flagged, down-weighted and stops spreading to tags."""
    messages = _messages()
    evidence = [EvidenceInput("hub", "thinking", "topic", m.uuid, 0.9) for m in messages[:8]]
    evidence += [EvidenceInput("bike", "road bike", "entity", messages[0].uuid, 0.8)]
    graph, report = build_graph(messages, evidence, [], MemorySettings(hub_share=0.3, hub_min_content=2))
    cues = {c.cue_id: c for c in graph.cues}
    assert cues["concept:hub"].hub and not cues["concept:bike"].hub
    assert cues["concept:hub"].idf < cues["concept:bike"].idf
    assert not [e for e in graph.edges if e.src == "concept:hub" and e.kind == "cue-tag"]
    assert [e for e in graph.edges if e.src == "concept:bike" and e.kind == "cue-tag"]
    assert [h["cue"] for h in report.hubs] == ["thinking"] and report.hubs[0]["share"] == 0.8


def test_near_identical_messages_are_merged_and_the_originals_kept() -> None:
    """Consolidation: two copies in one conversation, day and role become one node that points at both."""
    messages = [
        msg("c", 0, "remind me to renew the passport before June", day=0),
        msg("c", 1, "Remind me to renew the passport before June!", day=0, minute=5),
        msg("c", 2, "what is a good sourdough hydration", day=0, minute=9),
        msg("d", 0, "remind me to renew the passport before June", day=0),
    ]
    graph, report = build_graph(messages, [], [], MemorySettings())
    merged = [c for c in graph.content if c.kind == "merged"]
    assert len(merged) == 1 and report.merged_messages == 2
    originals = sorted(o for m, o in graph.merges if m == merged[0].content_id)
    assert originals == ["c-0", "c-1"]
    by_id = {c.content_id: c for c in graph.content}
    assert by_id["c-0"].merged_into == by_id["c-1"].merged_into == merged[0].content_id
    assert by_id["d-0"].merged_into is None and by_id["c-2"].merged_into is None  # other conversation, other text


def test_content_keys_carry_their_concept_names_only_when_expansion_is_on() -> None:
    """Key expansion: the concept's title is appended to the key text of the message it was extracted from."""
    messages = _messages()
    evidence = [EvidenceInput("k1", "Cycling commute", "activity", messages[0].uuid, 0.7)]
    on, _ = build_graph(messages, evidence, [], MemorySettings())
    off, _ = build_graph(messages, evidence, [], MemorySettings(expand_keys=False))
    key = {c.content_id: c.key_text for c in on.content}[messages[0].uuid]
    assert key.endswith("Cycling commute") and key.startswith("user: I bought")
    assert "Cycling commute" not in {c.content_id: c.key_text for c in off.content}[messages[0].uuid]


def test_every_message_has_conversation_day_month_role_and_source_tags_and_topics_link_too() -> None:
    """Tags: each content node is linked to its groupings; a topic link becomes a weighted topic tag edge."""
    messages = _messages()
    graph, _ = build_graph(messages, [], [TopicInput(messages[3].uuid, "t1", "baking", 0.7)], MemorySettings())
    tags = {e.src for e in graph.edges if e.dst == messages[3].uuid and e.kind == "tag-content"}
    assert tags == {"conv:c0", "day:2024-01-04", "month:2024-01", "role:user", "source:jsonl", "topic:t1"}
    topic_edge = [e for e in graph.edges if e.src == "topic:t1"]
    assert [(e.dst, e.weight) for e in topic_edge] == [(messages[3].uuid, 0.7)]
    assert {t.kind for t in graph.tags} == {"conversation", "day", "month", "role", "source", "topic"}


def test_the_same_inputs_build_the_same_graph() -> None:
    """Deterministic: input order does not matter."""
    messages = _messages()
    first, _ = build_graph(messages, [], [], MemorySettings())
    second, _ = build_graph(list(reversed(messages)), [], [], MemorySettings())
    assert first == second


def test_graph_builder_batches_in_any_order_give_the_one_batch_graph() -> None:
    """GraphBuilder: conversations built one batch each, in reverse order, give build_graph's rows."""
    messages = _messages()
    evidence = [EvidenceInput("k1", "bike", "topic", messages[i].uuid, 0.9) for i in (0, 1, 2)]
    topics = [TopicInput(messages[3].uuid, "t1", "baking", 0.7)]
    settings = MemorySettings(hub_share=0.25, hub_min_content=2)
    whole, report = build_graph(messages, evidence, topics, settings)
    builder = GraphBuilder(evidence, settings)
    for m in messages:
        builder.count(m)
    content, edges, merges, pairs = [], [], [], []
    for conversation in ("c2", "c1", "c0"):
        batch = [m for m in messages if m.conversation_id == conversation]
        part = builder.batch(batch, [t for t in topics if t.message_id in {m.uuid for m in batch}])
        content += part.content
        edges += part.edges
        merges += part.merges
        pairs += part.cue_conversations
    cues, tags, batched_report = builder.finish()
    edges += builder.cue_tag_edges(sorted(pairs))
    assert sorted(content, key=lambda c: c.content_id) == sorted(whole.content, key=lambda c: c.content_id)
    assert [EdgeRow(*e) for e in sorted(edges)] == whole.edges
    assert (cues, tags, sorted(merges)) == (whole.cues, whole.tags, whole.merges)
    assert batched_report.hubs == report.hubs and report.hubs  # the hub is found from the global counts


def test_bm25_from_a_generator_equals_bm25_from_a_list() -> None:
    """BM25.build reads its documents once: a generator gives the list's weights, and the term's document wins."""
    documents = [terms(t) for t in TEXTS]
    from_list, from_generator = BM25.build(documents), BM25.build(d for d in documents)
    assert from_list.vocabulary == from_generator.vocabulary
    for a, b in zip(from_list.postings.toarray(), from_generator.postings.toarray(), strict=True):
        assert np.array_equal(a, b)
    scores = from_generator.score(terms("sourdough starter"))
    assert set(scores.argsort()[-2:]) == {3, 4} and scores[0] == 0.0
