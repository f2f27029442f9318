"""The embed stage: every current segment's messages and the segments themselves, as vectors (the concepts'
vectors are the embed_concepts stage's, cluster/stage_embed_concepts.py, which runs once the concepts exist).

The steps (the runner, flows/stage_runner.py, keeps the ledger): read the current segments not yet embedded
from their present content (staging.db `embedded_segments`, under `mark_key`: a re-run with a small new dump reads
only the new or changed segments) and their messages' texts (archive.db) a chunk at a time, each as a reader is
shown it (`clients.shown.read_text`: no model's notes, an artifact by its title and its code cut, a tool's result
on one line: a segment's vector is of what the conversation says); embed what the cache does not
have (`clients.embed_cache.embed_cached`: keyed by the text's sha256 and the model, so a re-run embeds nothing
unchanged) and derive each segment's vector from its messages'; check every vector is finite; write vectors
and item rows in batches (idempotent upserts), then mark the chunk's segments embedded (a run killed before
that redoes them); return the counts.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from clients.batches import MapBatches, ahead_of, map_in_process
from clients.embed_cache import (
    EmbedCounts,
    StartedEmbedding,
    finish_embedding,
    mean_vector,
    message_weight,
    segment_key,
    start_embedding,
)
from clients.embedders import Embedder, build_embedder
from clients.progress import ProgressFactory
from clients.shown import read_text
from clients.stage import Outcome, StageContext
from contracts.settings import Settings
from staging import embeddings as store
from staging import segments as segment_store

log = logging.getLogger(__name__)

STAGE = "embed"
CHUNK_MESSAGES = 20000  # messages read, embedded and written per round: memory stays bounded at any size
AHEAD = 1  # chunks handed to worker processes before the one being written (none in-process)
# Raise when what a message is read as changes: every segment is then embedded once more (texts met before come
# from the cache). 2: as a reader is shown it (clients/shown.py read_text), not the archive's raw text.
TEXT_VERSION = 2


def mark_key(embedder: Embedder) -> str:
    """What `embedded_segments` records a segment under: the model and how its messages were read."""
    return f"{embedder.key}|text-v{TEXT_VERSION}"


def run(ctx: StageContext, *, embedder: Embedder | None = None) -> Outcome:
    """Embed the current segments' messages and the segments under the configured model; the model calls go
    through `ctx.map_batches` (embed.write_batch texts a batch), in this process unless the runner says
    otherwise (Dask, or local worker processes for the static model)."""
    archive, staging, run_id, settings, progress = ctx.archive, ctx.staging, ctx.run_id, ctx.settings, ctx.progress
    map_batches = ctx.map_batches or map_in_process
    if map_batches is not map_in_process and not settings.runner.distributed and not _cpu_bound(settings, embedder):
        # local worker processes help the static model only: onnx already uses every core, an endpoint waits
        map_batches = map_in_process
    embedder = embedder or build_embedder(settings.embed)
    counts = EmbedCounts()
    forgotten = store.forget_retired_segments(staging)
    segments = segment_store.count_current(staging)
    # Streamed, not listed: at 1M messages the current segments' message ids alone are ~150 MB.
    todo = 0
    message_items = segment_items = 0
    in_flight: set[str] = set()
    ahead = 0 if map_batches is map_in_process else AHEAD

    def started() -> Iterator[_Chunk]:
        nonlocal todo
        chunk: list[segment_store.SegmentRow] = []
        size = 0
        for segment in segment_store.iter_current_segments(staging, unless_embedded_under=mark_key(embedder)):
            todo += 1
            chunk.append(segment)
            size += len(segment.message_ids)
            if size >= CHUNK_MESSAGES:
                yield _start(archive, staging, embedder, settings, chunk, counts, map_batches, in_flight)
                chunk, size = [], 0
        if chunk:
            yield _start(archive, staging, embedder, settings, chunk, counts, map_batches, in_flight)

    # With workers, the next chunk's texts are in their hands while this process writes the current one's.
    for work in ahead_of(started(), ahead):
        m, s = _finish(staging, embedder, run_id, work, counts, progress)
        message_items, segment_items = message_items + m, segment_items + s
    notes = [] if segments else ["no current segments: run the segment stage first"]
    result = {
        "segments": segments,
        "segments_unchanged": segments - todo,
        "segments_embedded": todo,
        "texts": counts.texts,
        "texts_cached": counts.cached,
        "texts_embedded": counts.embedded,
        "vectors_written": counts.written,
        "message_items_changed": message_items,
        "segment_items_changed": segment_items,
        "retired_segments_forgotten": forgotten,
    }
    log.info("embed - %s with %s", result, embedder.key)
    changed = counts.written + message_items + segment_items
    return Outcome(
        rows_in=counts.texts,
        rows_out=changed,
        counts=result,
        notes=[*notes, f"model: {embedder.key}"],
        skipped=changed == 0,
    )


@dataclass(slots=True)
class _Chunk:
    """A chunk of segments whose messages' missing vectors are being computed."""

    segments: Sequence[segment_store.SegmentRow]
    texts: dict[str, str]  # message id -> text
    unique: list[str]  # the chunk's message ids, each once, in order
    embedding: StartedEmbedding


def _start(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    embedder: Embedder,
    settings: Settings,
    segments: Sequence[segment_store.SegmentRow],
    counts: EmbedCounts,
    map_batches: MapBatches,
    in_flight: set[str],
) -> _Chunk:
    """Read a chunk's message texts (as shown) and start embedding those the cache does not have."""
    ids = [m for s in segments for m in s.message_ids]
    rows = segment_store.messages_by_id(archive, ids)
    texts = {m: read_text(str(rows[m]["text"])) if m in rows else "" for m in ids}
    unique = list(dict.fromkeys(ids))
    embedding = start_embedding(
        staging,
        embedder,
        [texts[m] for m in unique],
        batch_size=embedder.batch_size or settings.embed.batch_size,
        write_batch=settings.embed.write_batch,
        counts=counts,
        settings=settings.embed,
        map_batches=map_batches,
        in_flight=in_flight,
    )
    return _Chunk(segments, texts, unique, embedding)


def _finish(
    staging: sqlite3.Connection,
    embedder: Embedder,
    run_id: str,
    work: _Chunk,
    counts: EmbedCounts,
    progress: ProgressFactory | None,
) -> tuple[int, int]:
    """One chunk: write its messages' vectors, derive its segment vectors, write both. Returns item rows changed."""
    hashes = finish_embedding(staging, embedder, run_id, work.embedding, counts, progress, "embed messages")
    texts = work.texts
    by_message = dict(zip(work.unique, hashes, strict=True))
    changed_messages = store.put_items(staging, "message", embedder.key, run_id, list(by_message.items()))
    segment_rows: list[tuple[str, str]] = []
    new_vectors = []
    keys = []
    for segment in work.segments:
        member_hashes = [by_message[m] for m in segment.message_ids]
        weights = [message_weight(texts[m]) for m in segment.message_ids]
        key = segment_key(member_hashes, weights)
        keys.append(key)
        segment_rows.append((segment.segment_id, key))
        new_vectors.append((key, member_hashes, weights))
    known = store.cached_hashes(staging, embedder.key, keys)
    needed = [h for key, members, _ in new_vectors if key not in known for h in members]
    vectors = store.load_vectors(staging, embedder.key, needed)  # a re-run with nothing new reads none
    derived = [
        (key, mean_vector(_stack([vectors[h] for h in members]), weights))
        for key, members, weights in new_vectors
        if key not in known
    ]
    counts.written += store.put_vectors(staging, embedder.key, run_id, list(dict(derived).items()))
    changed_segments = store.put_items(staging, "segment", embedder.key, run_id, segment_rows)
    segment_ids = [(s.segment_id, s.content_hash) for s in work.segments]
    store.mark_segments_embedded(staging, mark_key(embedder), run_id, segment_ids)
    return changed_messages, changed_segments


def _cpu_bound(settings: Settings, embedder: Embedder | None) -> bool:
    """Whether the configured model runs on this process's one core (the static one), and is the one used: an
    injected embedder (a test's) is not one a worker process could build from the settings."""
    return embedder is None and settings.embed.backend == "minilm-static"


def _stack(rows: list[store.Matrix]) -> store.Matrix:
    return np.stack(rows).astype(np.float32, copy=False)
