"""Topics joined after the fit when their conversations' titles say the same subject. Pure apart from `title_vectors`.

Why: one flat HDBSCAN cut cannot be coarse in one region and fine in another. On the labelled build the person who
grouped the demo conversations files 13 trips under one "travel planning" folder, where the topics split Paris, Japan,
and hiking: in the space the topics are found in (the full MiniLM over a segment's title and opening) the destination
sets a trip apart, and those topics sit farther apart than Spark topics people keep apart, so no merge of topic centres
or keywords tells them (benchmarks/RESULTS.md, "Session 34"). A conversation's title read alone says its subject
("Trip to Paris", "Japan itinerary"): topics whose titles are alike are joined, closest first.

- `title_vectors`: each point's conversation title read alone by the full model (cluster.encoder), through the
  embedding cache (each distinct title once, never again); placeholder titles ("New chat", none) count as untitled;
- `merge`: a topic's title centre is the mean of its titled points' title vectors; while the closest two topics are
  within cosine distance `distance`, and the joined topic would be the dominant topic of at most a share `cap` of the
  conversations, they are joined (the lower number kept). The cap keeps a subject that fills much of an archive (one
  person's Spark work: every title says "Spark") from becoming one topic; a topic with no titled point is never joined.

Measured (seeds 42/7/11, distance 0.4, cap 0.08; AMI over conversations with a topic): the two blind groupings as one
set 0.579 -> 0.594, dev 0.500 -> 0.506, held-out 0.582 -> 0.633; the spark grouping alone 0.593 -> 0.575.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import sparse

from cluster import topic_space
from contracts.settings import Settings
from staging import segments as segment_store

Labels = np.ndarray[Any, np.dtype[np.int64]]
Flags = np.ndarray[Any, np.dtype[np.bool_]]


def title_vectors(
    archive: sqlite3.Connection, staging: sqlite3.Connection, settings: Settings, run_id: str, conversations: list[str]
) -> tuple[np.ndarray[Any, Any], Flags]:
    """Per point (`conversations`: each point's conversation), its conversation title's unit vector by the full
    model and whether the conversation has a title (an untitled point's vector is zeros)."""
    titles = segment_store.conversation_titles(archive, set(conversations))
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
    inside = labels >= 0
    if not inside.any():
        return np.zeros(topics, dtype=np.int64)
    counts = sparse.coo_matrix(
        (np.ones(int(inside.sum()), dtype=np.int64), (conversation[inside], labels[inside])),
        shape=(int(conversation.max()) + 1, topics),
    ).tocsr()
    filed = np.asarray(counts.sum(axis=1)).ravel() > 0
    dominant = np.asarray(counts.argmax(axis=1)).ravel()[filed]
    return np.bincount(dominant, minlength=topics)


def merge(
    labels: Labels,
    conversations: Sequence[str],
    title_vectors: np.ndarray[Any, Any],
    titled: Flags,
    distance: float,
    cap: float,
) -> tuple[Labels, int]:
    """Topics joined by their title centres (module doc); returns the labels and how many joins were made."""
    labels = np.asarray(labels, dtype=np.int64).copy()
    numbers: dict[str, int] = {}
    conversation = np.array([numbers.setdefault(c, len(numbers)) for c in conversations], dtype=np.int64)
    topics = int(labels.max()) + 1 if len(labels) else 0
    if topics < 2 or not titled.any():
        return labels, 0
    limit = cap * len(numbers)
    sums = np.zeros((topics, title_vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, labels[titled & (labels >= 0)], title_vectors[titled & (labels >= 0)])
    alive = np.linalg.norm(sums, axis=1) > 0  # a topic with no titled point is never joined
    joins = 0
    while alive.sum() >= 2:
        centres = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
        apart = 1.0 - centres @ centres.T
        counts = dominant_counts(labels, conversation, topics)
        allowed = np.triu(apart <= distance, 1) & np.outer(alive, alive)
        allowed &= (counts[:, None] + counts[None, :]) <= limit
        if not allowed.any():
            break
        keep, into = np.unravel_index(int(np.argmin(np.where(allowed, apart, np.inf))), apart.shape)
        labels[labels == into] = keep
        sums[keep] += sums[into]
        sums[into] = 0.0
        alive[into] = False
        joins += 1
    return labels, joins
