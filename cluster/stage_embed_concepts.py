"""The embed_concepts stage: every concept the concepts stage keeps (not merged away), as a vector.

It runs right after `concepts`, so the vectors exist before anything reads them: the cluster stage links each
concept to a topic by its vector, and recall will look concepts up by meaning. It is the embed stage's work
(same model, same cache: `clients.embed_cache`, keyed by the text's sha256 and the model) under its own stage
run, because concepts only exist once extraction and the concept loop have run.

The steps (the runner, flows/stage_runner.py, keeps the ledger): read the live concepts; embed `title:
description` for those the cache lacks; point each concept's item row at its vector (idempotent upserts);
return the counts (skipped when nothing changed).
"""

from __future__ import annotations

import logging
import sqlite3

from clients.embed_cache import EmbedCounts, embed_cached
from clients.embedders import Embedder, build_embedder
from clients.progress import ProgressFactory
from clients.stage import Outcome, StageContext
from contracts.settings import Settings
from staging import concepts as concept_store
from staging import embeddings as store

log = logging.getLogger(__name__)

STAGE = "embed_concepts"


def concept_text(title: str, description: str) -> str:
    """What a concept's vector is computed from."""
    return f"{title}: {description}" if description else title


def live_concepts(staging: sqlite3.Connection) -> list[concept_store.ConceptRow]:
    if not concept_store.has_store(staging):
        return []
    return [c for c in concept_store.load_concepts(staging).values() if c.merged_into is None]


def run(ctx: StageContext, *, embedder: Embedder | None = None) -> Outcome:
    """Embed every live concept's title and description under the configured model (cached by text)."""
    embedder = embedder or build_embedder(ctx.settings.embed)
    concepts = live_concepts(ctx.staging)
    counts = EmbedCounts()
    changed = embed_concepts(ctx.staging, embedder, ctx.run_id, ctx.settings, counts, ctx.progress, concepts)
    result = {
        "concepts": len(concepts),
        "texts_cached": counts.cached,
        "texts_embedded": counts.embedded,
        "vectors_written": counts.written,
        "concept_items_changed": changed,
    }
    log.info("embed_concepts - %s with %s", result, embedder.key)
    notes = [f"model: {embedder.key}"] if concepts else ["no concepts: run the concepts stage first"]
    return Outcome(
        rows_in=len(concepts),
        rows_out=counts.written + changed,
        counts=result,
        notes=notes,
        skipped=counts.written + changed == 0,
    )


def embed_concepts(
    staging: sqlite3.Connection,
    embedder: Embedder,
    run_id: str,
    settings: Settings,
    counts: EmbedCounts,
    progress: ProgressFactory | None = None,
    concepts: list[concept_store.ConceptRow] | None = None,
) -> int:
    """Embed every concept that is not merged away (title and description). Returns item rows changed."""
    concepts = live_concepts(staging) if concepts is None else concepts
    if not concepts:
        return 0
    hashes = embed_cached(
        staging,
        embedder,
        run_id,
        [concept_text(c.title, c.description) for c in concepts],
        batch_size=embedder.batch_size or settings.embed.batch_size,
        write_batch=settings.embed.write_batch,
        counts=counts,
        progress=progress,
        label="embed concepts",
        known=store.pointed_hashes(staging, "concept", embedder.key),  # unchanged concepts: no lookup of their vector
    )
    rows = [(c.concept_id, h) for c, h in zip(concepts, hashes, strict=True)]
    return store.put_items(staging, "concept", embedder.key, run_id, rows)
