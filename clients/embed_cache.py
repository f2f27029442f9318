"""Embedding with the staging cache: length-sorted batches, nothing embedded twice for the same (text, model).

`embed_cached` is the one place texts reach a model. A segment's vector is not a model call: it is the mean of
its messages' vectors weighted by their (capped) length, so it covers the whole segment where a 256-piece
model would read only its head, and it costs nothing once the messages are embedded.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clients.batches import MapBatches, map_in_process, shippable, split, unship
from clients.embedders import Embedder, build_embedder
from clients.progress import ProgressFactory, bar
from contracts.errors import ConfigError
from contracts.settings import EmbedSettings, Settings
from staging import embeddings as store
from staging.embeddings import Matrix

SEGMENT_RECIPE = "segment-mean-v1"
WEIGHT_CAP_CHARS = 2000  # a pasted log weighs no more in its segment than a long answer does


@dataclass(slots=True)
class EmbedCounts:
    texts: int = 0  # texts asked for
    cached: int = 0  # no model call: found in staging.db, or the same text earlier in this call
    embedded: int = 0  # sent to the model
    written: int = 0  # new vectors stored


def batches_by_length(texts: Sequence[str], batch_size: int) -> Iterator[list[int]]:
    """Indices of `texts` in batches of similar length: padding (and static bookkeeping) is wasted least."""
    order = sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def embed_texts(
    embedder: Embedder, texts: Sequence[str], batch_size: int, advance: Callable[[int], object] | None = None
) -> Matrix:
    """Embed `texts` in length-sorted batches; rows come back in the input order."""
    out: Matrix | None = None
    for batch in batches_by_length(texts, batch_size):
        vectors = embedder.embed([texts[i] for i in batch])
        if out is None:
            out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        out[batch] = vectors
        if advance is not None:
            advance(len(batch))
    return out if out is not None else np.zeros((0, embedder.dim), dtype=np.float32)


def embed_cached(
    staging: sqlite3.Connection,
    embedder: Embedder,
    run_id: str,
    texts: Sequence[str],
    *,
    batch_size: int,
    write_batch: int,
    counts: EmbedCounts,
    progress: ProgressFactory | None = None,
    label: str = "embed",
    settings: EmbedSettings | None = None,
    map_batches: MapBatches = map_in_process,
    known: set[str] | None = None,
) -> list[str]:
    """Make sure every text has a vector under `embedder.key` in staging.db; returns the texts' hashes.

    The texts to embed are cut into batches of `write_batch` and handed to `map_batches` (another runner needs
    `settings`, which its workers build the embedder from); each batch's vectors are written as they come
    back, in batch order. `known`: hashes the caller knows have their vector (`staging.embeddings.pointed_hashes`),
    not looked up again."""
    started = start_embedding(
        staging, embedder, texts, batch_size=batch_size, write_batch=write_batch, counts=counts,
        settings=settings, map_batches=map_batches, known=known,
    )  # fmt: skip
    return finish_embedding(staging, embedder, run_id, started, counts, progress, label)


@dataclass(slots=True)
class StartedEmbedding:
    """Texts whose missing vectors are being computed (lazily in-process, or already on workers)."""

    hashes: list[str]  # every text's, in the given order
    chunks: list[list[str]]  # the hashes to embed, one list per batch
    vectors: Iterator[Matrix]  # each batch's vectors, in batch order
    in_flight: set[str] | None  # hashes started and not yet written, shared with the caller's other batches


def start_embedding(
    staging: sqlite3.Connection,
    embedder: Embedder,
    texts: Sequence[str],
    *,
    batch_size: int,
    write_batch: int,
    counts: EmbedCounts,
    settings: EmbedSettings | None = None,
    map_batches: MapBatches = map_in_process,
    in_flight: set[str] | None = None,
    known: set[str] | None = None,
) -> StartedEmbedding:
    """The first half of `embed_cached`: find what the cache lacks and hand it to `map_batches`. A caller that
    starts the next texts before it finishes these passes the same `in_flight` set to both: a text already
    started counts as cached (as it would be had these been written first), so nothing is embedded twice and
    the counts are those of one call after another. `known`: as in `embed_cached`."""
    hashes = [store.text_hash(t) for t in texts]
    counts.texts += len(texts)
    if known:
        cached = store.cached_hashes(staging, embedder.key, [h for h in hashes if h not in known])
        cached.update(h for h in hashes if h in known)
    else:
        cached = store.cached_hashes(staging, embedder.key, hashes)
    todo: dict[str, str] = {}
    busy = in_flight if in_flight is not None else set()
    for h, text in zip(hashes, texts, strict=True):
        if h not in cached and h not in todo and h not in busy:
            todo[h] = text
    counts.cached += len(texts) - len(todo)
    keys = list(todo)
    chunks = [list(chunk) for chunk in split(keys, write_batch)]
    job = EmbedJob(settings or EmbedSettings(), embedder, batch_size)
    vectors = map_batches(job, [[todo[h] for h in chunk] for chunk in chunks])
    if in_flight is not None:
        in_flight.update(keys)
    return StartedEmbedding(hashes, chunks, vectors, in_flight)


def finish_embedding(
    staging: sqlite3.Connection,
    embedder: Embedder,
    run_id: str,
    started: StartedEmbedding,
    counts: EmbedCounts,
    progress: ProgressFactory | None = None,
    label: str = "embed",
) -> list[str]:
    """The second half of `embed_cached`: write each batch's vectors as they come back; the texts' hashes."""
    with bar(progress, label, sum(map(len, started.chunks))) as advance:
        for chunk, vectors in zip(started.chunks, started.vectors, strict=True):
            counts.embedded += len(chunk)
            counts.written += store.put_vectors(staging, embedder.key, run_id, list(zip(chunk, vectors, strict=True)))
            if started.in_flight is not None:
                started.in_flight.difference_update(chunk)
            advance(len(chunk))
    return started.hashes


def segment_key(member_hashes: Sequence[str], weights: Sequence[float]) -> str:
    """The cache key of a segment vector: its members' text hashes and weights, and the recipe."""
    digest = hashlib.sha256(SEGMENT_RECIPE.encode())
    for h, w in zip(member_hashes, weights, strict=True):
        digest.update(f"{h}:{w:g}\n".encode())
    return digest.hexdigest()


def message_weight(text: str) -> float:
    return float(min(len(text), WEIGHT_CAP_CHARS))


def mean_vector(vectors: Matrix, weights: Sequence[float]) -> Matrix:
    """Weighted mean of unit rows, normalised; all-zero when every weight or row is zero (an empty segment)."""
    w = np.asarray(weights, dtype=np.float32)
    total = vectors.T @ w if len(w) else np.zeros(vectors.shape[1], dtype=np.float32)
    norm = float(np.linalg.norm(total))
    return (total / norm if norm > 0 else total).astype(np.float32)


class EmbedJob:
    """One embed task: a batch of texts -> their vectors (rows in the batch's order), on any worker.

    Pickled (to reach a Dask worker) it keeps the embed settings, not the loaded model: the worker builds its
    own embedder from them (secrets from its own environment: clients.batches.unship) and refuses to run when
    that embedder's key differs from the run's, since its vectors would not be the ones the cache is keyed by."""

    def __init__(self, settings: EmbedSettings, embedder: Embedder, batch_size: int) -> None:
        self.settings = settings
        self.embedder: Embedder | None = embedder
        self.key = embedder.key
        self.batch_size = batch_size

    def __call__(self, texts: Sequence[str]) -> Matrix:
        if self.embedder is None:
            self.embedder = _worker_embedder(self.settings, self.key)
        vectors = embed_texts(self.embedder, texts, self.batch_size)
        if not np.isfinite(vectors).all():  # step 4: never store a NaN that would poison every distance
            raise ValueError(f"embedder {self.key} returned non-finite values")
        return vectors

    def __getstate__(self) -> dict[str, Any]:
        public, from_env = shippable(self.settings)
        return {"public": public, "from_env": from_env, "key": self.key, "batch_size": self.batch_size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        pick: Callable[[Settings], EmbedSettings] = lambda s: s.embed  # noqa: E731
        self.settings = unship(EmbedSettings, state["public"], state["from_env"], pick, "the embed stage")
        self.key, self.batch_size, self.embedder = state["key"], state["batch_size"], None


_WORKER_EMBEDDERS: dict[str, Embedder] = {}  # one loaded model per worker process, not one per task


def _worker_embedder(settings: EmbedSettings, key: str) -> Embedder:
    if key not in _WORKER_EMBEDDERS:
        embedder = build_embedder(settings)
        if embedder.key != key:
            raise ConfigError(f"this worker's embedder is {embedder.key}, the run's is {key}: install the same model")
        _WORKER_EMBEDDERS[key] = embedder
    return _WORKER_EMBEDDERS[key]
