"""Topics joined after the fit when their conversations' titles say the same subject. Pure apart from `title_vectors`.

Why: one flat HDBSCAN cut cannot be coarse in one region and fine in another. On the labelled build the person who
grouped the demo conversations files 13 trips under one "travel planning" folder, where the topics split Paris, Japan,
and hiking: in the space the topics are found in (the full MiniLM over a segment's title and opening) the destination
sets a trip apart, and those topics sit farther apart than Spark topics people keep apart, so no merge of topic centres
or keywords tells them (benchmarks/RESULTS.md, "Session 34"). A conversation's title read alone says its subject
("Trip to Paris", "Japan itinerary"): topics whose titles are alike are joined, closest first.

- `title_vectors`: each point's conversation title read alone by the full model (cluster.encoder), through the
  embedding cache (each distinct title once, never again); placeholder titles ("New chat", none) count as untitled;
  the stage reads the titles of the anchors' conversations only (the segments the topics were found on, at most
  cluster.encode_max), so the full model's reads stay bounded as the anchors' are: at 1M messages every title
  would be ~25k reads on the generated archive, ~71k on one whose titles are all distinct, ~8 CPU-ms each
  (benchmarks/RESULTS.md, "Session 35"); a point of another conversation counts as untitled;
- `merge`: a topic's title centre is the mean of its titled points' title vectors; while the closest two topics are
  within cosine distance `distance`, and the joined topic would be the dominant topic of at most a share `cap` of the
  conversations, they are joined (the lower number kept). The cap keeps a subject that fills much of an archive (one
  person's Spark work: every title says "Spark") from becoming one topic; a topic with no titled point is never joined.

Measured (seeds 42/7/11, distance 0.4, cap 0.08; AMI over conversations with a topic): the two blind groupings as one
set 0.579 -> 0.594, dev 0.500 -> 0.506, held-out 0.582 -> 0.633; the spark grouping alone 0.593 -> 0.575.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
from scipy import sparse

from cluster import topic_space
from contracts.settings import Settings
from staging import segments as segment_store

Labels = np.ndarray[Any, np.dtype[np.int64]]
Flags = np.ndarray[Any, np.dtype[np.bool_]]


def title_vectors(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    run_id: str,
    conversations: list[str],
    read: Collection[str] | None = None,
) -> tuple[np.ndarray[Any, Any], Flags]:
    """Per point (`conversations`: each point's conversation), its conversation title's unit vector by the full
    model and whether the conversation has a title (an untitled point's vector is zeros). `read`: the conversations
    whose titles are read (None: every one); a point of any other counts as untitled."""
    wanted_conversations = set(conversations) if read is None else set(conversations) & set(read)
    titles = segment_store.conversation_titles(archive, wanted_conversations)
    wanted = sorted({t.strip() for t in titles.values() if t.strip().lower() not in topic_space.UNTITLED})
    found: dict[str, np.ndarray[Any, Any]] = {}
    if wanted:  # the full model is loaded only when there is a title to read
        encoder = topic_space.encoder_for(settings)
        matrix = topic_space.read(staging, settings, run_id, wanted, encoder, "cluster: conversation titles")
        found = dict(zip(wanted, matrix, strict=True))
    dim = next(iter(found.values())).shape[0] if found else 1
    zero = np.zeros(dim, dtype=np.float32)
    per_point = [titles.get(c, "").strip() for c in conversations]
    titled = np.array([t in found for t in per_point], dtype=bool)
    return np.stack([found.get(t, zero) for t in per_point]) if per_point else np.zeros((0, dim)), titled


def dominant_counts(labels: Labels, conversation: np.ndarray[Any, Any], topics: int) -> np.ndarray[Any, Any]:
    """How many conversations each topic (0..topics-1) is the dominant topic of (ties: the lower topic)."""
    dominant = dominant_topics(labels, conversation, int(conversation.max()) + 1 if len(conversation) else 0, topics)
    return np.bincount(dominant[dominant >= 0], minlength=topics)


def dominant_topics(labels: Labels, conversation: np.ndarray[Any, Any], conversations: int, topics: int) -> Labels:
    """Each conversation's (0..conversations-1) dominant topic: the one most of its points are in, the lower on a
    tie; -1 for a conversation with no point in a topic."""
    inside = labels >= 0
    dominant = np.full(conversations, -1, dtype=np.int64)
    if not inside.any():
        return dominant
    counts = sparse.coo_matrix(
        (np.ones(int(inside.sum()), dtype=np.int64), (conversation[inside], labels[inside])),
        shape=(conversations, topics),
    ).tocsr()
    filed = np.asarray(counts.sum(axis=1)).ravel() > 0
    dominant[filed] = np.asarray(counts.argmax(axis=1)).ravel()[filed]
    return dominant


def _title_sums(
    labels: Labels, title_vectors: np.ndarray[Any, Any], titled: Flags, topics: int
) -> np.ndarray[Any, Any]:
    """Each topic's sum (float64) of its titled points' vectors, added in point order: the sums np.add.at gave, bit
    for bit, ~30x faster (3.3 CPU-s at 1M messages) and without a float64 copy of every point's vector."""
    points = np.flatnonzero(titled & (labels >= 0))
    order = points[np.argsort(labels[points], kind="stable")]
    bounds = np.searchsorted(labels[order], np.arange(topics + 1))
    sums = np.zeros((topics, title_vectors.shape[1]), dtype=np.float64)
    for topic in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist():
        sums[topic] = np.add.reduce(title_vectors[order[bounds[topic] : bounds[topic + 1]]], axis=0, dtype=np.float64)
    return sums


class _Dominance:
    """Each conversation's dominant topic and each topic's count of them, kept up to date as topics are joined:
    a join changes the points of the conversations that had a point in the topic joined away, and only theirs."""

    def __init__(self, labels: Labels, conversation: np.ndarray[Any, Any], conversations: int, topics: int) -> None:
        self.conversation, self.topics = conversation, topics
        self.order = np.argsort(conversation, kind="stable")  # points by conversation
        self.starts = np.searchsorted(conversation[self.order], np.arange(conversations + 1))
        self.dominant = dominant_topics(labels, conversation, conversations, topics)
        self.counts = np.bincount(self.dominant[self.dominant >= 0], minlength=topics)

    def update(self, labels: Labels, touched: np.ndarray[Any, Any]) -> None:
        """`touched`: the conversations whose points' topics changed (distinct); `labels` as they are now."""
        before = self.dominant[touched]
        self.counts -= np.bincount(before[before >= 0], minlength=self.topics)
        lengths = self.starts[touched + 1] - self.starts[touched]
        first = np.repeat(self.starts[touched] - np.cumsum(lengths) + lengths, lengths)
        points = self.order[first + np.arange(int(lengths.sum()))]
        local = np.repeat(np.arange(len(touched)), lengths)
        after = dominant_topics(labels[points], local, len(touched), self.topics)
        self.dominant[touched] = after
        self.counts += np.bincount(after[after >= 0], minlength=self.topics)


def merge(
    labels: Labels,
    conversations: Sequence[str],
    title_vectors: np.ndarray[Any, Any],
    titled: Flags,
    distance: float,
    cap: float,
) -> tuple[Labels, int]:
    """Topics joined by their title centres (module doc); returns the labels and how many joins were made.

    Incremental: the distances are computed once and a join recomputes the joined topic's alone, the dominant
    counts only for the conversations the join touched (at 1M messages, ~900 topics, recomputing both for every
    join cost ~0.3 CPU-s a join: benchmarks/bench_title_merge.py, RESULTS.md "Session 35"). The pairs within
    `distance` are the candidates; the closest allowed one is joined, the first in row order on a tie, as a
    search of the whole distance matrix finds it (tests/test_cluster_title_merge.py holds that search)."""
    labels = np.asarray(labels, dtype=np.int64).copy()
    numbers: dict[str, int] = {}
    conversation = np.array([numbers.setdefault(c, len(numbers)) for c in conversations], dtype=np.int64)
    topics = int(labels.max()) + 1 if len(labels) else 0
    if topics < 2 or not titled.any():
        return labels, 0
    limit = cap * len(numbers)
    sums = _title_sums(labels, title_vectors, titled, topics)
    alive = np.linalg.norm(sums, axis=1) > 0  # a topic with no titled point is never joined
    centres = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    apart = 1.0 - centres @ centres.T
    first, second = np.nonzero(np.triu(apart <= distance, 1) & np.outer(alive, alive))
    gap = apart[first, second]
    dominance = _Dominance(labels, conversation, len(numbers), topics)
    joins = 0
    while len(first):
        allowed = (dominance.counts[first] + dominance.counts[second]) <= limit
        if not allowed.any():
            break
        closest = np.where(allowed, gap, np.inf)
        tied = np.flatnonzero(closest == closest.min())
        pick = tied[np.argmin(first[tied] * topics + second[tied])]
        keep, into = int(first[pick]), int(second[pick])
        moved = labels == into
        touched = np.unique(conversation[moved])
        labels[moved] = keep
        dominance.update(labels, touched)
        sums[keep] += sums[into]
        sums[into] = 0.0
        alive[into] = False
        joins += 1
        centres[keep] = sums[keep] / max(float(np.linalg.norm(sums[keep])), 1e-12)
        centres[into] = 0.0
        row = 1.0 - centres @ centres[keep]
        stale = (first == keep) | (second == keep) | (first == into) | (second == into)
        near = np.flatnonzero(alive & (row <= distance))
        near = near[near != keep]
        first = np.concatenate([first[~stale], np.minimum(near, keep)])
        second = np.concatenate([second[~stale], np.maximum(near, keep)])
        gap = np.concatenate([gap[~stale], row[near]])
    return labels, joins
