"""Building the Cue-Tag-Content graph from plain inputs: a pure function, the cues stage's step 3.

    messages + concept evidence + topic links  ->  MemoryGraph (content, cues, tags, weighted edges, merges)

- Content: every visible active message. Its key text (what recall matches) is the message, prefixed with
  who said it, and expanded with the names of the concepts extracted from it (appending extracted facts to
  the key, not as separate documents, is what raised recall in the LongMemEval paper).
- Cues (anchors): live concepts, linked to the messages their evidence cites (weight: the evidence's
  confidence), and discriminative keyphrases (TF-IDF, weight relative to the message's best keyphrase).
- Tags (groupings): conversation, day, month, role, source, topic (through the message's segment), and the
  concept type of a concept cue. Cues link to the conversations they occur in (weight: the cue's share there).
- Hub control: a cue linked to more than `hub_share` of all content is a hub (for example "code"): its IDF
  weight shrinks, it keeps its content edges but loses its tag edges (it would spread everywhere). Reported.
- Consolidation: messages of one conversation, one day and one role whose key terms have Jaccard similarity
  of at least `consolidate_threshold` and the same concept cues become one merged node pointing at them.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contracts.settings import MemorySettings
from memory.text import estimate_tokens, keyphrases, terms
from staging.memory import ContentRow, CueRow, EdgeRow, MemoryGraph, TagRow

PAIRWISE_MAX = 200  # consolidation compares pairs only within (conversation, day, role) groups this small


@dataclass(frozen=True, slots=True)
class MessageInput:
    uuid: str
    conversation_id: str
    title: str | None
    seq: int
    role: str
    author: str | None
    created_at: str | None
    text: str
    source: str


@dataclass(frozen=True, slots=True)
class EvidenceInput:
    concept_id: str
    title: str
    concept_type: str
    message_id: str
    confidence: float


@dataclass(frozen=True, slots=True)
class TopicInput:
    message_id: str
    topic_uid: str
    label: str
    weight: float


@dataclass
class BuildReport:
    hubs: list[dict[str, Any]] = field(default_factory=list)
    merged_groups: int = 0
    merged_messages: int = 0


def speaker(role: str, author: str | None) -> str:
    """Who said it, as the key text names them: a person's name when the export has one, else the role."""
    if author and role in ("user", "other"):
        return author
    return role


def key_base(message: MessageInput) -> str:
    return f"{speaker(message.role, message.author)}: {message.text}"


def dense_key(row: ContentRow, text: str) -> str:
    """What the key embedder reads for a content node: who said it and what (no cue names: a sentence model
    reads sentences)."""
    return f"{speaker(row.role, row.author)}: {text}"


def build_graph(
    messages: Sequence[MessageInput],
    evidence: Sequence[EvidenceInput],
    topics: Sequence[TopicInput],
    settings: MemorySettings,
) -> tuple[MemoryGraph, BuildReport]:
    """The whole graph, deterministic for the same inputs (everything sorted by id)."""
    report = BuildReport()
    messages = sorted(messages, key=lambda m: (m.conversation_id, m.seq, m.uuid))
    known = {m.uuid for m in messages}
    n = max(len(messages), 1)
    edges: list[EdgeRow] = []
    content_cues: dict[str, dict[str, float]] = defaultdict(dict)
    cue_rows: dict[str, tuple[str, str, str | None]] = {}  # cue_id -> name, kind, concept type
    for e in sorted(evidence, key=lambda e: (e.concept_id, e.message_id)):
        if e.message_id not in known:
            continue
        cue_id = f"concept:{e.concept_id}"
        cue_rows[cue_id] = (e.title, "concept", e.concept_type)
        weight = max(content_cues[e.message_id].get(cue_id, 0.0), min(max(e.confidence, 0.0), 1.0))
        content_cues[e.message_id][cue_id] = weight
    base_terms = [terms(m.text) for m in messages]
    hub_floor = max(settings.hub_min_content, settings.hub_share * n)  # more links than this: a hub
    phrases = keyphrases(base_terms, settings.keyphrases_per_content, settings.keyphrase_min_df, int(hub_floor))
    for message, found in zip(messages, phrases, strict=True):
        for rank, term in enumerate(found):
            cue_id = f"kp:{term}"
            cue_rows.setdefault(cue_id, (term, "keyphrase", None))
            content_cues[message.uuid].setdefault(cue_id, round(1.0 / math.sqrt(rank + 1), 6))
    df: Counter[str] = Counter(c for cues in content_cues.values() for c in cues)
    hubs = {c for c, count in df.items() if count > hub_floor}
    cues = []
    for cue_id in sorted(cue_rows):
        name, kind, ctype = cue_rows[cue_id]
        idf = round(math.log(1 + n / df[cue_id]), 6)
        cues.append(CueRow(cue_id, name, kind, ctype, df[cue_id], idf, cue_id in hubs))
    report.hubs = [
        {"cue": cue_rows[c][0], "share": round(df[c] / n, 4), "action": "idf down-weighted, no tag edges"}
        for c in sorted(hubs, key=lambda c: (-df[c], c))
    ]
    content: list[ContentRow] = []
    by_conversation: dict[str, Counter[str]] = defaultdict(Counter)
    tag_members: Counter[str] = Counter()
    tag_labels: dict[str, tuple[str, str]] = {}
    for message in messages:
        cues_here = content_cues.get(message.uuid, {})
        names = [cue_rows[c][0] for c in sorted(cues_here) if cue_rows[c][1] == "concept" and c not in hubs]
        key = key_base(message)
        if settings.expand_keys and names:
            key += "\n" + "; ".join(names)
        day = message.created_at[:10] if message.created_at else None
        content.append(
            ContentRow(
                message.uuid,
                "message",
                message.conversation_id,
                message.seq,
                message.role,
                message.author,
                message.created_at,
                day,
                message.source,
                key,
                estimate_tokens(message.text),
            )
        )
        for cue_id, weight in sorted(cues_here.items()):
            edges.append(EdgeRow(cue_id, message.uuid, "cue-content", weight))
            by_conversation[cue_id][message.conversation_id] += 1
        tags = [
            (f"conv:{message.conversation_id}", "conversation", message.title or message.conversation_id),
            (f"role:{message.role}", "role", message.role),
            (f"source:{message.source}", "source", message.source),
        ]
        if day:
            tags += [(f"day:{day}", "day", day), (f"month:{day[:7]}", "month", day[:7])]
        for tag_id, kind, label in tags:
            tag_labels.setdefault(tag_id, (kind, label))
            tag_members[tag_id] += 1
            edges.append(EdgeRow(tag_id, message.uuid, "tag-content", 1.0))
    for t in sorted(topics, key=lambda t: (t.message_id, t.topic_uid)):
        if t.message_id in known:
            tag_id = f"topic:{t.topic_uid}"
            tag_labels.setdefault(tag_id, ("topic", t.label))
            tag_members[tag_id] += 1
            edges.append(EdgeRow(tag_id, t.message_id, "tag-content", round(min(max(t.weight, 0.0), 1.0), 6)))
    for cue_id in sorted(by_conversation):
        if cue_id in hubs:
            continue
        for conversation_id, count in sorted(by_conversation[cue_id].items()):
            edges.append(EdgeRow(cue_id, f"conv:{conversation_id}", "cue-tag", round(count / df[cue_id], 6)))
        ctype = cue_rows[cue_id][2]
        if ctype:
            tag_id = f"ctype:{ctype}"
            tag_labels.setdefault(tag_id, ("concept_type", ctype))
            tag_members[tag_id] += 1
            edges.append(EdgeRow(cue_id, tag_id, "cue-tag", 1.0))
    tags_out = [TagRow(t, tag_labels[t][0], tag_labels[t][1], tag_members[t]) for t in sorted(tag_labels)]
    merges = consolidate(messages, base_terms, content_cues, hubs, content, settings, report)
    edges = _dedupe(edges)
    return MemoryGraph(content, cues, tags_out, edges, merges), report


def consolidate(
    messages: Sequence[MessageInput],
    base_terms: Sequence[list[str]],
    content_cues: dict[str, dict[str, float]],
    hubs: set[str],
    content: list[ContentRow],
    settings: MemorySettings,
    report: BuildReport,
) -> list[tuple[str, str]]:
    """Merge near-identical messages (one conversation, day and role, same concept cues) under one new node.

    The originals stay (their `merged_into` names the merged node); the merged node carries the first one's key
    text and seq. Returns (merged id, original id) pairs.
    """
    groups: dict[tuple[str, str | None, str], list[int]] = defaultdict(list)
    for index, row in enumerate(content):
        groups[(row.conversation_id, row.day, row.role)].append(index)
    merges: list[tuple[str, str]] = []
    new_rows: list[ContentRow] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        sets = {i: frozenset(base_terms[i]) for i in members}
        concepts = {
            i: frozenset(
                c for c in content_cues.get(messages[i].uuid, {}) if c.startswith("concept:") and c not in hubs
            )
            for i in members
        }
        parent = {i: i for i in members}

        if len(members) <= PAIRWISE_MAX:
            pairs = [(a, b) for x, a in enumerate(members) for b in members[x + 1 :]]
        else:  # too many pairs: only identical term sets
            first: dict[tuple[frozenset[str], frozenset[str]], int] = {}
            pairs = []
            for i in members:
                pairs.append((first.setdefault((sets[i], concepts[i]), i), i))
        for a, b in pairs:
            if a == b or concepts[a] != concepts[b] or not sets[a] or not sets[b]:
                continue
            jaccard = len(sets[a] & sets[b]) / len(sets[a] | sets[b])
            if jaccard >= settings.consolidate_threshold:
                parent[_find(parent, b)] = _find(parent, a)
        clusters: dict[int, list[int]] = defaultdict(list)
        for i in members:
            clusters[_find(parent, i)].append(i)
        for group in clusters.values():
            if len(group) < 2:
                continue
            group.sort(key=lambda i: (content[i].seq, content[i].content_id))
            ids = [content[i].content_id for i in group]
            merged_id = "merged:" + hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]
            head = content[group[0]]
            new_rows.append(
                ContentRow(
                    merged_id,
                    "merged",
                    head.conversation_id,
                    head.seq,
                    head.role,
                    head.author,
                    head.created_at,
                    head.day,
                    head.source,
                    head.key_text,
                    head.tokens,
                )
            )
            for i in group:
                content[i].merged_into = merged_id
                merges.append((merged_id, content[i].content_id))
            report.merged_groups += 1
            report.merged_messages += len(group)
    content.extend(sorted(new_rows, key=lambda r: r.content_id))
    return sorted(merges)


def _find(parent: dict[int, int], i: int) -> int:
    """Union-find root with path halving."""
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _dedupe(edges: list[EdgeRow]) -> list[EdgeRow]:
    """One edge per (src, dst): the strongest."""
    best: dict[tuple[str, str], EdgeRow] = {}
    for edge in edges:
        key = (edge.src, edge.dst)
        if key not in best or edge.weight > best[key].weight:
            best[key] = edge
    return [best[k] for k in sorted(best)]
