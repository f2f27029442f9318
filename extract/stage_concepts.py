"""The concepts stage: every current extraction's hypotheses through the concept loop into the concept store.

The steps (the runner, flows/stage_runner.py, keeps the ledger): bring the template rule's kept state up to date
(extract/templates.py); walk the current extraction of every current segment (oldest segment first), reading and
parsing only those with a hypothesis not handled yet (`concept_inputs`, found in SQL: a scheduled re-export costs
its new extractions, not the store) and skipping the handled ones and the conversations whose template hypotheses
would all be dropped again (extract/template_drops.py: remembered, not recounted), so a re-run with nothing new
does nothing; compute with `extract.concept_loop` (decisions) and `extract.resolve` (matching); write in batches,
each one transaction that holds its concepts, evidence, relations, transitions and handled inputs, so a killed run
resumes where it stopped; validate the store (no two concepts with one title, every live concept with evidence,
every merge pointer resolvable); return the counts.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable

from clients.embedders import build_embedder
from clients.gc_pace import fewer_collections
from clients.stage import History, Outcome, StageContext
from contracts.concepts import ConceptHypothesis
from contracts.errors import StageError
from extract import template_drops
from extract.concept_loop import ConceptLoop
from extract.name_similarity import EmbeddingSimilarity
from extract.resolve import SIMILARITIES, Similarity
from extract.templates import Boilerplate, find_boilerplate
from staging import concepts as store
from staging import extractions as extraction_store
from staging import resolver_state
from staging import template_state as state
from staging.db import Transaction
from staging.extractions import CurrentExtraction

log = logging.getLogger(__name__)
Prepare = Callable[[Iterable[str]], None]  # embeds names ahead of the loop's transaction

STAGE = "concepts"
LARGE_SHARE = 0.05  # of the current segments extracted again since the last run: a large run (`large_run`)


def large_run(ctx: StageContext, history: History) -> str:
    """Why this run handles a large share of the hypotheses ('' for a day's few): the runner's guess at its size
    (flows/stage_size.py): the segments pointed at a new extraction since this stage's last success, counted in
    segment_extractions (whatever the extract runs' counts say). Not foreseen: a store rebuilt for a prompt
    template found this run (rare: once per template)."""
    redone, segments = extraction_store.changed_since(ctx.staging, history.last.run_id)
    if redone >= LARGE_SHARE * max(segments, 1):
        return f"{redone} of {segments} segment(s) extracted again since its last run"
    return ""


def run(ctx: StageContext, *, similarity: Similarity | None = None) -> Outcome:
    """Resolve every new hypothesis against the concept store (`similarity`: the third matching step), with the
    garbage collector paced for a stage that makes an object for every hypothesis (clients/gc_pace.py)."""
    with fewer_collections():
        return _run(ctx, similarity)


def _run(ctx: StageContext, similarity: Similarity | None) -> Outcome:
    """`run`, collected as usual."""
    archive, staging, run_id, settings = ctx.archive, ctx.staging, ctx.run_id, ctx.settings
    notes: list[str] = []
    with Transaction(staging):  # the rule's kept state and what it decides, in one transaction
        boilerplate = find_boilerplate(staging, archive)  # a user's prompt template is no evidence (templates.py)
        # Stored evidence can cite a found sentence only where it is new (found by this run), or in a conversation
        # an event touched this run (it held no boilerplate before: its older extraction's evidence is stored).
        touched = [segment for segment, c in boilerplate.conversation_of.items() if c in boilerplate.touched]
        new = bool(boilerplate.new_sentences) and store.cites_any(
            staging, boilerplate.conversation_of, boilerplate.new_sentences
        )
        if ctx.force:  # `chatmem run --force`: every current extraction resolved again, as a clean build does
            store.clear_store(staging)
            state.forget_drops(staging, state.drops(staging))
            notes.append("--force: concept store rebuilt from every current extraction")
        elif new or (bool(touched) and store.cites_any(staging, touched, boilerplate.sentences)):
            # A sentence became boilerplate with its latest conversation: the hypotheses handled before cite it.
            # The store is rebuilt from every current extraction, so the schedule ends where a clean build would
            # (rare: once per new template; after it no stored evidence cites one).
            store.clear_store(staging)
            state.forget_drops(staging, state.drops(staging))  # they remember what was handled before
            notes.append("concept store rebuilt: a prompt template found since the last run (extract/templates.py)")
    prepare: Prepare | None = None
    if similarity is None and settings.concepts.similarity == "embedding":
        by_embedding = EmbeddingSimilarity(staging, build_embedder(settings.embed), run_id, settings)
        similarity, prepare = by_embedding, by_embedding.prepare
        if store.has_store(staging):  # the names the resolver starts with, in one bulk embedding
            prepare(n for c in store.load_concepts(staging).values() for n in (c.title, *c.aliases))
    loop = ConceptLoop(
        staging,
        run_id,
        settings.concepts,
        similarity or SIMILARITIES[settings.concepts.similarity],
        keep_index=resolver_state.present(staging),
    )
    # Before any write: a run sees the inputs handled before it. The rule's state holds the current extractions.
    skip = template_drops.replayed(staging, boilerplate)  # conversations that would drop all again: not read
    unfinished = state.unfinished_inputs(staging, skip)
    current = extraction_store.iter_current(staging)
    cited = state.sentences_cited(staging, unfinished)
    signed = template_drops.signatures(current, unfinished, boilerplate, cited)
    batch: list[CurrentExtraction] = []
    for extraction in current:
        batch.append(extraction)
        if len(batch) >= settings.concepts.batch_size:
            _batch(archive, staging, loop, batch, unfinished, prepare, boilerplate, skip)
            batch = []
    _batch(archive, staging, loop, batch, unfinished, prepare, boilerplate, skip)
    with Transaction(staging):
        loop.settle()
        loop.store_index()  # the kept resolver index of the rows the stage leaves, with its last write
        template_drops.remember(staging, signed, skip, boilerplate, current, unfinished, cited)
    counts: Counter[str] = Counter(loop.counts)
    counts["extractions_read"] = len(unfinished)
    counts.update(boilerplate.counts())
    counts.update(_validate(staging, run_id))
    for name in ("hypotheses", "created", "attached", "refined", "rejected", "duplicates", "merged", "split"):
        counts.setdefault(name, 0)
    log.info("concepts - %s", dict(counts))
    return Outcome(
        rows_in=counts["hypotheses"],
        rows_out=counts["created"] + counts["attached"] + counts["refined"] + counts["merged"] + counts["split"],
        counts=dict(counts),
        notes=notes,
        skipped=counts["hypotheses"] == 0 and not notes,
    )


def _batch(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    loop: ConceptLoop,
    batch: list[CurrentExtraction],
    unfinished: dict[str, set[str]],
    prepare: Prepare | None = None,
    boilerplate: Boilerplate | None = None,
    skip: set[str] | None = None,
) -> None:
    """One transaction: the new hypotheses of a batch of segments, and the concepts they changed.

    `unfinished`: the extractions with a hypothesis not handled yet and the inputs of each handled before the
    run; the batch's others are not read (their batch boundaries stay those of every current extraction), nor are
    those of the conversations in `skip` (extract/template_drops.py)."""
    batch = [e for e in batch if e.cache_key in unfinished]
    if skip and boilerplate is not None:
        batch = [e for e in batch if boilerplate.conversation_of.get(e.segment_id) not in skip]
    if not batch:
        return
    stored = extraction_store.hypotheses_for(staging, sorted({e.cache_key for e in batch}))
    work: list[tuple[CurrentExtraction, list[tuple[int, ConceptHypothesis]]]] = []
    for extraction in batch:
        items = json.loads(stored.get(extraction.cache_key, "[]"))
        done = unfinished[extraction.cache_key]
        new = [
            (index, ConceptHypothesis.model_validate(item))
            for index, item in enumerate(items)
            if f"{extraction.cache_key}:{index}" not in done
        ]
        if boilerplate is not None:
            new = boilerplate.strip(archive, extraction.segment_id, new)
        if new:
            work.append((extraction, new))
    if not work:
        return
    if prepare is not None:  # embed the batch's new names before the write transaction opens
        prepare(n for _, new in work for _, h in new for n in (h.title, *h.aliases))
    times = store.message_times(archive, (s.message_id for _, new in work for _, h in new for s in h.evidence_spans))
    with Transaction(staging):
        for extraction, new in work:
            loop.segment(extraction, new, times)
        loop.flush()


def _validate(staging: sqlite3.Connection, run_id: str) -> dict[str, int]:
    """Step 4: the store's invariants. A broken one is a bug: the stage fails and says so."""
    duplicates = staging.execute(
        "SELECT COUNT(*) FROM (SELECT lower(title) FROM concepts GROUP BY lower(title) HAVING COUNT(*) > 1)"
    ).fetchone()[0]
    bare = staging.execute(
        "SELECT COUNT(*) FROM concepts c WHERE c.state NOT IN ('merged', 'split')"
        " AND NOT EXISTS (SELECT 1 FROM concept_evidence e WHERE e.concept_id = c.concept_id)"
    ).fetchone()[0]
    dangling = staging.execute(
        "SELECT COUNT(*) FROM concepts c WHERE c.merged_into IS NOT NULL"
        " AND NOT EXISTS (SELECT 1 FROM concepts s WHERE s.concept_id = c.merged_into)"
    ).fetchone()[0]
    if duplicates or bare or dangling:
        raise StageError(
            STAGE,
            run_id,
            f"concept store check failed: {duplicates} duplicate title(s), {bare} concept(s) without evidence,"
            f" {dangling} dangling merge pointer(s)",
        )
    states = dict(staging.execute("SELECT state, COUNT(*) FROM concepts GROUP BY state").fetchall())
    counts = {
        f"concepts_{state}": int(states.get(state, 0)) for state in ("active", "weak", "merged", "split", "archived")
    }
    counts["concepts_total"] = sum(counts.values())
    counts["duplicate_titles"] = int(duplicates)
    return counts
