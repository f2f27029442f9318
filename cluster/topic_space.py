"""The space topics are found in: the full MiniLM over a bounded sample of segments, the rest placed by neighbours.

Why: the static MiniLM vectors the embed stage writes (a table of word-piece vectors, averaged) bound how well
any clustering of them agrees with how a person files conversations: on the labelled set, the best of 768
UMAP/HDBSCAN settings reaches AMI 0.53 / 0.46 (dev / held-out) and the tuned pick 0.38-0.41; the full model
over each segment's title and opening reaches 0.77 / 0.67 at best and the objective's pick lands far nearer
(benchmarks/RESULTS.md, sessions 27-28). Running the full model on every message costs ~100x the static one
(hours at 1M messages), so it reads only what the topics are *found* on:

- the anchors: up to `cluster.encode_max` current segments, conversations' opening segments first, each tier by
  a seeded hash of the id (so a segment chosen once stays chosen until a newcomer outranks it, and a re-fit
  re-encodes only the newcomers);
  each is read as its conversation's title and its opening (`topic_text`: the model keeps its first
  `embed.max_tokens` word pieces), each message as a reader is shown it (`clients.shown.read_text`: a reply's
  opening is what it says, not a model's notes or an artifact's markup), by `cluster.encoder`, through the
  embedding cache (staging.db, keyed by the text's hash and the model: a re-run embeds nothing again);
- every other segment, and every concept, gets the weighted mean of the full-model vectors of its
  `NEIGHBOURS` nearest anchors by their static vectors (`place`): the static model is good at "which
  segments are near this one", poor at "which of them form a topic". The tuning and the final fit see anchors
  only; the rest are placed in the fitted model as points beyond the fit sample always were.

Incremental runs place new segments against the anchors the saved model keeps (cluster/saved_model.py), so
their cost follows what is new, not the archive. `cluster.encoder = "embed"` turns all this off: the topics
are found on the embed stage's vectors, as before session 28.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clients.embed_cache import EmbedCounts, embed_cached
from clients.embedders import Embedder, build_embedder, embedder_key
from clients.progress import ProgressFactory
from clients.shown import read_text
from contracts.settings import Settings
from staging import embeddings as vectors
from staging import segments as segment_store
from staging.embeddings import Matrix

NEIGHBOURS = 10  # anchors whose vectors make a placed point's (UMAP's own default k is 15; fewer keeps it local)
OPENING_CHARS = 4000  # of a segment's messages, joined: more than 256 word pieces of any language
CHUNK = 1024  # points placed per matrix product (memory: ~2 x CHUNK x anchors x 4-8 bytes: 250 MB at 20k)
UNTITLED = {"", "new chat", "untitled", "new conversation"}


@dataclass(slots=True)
class Anchors:
    """The segments the full model read: their ids, their static (embed stage) vectors and full-model vectors,
    both unit rows, and the full model's key. Saved with the topic model for incremental runs."""

    ids: list[str]
    static: Matrix
    encoded: Matrix
    encoder: str


def enabled(settings: Settings) -> bool:
    return settings.cluster.encoder != "embed"


def model_key(settings: Settings, key: str) -> str:
    """The key a fitted topic model is known by: the embed stage's model `key`, and the full model's when the
    topics are found on it (a model fitted on other vectors cannot place these)."""
    if not enabled(settings):
        return key
    return f"{key}|{embedder_key(settings.embed.model_copy(update={'backend': settings.cluster.encoder}))}"


def chosen(
    ids: Sequence[str], limit: int, seed: int, openers: Collection[str] = ()
) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Sorted indices of the `limit` ids ranked first: conversations' opening segments (`openers`: the title and
    the first request say most of what a conversation is for) before the others, each by a seeded hash of the
    id; all of them when there are fewer. The rank is the id's own, so a larger archive only pushes ids out."""
    if len(ids) <= limit:
        return np.arange(len(ids))
    ranks = [
        (segment_id not in openers, hashlib.sha256(f"{seed}:{segment_id}".encode()).digest()[:8]) for segment_id in ids
    ]
    order = sorted(range(len(ids)), key=ranks.__getitem__)
    return np.sort(np.asarray(order[:limit], dtype=np.int64))


def topic_text(title: str | None, texts: Sequence[str]) -> str:
    """What the full model reads of a segment: its conversation's title (unless a placeholder) and its opening."""
    body = ""
    for text in texts:
        if not text:
            continue
        body = f"{body}\n{text}" if body else text
        if len(body) >= OPENING_CHARS:
            break
    head = (title or "").strip()
    return f"{head}. {body[:OPENING_CHARS]}" if head.lower() not in UNTITLED else body[:OPENING_CHARS]


def topic_texts(
    archive: sqlite3.Connection, members: Mapping[str, Sequence[str]], segment_ids: Sequence[str]
) -> list[str]:
    """`topic_text` of each segment, read from archive.db (the source of truth), its messages as shown."""
    out: list[str] = []
    for start in range(0, len(segment_ids), 500):
        batch = segment_ids[start : start + 500]
        rows = segment_store.messages_by_id(archive, [m for s in batch for m in members.get(s, ())])
        for segment_id in batch:
            found = [rows[m] for m in members.get(segment_id, ()) if m in rows]
            title = str(found[0]["title"] or "") if found else ""
            out.append(topic_text(title, [read_text(str(row["text"] or "")) for row in found]))
    return out


def encoder_for(settings: Settings) -> Embedder:
    """The full model the anchors are read by (the embed settings' tokens, device and threads)."""
    return build_embedder(settings.embed.model_copy(update={"backend": settings.cluster.encoder}))


def encode(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    run_id: str,
    members: Mapping[str, Sequence[str]],
    segment_ids: Sequence[str],
    *,
    encoder: Embedder | None = None,
    progress: ProgressFactory | None = None,
) -> tuple[Matrix, str]:
    """Full-model vectors (unit rows, in the given order) of the segments' topic texts, and the model's key.
    Cached in staging.db by text hash and model: what was read once is never read again."""
    encoder = encoder or encoder_for(settings)
    texts = topic_texts(archive, members, segment_ids)
    return read(staging, settings, run_id, texts, encoder, "cluster: topic texts", progress), encoder.key


def read(
    staging: sqlite3.Connection,
    settings: Settings,
    run_id: str,
    texts: Sequence[str],
    encoder: Embedder,
    label: str,
    progress: ProgressFactory | None = None,
) -> Matrix:
    """`texts` read by `encoder` (unit rows, in the given order), through the embedding cache in staging.db."""
    hashes = embed_cached(
        staging,
        encoder,
        run_id,
        list(texts),
        batch_size=settings.embed.batch_size,
        write_batch=settings.embed.write_batch,
        counts=EmbedCounts(),
        progress=progress,
        label=label,
    )
    found = vectors.load_vectors(staging, encoder.key, hashes)
    matrix = np.stack([found[h] for h in hashes]).astype(np.float32) if hashes else np.zeros((0, 0), np.float32)
    return unit(matrix)


def place(anchors: Anchors, static_points: Matrix, k: int = NEIGHBOURS) -> Matrix:
    """Full-model-space vectors of points known by their static vectors: the cosine-weighted mean of the
    full-model vectors of their k nearest anchors (the nearest one alone when none is similar at all). A zero
    vector (a text of stop words alone) is near no anchor and stays zero."""
    if not len(static_points):
        return np.zeros((0, anchors.encoded.shape[1]), dtype=np.float32)
    query = unit(static_points)
    k = max(1, min(k, len(anchors.ids)))
    out = np.empty((len(query), anchors.encoded.shape[1]), dtype=np.float32)
    for start in range(0, len(query), CHUNK):
        sims = query[start : start + CHUNK] @ anchors.static.T
        nearest = np.argpartition(sims, sims.shape[1] - k, axis=1)[:, -k:]  # the k largest, no negated copy
        weights = np.maximum(np.take_along_axis(sims, nearest, axis=1), 0.0)
        best = np.argmax(sims, axis=1)
        none = weights.sum(axis=1) <= 0
        weights[none] = 0.0
        mixed = np.einsum("nk,nkd->nd", weights, anchors.encoded[nearest])
        mixed[none] = anchors.encoded[best[none]]
        mixed[~query[start : start + CHUNK].any(axis=1)] = 0.0
        out[start : start + CHUNK] = mixed
    return unit(out)


def unit(matrix: Matrix) -> Matrix:
    """Rows scaled to length 1 (zero rows stay zero), float32."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True) if len(matrix) else np.ones((0, 1), np.float32)
    scaled: Matrix = (matrix / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
    return scaled
