"""Consolidation and edge dedupe for the Cue-Tag-Content graph (see memory/graph.py): both work within one batch
of whole conversations, so the graph can be built batch by batch."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol

from contracts.settings import MemorySettings
from staging.memory import ContentRow, EdgeTuple

PAIRWISE_MAX = 200  # consolidation compares pairs only within (conversation, day, role) groups this small


class MergeCounts(Protocol):
    merged_groups: int
    merged_messages: int


class HasUuid(Protocol):
    @property
    def uuid(self) -> str: ...


def consolidate(
    messages: Sequence[HasUuid],
    base_terms: Sequence[list[str]],
    content_cues: dict[str, dict[str, float]],
    hubs: set[str],
    content: list[ContentRow],
    settings: MemorySettings,
    report: MergeCounts,
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


def dedupe(edges: list[EdgeTuple]) -> list[EdgeTuple]:
    """One edge per (src, dst), the strongest, in (src, dst) order. Sorted as tuples, an edge's duplicates sit
    together with the strongest last (a source's prefix fixes its kind, so only the weight differs)."""
    edges.sort()
    out: list[EdgeTuple] = []
    for edge in edges:
        if out and out[-1][0] == edge[0] and out[-1][1] == edge[1]:
            out[-1] = edge
        else:
            out.append(edge)
    return out
