"""The cues stage: archive messages, concepts and topics -> the Cue-Tag-Content graph in staging.db.

The steps (the runner, flows/stage_runner.py, keeps the ledger): read the visible active messages (archive.db),
the live concepts' evidence (the concepts stage) and the latest topics (the cluster stage; optional: a small
archive has none); compute the graph with `memory.graph.GraphBuilder` (pure, deterministic), batch by batch of
whole conversations; check each batch (`_check`: every edge joins known nodes, weights in 0..1, every merged
node has originals); replace this run's rows in one transaction, written batch by batch (ids are content keys,
so a re-run writes the same rows); return the counts and the hub report.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from clients.embed_cache import EmbedCounts, embed_cached
from clients.embedders import Embedder, default_cache_dir
from clients.progress import ProgressFactory
from clients.stage import History, Outcome, StageContext
from contracts.settings import Settings
from memory import cues_incremental, cues_state, index_store, key_model, wordnet
from memory.graph import BatchGraph, BuildReport, EvidenceInput, GraphBuilder, MessageInput, TopicInput, dense_key
from memory.index import embeds_role, key_embedder
from memory.key_model import FULL, KeyCost, with_model
from memory.names import Names
from staging import embeddings as vectors
from staging import memory as store
from staging import memory_history, memory_loaded, staging_changes
from staging import memory_inputs as inputs
from staging.memory import CueRow, TagRow

log = logging.getLogger(__name__)

STAGE = "cues"


BATCH_MESSAGES = 5_000  # whole conversations per batch, about this many messages (100k: 20k -> 504 MiB, 2k -> 315)


def large_run(ctx: StageContext, history: History) -> str:
    """Why this run builds in full ('' when it will rebuild a few conversations): the runner's guess at its size
    (flows/stage_size.py), `cues_state.plan`'s rules counted from the ledger instead of the digests: the topics
    fitted again since its last run (every topic link changes), or the extractions the concepts stage read
    again (their evidence), the conversations written or the messages added and removed since reaching
    memory.rebuild_share. Not counted: a garden merge (moves one concept's evidence)."""
    share = ctx.settings.memory.rebuild_share
    if share <= 0:
        return "memory.rebuild_share is 0"
    if any(done.counts.get("incremental") != 1 for done in history.since if done.stage == "cluster"):
        return "the topics were fitted again since its last run"
    segments = history.latest_count("extract", "segments")
    read = history.added_since("concepts", "extractions_read")  # their evidence, which every digest covers
    if read >= share * max(segments, 1):
        return f"the concepts of {read} of {segments} segment(s) handled again since its last run"
    written = history.added_since("ingest", "conversations_written")
    conversations = history.latest_count("segment", "conversations")
    if written >= share * max(conversations, 1):
        return f"{written} conversation(s) written since its last run, of {conversations}"
    last = history.last.counts
    drift = last.get("messages_since_full", 0) + history.added_since("ingest", "messages_inserted", "messages_retired")
    built = last.get("content", 0) - last.get("messages_since_full", 0)
    if drift >= share * max(built, 1):
        return f"{drift} message(s) added or removed since its last full build, of {built}"
    return ""


def run(
    ctx: StageContext,
    *,
    embedder: Embedder | None = None,
    batch_messages: int = BATCH_MESSAGES,
) -> Outcome:
    """Build the Cue-Tag-Content graph of the whole archive for this run, and embed its keys (cached).

    Memory stays flat in the archive's size: messages are read twice (global counts, in table order; the graph
    batch by batch of whole conversations, written as it goes, its keys looked up in the vector cache), never
    held all at once; only the messages whose key has no vector yet are read a third time, to embed them."""
    archive, staging, run_id, settings, progress = ctx.archive, ctx.staging, ctx.run_id, ctx.settings, ctx.progress
    topic_run = inputs.topic_run(staging)
    lexicon_db = (
        wordnet.WordNet.open(settings.memory.wordnet_dir, settings.embed.model_cache_dir or default_cache_dir())
        if settings.memory.hypernym_depth > 0
        else None
    )
    base = cues_state.load_base(staging, settings)
    # Only the conversations that may have changed since the base run are digested again (cues_state.py), and,
    # when the base run's index allows it, only their evidence is read (scoped_digests)
    scoped = None if ctx.force else cues_state.scoped_digests(archive, staging, base)
    if scoped is not None:
        rows = [EvidenceInput(*row) for row in scoped.evidence]
        builder = GraphBuilder(rows, settings.memory, lexicon_db, concepts=scoped.concepts)
        found = scoped.digests
    else:
        builder, found = _whole(archive, staging, settings, base, lexicon_db)
    log.info("cues - %s", found.note)
    digests = found.conversations
    plan, why_full = cues_state.plan(archive, staging, settings, run_id, topic_run, digests, base)
    if ctx.force:  # `chatmem run --force`: every conversation rebuilt, as a clean build would
        plan, why_full = None, "--force: every conversation rebuilt"
    if plan is not None:
        if scoped is not None:  # rebuilt with their digest carried (topic links changed): their evidence too
            more = cues_state.more_evidence(archive, staging, scoped, plan.rebuilt)
            builder.add_evidence([EvidenceInput(*row) for row in more])
        return _run_incremental(
            archive, staging, builder, plan, run_id, topic_run, settings, embedder, progress, batch_messages, found
        )
    if scoped is not None:  # a full build counts every message's evidence: read it all after all
        builder, _ = _whole(archive, staging, settings, base, lexicon_db, digest=False)
    cost = KeyCost(settings.memory)  # which model embeds the keys: chosen by its estimated cost
    for uuid, role, author, text in inputs.iter_visible_texts(archive):
        builder.count_text(uuid, role, author, text)
        cost.add(role, text)
    choice = cost.choice()
    keys = _Keys(staging, with_model(settings, choice.model), builder.names(), embedder)
    notes = [choice.note(), f"full build: {why_full}", *_missing_inputs(settings, topic_run, builder, lexicon_db)]
    summary: dict[str, Any] = {"topic_run": topic_run, "notes": notes}
    summary.update(key_model=choice.summary(), incremental=False, full_run=run_id, changed=[], changed_since_full=[])
    written, cues, tags, report, cue_tag_edges = _write_full(ctx, builder, keys, topic_run, summary, batch_messages)
    frozen = builder.frozen_counts()
    embedded = keys.embed_missing(archive, run_id, progress, batch_messages)
    _after_success(
        staging,
        settings,
        cues_state.CuesState(
            run_id,
            run_id,
            cues_state.settings_digest(settings),
            topic_run,
            frozen,
            digests,
        ),
        found.index,
    )
    counts = {
        "content": written["content"] - written["merged"],
        "merged_nodes": report.merged_groups,
        "merged_messages": report.merged_messages,
        "cues": len(cues),
        "concept_cues": sum(1 for c in cues if c.kind == "concept"),
        "keyphrase_cues": sum(1 for c in cues if c.kind == "keyphrase"),
        "category_cues": sum(1 for c in cues if c.cue_id.startswith("wn:")),
        "hub_cues": len(report.hubs),
        "tags": len(tags),
        "edges": written["edges"],
        "keys_embedded": embedded.embedded,
        "keys_cached": embedded.cached,
        "keys_full_model": int(choice.model == FULL),
        "incremental": 0,
        "conversations_rebuilt": len(digests),
        "conversations_digested": found.computed,
    }
    rows_out = written["content"] + len(cues) + len(tags) + written["edges"]
    counts.update(rows_written=rows_out, rows_shared=0)  # a full build writes every row of its memory
    log.info("cues - %s (cue-tag edges %d)", counts, cue_tag_edges)
    return Outcome(rows_in=builder.n, rows_out=rows_out, counts=counts, notes=notes)


def _whole(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    base: cues_state.Base,
    lexicon_db: wordnet.WordNet | None,
    *,
    digest: bool = True,
) -> tuple[GraphBuilder, cues_state.Digests]:
    """The graph builder over every message's evidence, and the digests (`digest`) as `digests_since` gives them,
    with the staging mark and the heads the next run's `scoped_digests` starts from (taken before the reads)."""
    mark = staging_changes.mark(staging) if staging_changes.tracked(staging) else None
    heads = inputs.live_heads(staging)
    evidence = inputs.live_evidence(staging, heads)
    builder = GraphBuilder([EvidenceInput(*row) for row in evidence], settings.memory, lexicon_db)
    del evidence
    if not digest:
        return builder, cues_state.Digests({}, cues_state.DigestIndex(None, {}), 0, "")
    return builder, cues_state.digests_since(archive, builder.evidence, builder.concepts, base, mark, heads)


def _missing_inputs(
    settings: Settings, topic_run: str | None, builder: GraphBuilder, lexicon: wordnet.WordNet | None
) -> list[str]:
    """Notes on the inputs a full build goes without (no topics, no concepts, no WordNet)."""
    notes = []
    if topic_run is None:
        notes.append("no topics yet (cluster stage not run or skipped): no topic tags")
    if not builder.concepts:
        notes.append("no concept evidence (concepts stage not run): no concept, phrase or category cues")
    if lexicon is None and settings.memory.hypernym_depth > 0:
        notes.append(
            f"WordNet not found at memory.wordnet_dir ({settings.memory.wordnet_dir}): no category cues"
            " (install Debian's wordnet-base)"
        )
    return notes


def _write_full(
    ctx: StageContext,
    builder: GraphBuilder,
    keys: _Keys,
    topic_run: str | None,
    summary: dict[str, Any],
    batch_messages: int,
) -> tuple[dict[str, int], list[CueRow], list[TagRow], BuildReport, int]:
    """Pass 2 of a full build: the graph batch by batch of whole conversations, checked and written as it goes
    (its keys looked up in the vector cache), then the cues, the tags and their edges; the hub report noted."""
    staging, notes = ctx.staging, summary["notes"]
    sources: set[str] = set()
    with store.RunWriter(staging, ctx.run_id) as writer:
        for batch in _batches(_messages(ctx.archive), batch_messages):
            topics = inputs.topic_rows(staging, topic_run, (m.uuid for m in batch))
            part = builder.batch(batch, [TopicInput(*row) for row in topics])
            _check(part)
            sources.update(e[0] for e in part.edges)
            keys.look_up(batch)
            writer.add(part.content, part.edges, part.merges, part.cue_conversations)
        cues, tags, report = builder.finish()
        edges_before = writer.counts["edges"]
        writer.add_edges(builder.cue_tag_edges(writer.cue_conversations()))
        cue_tag_edges = writer.counts["edges"] - edges_before
        unknown = sources - {c.cue_id for c in cues} - {t.tag_id for t in tags}
        if unknown:
            raise ValueError(f"{len(unknown)} edge source(s) name no cue or tag: {sorted(unknown)[0]}")
        writer.add_cues(cues)
        writer.add_tags(tags)
        hub_share = round(100 * len(report.hubs) / max(len(cues), 1), 2)
        if report.hubs:
            names = ", ".join(f"{h['cue']} ({h['share']:.0%})" for h in report.hubs[:5])
            notes.append(f"{len(report.hubs)} hub cue(s) ({hub_share}% of cues) down-weighted: {names}")
        writer.finish({"hubs": report.hubs, **summary})
        return dict(writer.counts), cues, tags, report, cue_tag_edges


def _run_incremental(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    builder: GraphBuilder,
    plan: cues_state.Plan,
    run_id: str,
    topic_run: str | None,
    settings: Settings,
    embedder: Embedder | None,
    progress: ProgressFactory | None,
    batch_messages: int,
    found: cues_state.Digests,
) -> Outcome:
    """Rebuild the plan's conversations, carry the rest from its base run (memory/cues_incremental.py)."""
    base = plan.state.run_id
    notes = [
        f"incremental from cues run {base} (last full build {plan.state.full_run}): {len(plan.rebuilt)}"
        f" conversation(s) rebuilt, {len(plan.gone)} gone; since the full build {len(plan.changed)} conversation(s)"
        f" changed, {plan.drift} message(s) added or removed ({plan.drift / max(plan.state.frozen.n, 1):.1%} of its"
        f" {plan.state.frozen.n}, full build at {settings.memory.rebuild_share:.0%})"
    ]
    key_settings = key_model.for_run(settings, staging, base)  # the carried keys' model embeds the new ones
    summary: dict[str, Any] = {
        "key_model": key_model.run_choice(staging, base),
        "topic_run": topic_run,
        "notes": notes,
        "incremental": True,
        "base_run": base,
        # What the load diffs against the run it last loaded (load/memory_delta.py): the conversations this run
        # rebuilt or dropped (its change from `base_run`), and every one that may differ from any run since the full
        # build (the load's fallback when a run between the two was pruned).
        "full_run": plan.state.full_run,
        "changed": sorted({*plan.rebuilt, *plan.gone}),
        "changed_since_full": sorted(plan.changed),
    }
    written, cues, tags, messages = cues_incremental.build(
        archive,
        staging,
        builder,
        plan,
        run_id=run_id,
        topic_run=topic_run,
        batches=_batches,
        check=_check,
        batch_messages=batch_messages,
        summary=summary,
    )
    state = plan.state
    embedded = cues_incremental.embed_rebuilt(staging, run_id, key_settings, builder, messages, embedder, progress)
    _after_success(
        staging,
        settings,
        cues_state.CuesState(
            run_id,
            state.full_run,
            state.settings,
            topic_run,
            state.frozen,
            plan.digests,
            plan.changed,
            drift=plan.drift,
        ),
        found.index,
    )
    hubs = summary.get("hubs", [])
    counts = {
        "content": written["content"] - written["merged"],
        "merged_nodes": written["merged"],
        "cues": len(cues),
        "concept_cues": sum(1 for c in cues if c.kind == "concept"),
        "keyphrase_cues": sum(1 for c in cues if c.kind == "keyphrase"),
        "hub_cues": len(hubs),
        "tags": len(tags),
        "edges": written["edges"],
        "keys_embedded": embedded.embedded,
        "keys_cached": embedded.cached,
        "incremental": 1,
        "conversations_rebuilt": len(plan.rebuilt),
        "conversations_digested": found.computed,
        "messages_rebuilt": len(messages),
        "messages_since_full": plan.drift,
    }
    # rows_out and rows_written: the rows this run wrote; the rest of its memory is the base run's rows, shared
    kinds = ("content", "cues", "tags", "edges")
    rows_out = sum(written[f"written_{kind}"] for kind in kinds)
    shared = written["content"] + len(cues) + len(tags) + written["edges"] - rows_out
    counts.update(rows_written=rows_out, rows_shared=shared)
    notes.append(
        f"{rows_out} row(s) written ("
        + ", ".join(f"{kind} {written[f'written_{kind}']}" for kind in kinds)
        + f"), {shared} shared with cues run {base} (not copied)"
    )
    log.info("cues - %s", counts)
    return Outcome(rows_in=len(messages), rows_out=rows_out, counts=counts, notes=notes)


def _after_success(
    staging: sqlite3.Connection, settings: Settings, state: cues_state.CuesState, index: cues_state.DigestIndex
) -> None:
    """Once the run's rows are in and its keys embedded (the last work the stage does, so a run killed before
    here leaves the previous run's state and rows whole): its state for the next incremental run, and older
    runs pruned (staging/memory_history.py: all but this run, the run of the stored recall index, which an open
    server may still read, and the run a graph target last loaded, which its next load diffs against, keep
    their memory; a row no kept run sees is deleted: memory.prune_runs)."""
    keep = {state.run_id, *index_store.stored_runs(settings.data_dir), *memory_loaded.held_runs(settings.data_dir)}
    cues_state.save_state(settings.data_dir, state, keep, index)
    if not settings.memory.prune_runs:
        return
    for stale in memory_history.prune(staging, keep):
        log.info("cues - pruned the memory rows of run %s", stale)


def _messages(archive: sqlite3.Connection) -> Iterator[MessageInput]:
    return (MessageInput(*row) for row in inputs.iter_visible_messages(archive))


def _batches(messages: Iterator[MessageInput], size: int) -> Iterator[list[MessageInput]]:
    """Whole conversations, gathered until a batch holds at least `size` messages (messages come conversation
    by conversation)."""
    batch: list[MessageInput] = []
    for message in messages:
        if len(batch) >= size and message.conversation_id != batch[-1].conversation_id:
            yield batch
            batch = []
        batch.append(message)
    if batch:
        yield batch


class _Keys:
    """Every message content node's dense key (memory.graph.dense_key: the masked text) in staging's vector cache.

    Pass 2 hashes each batch's keys and looks them up; only the messages whose key has no vector yet are read
    again, after the graph is written, and embedded a batch at a time. A memory that names nobody keys each
    message by its text, which the embed stage embedded: nothing to read again, nothing to embed."""

    def __init__(self, staging: sqlite3.Connection, settings: Settings, names: Names, embedder: Embedder | None):
        self.staging, self.settings, self.names = staging, settings, names
        self.embedder = embedder
        self.missing: list[str] = []  # uuids, not texts: ~85 MB at 1M messages when no key is cached
        self.found = 0

    def model(self) -> Embedder:
        if self.embedder is None:
            self.embedder = key_embedder(self.settings)
        return self.embedder

    def look_up(self, batch: Sequence[MessageInput]) -> None:
        wanted = [m for m in batch if embeds_role(self.settings, m.role)]
        if not wanted:
            return
        hashes = [vectors.text_hash(dense_key(m.text, self.names)) for m in wanted]
        model = self.model().key
        # A key that is the text the embed stage embedded (no speaker name in it) has the vector its message's
        # item points at: known from the items' small rows; only the other keys are looked up among the vectors.
        items = vectors.item_hashes(self.staging, "message", model, [m.uuid for m in wanted])
        cached = {h for m, h in zip(wanted, hashes, strict=True) if items.get(m.uuid) == h}
        rest = [h for h in hashes if h not in cached]
        if rest:
            cached |= vectors.cached_hashes(self.staging, model, rest)
        for message, digest in zip(wanted, hashes, strict=True):
            if digest in cached:
                self.found += 1
            else:
                self.missing.append(message.uuid)

    def embed_missing(
        self, archive: sqlite3.Connection, run_id: str, progress: ProgressFactory | None, batch_messages: int
    ) -> EmbedCounts:
        """Embed the keys `look_up` found no vector for; counts as `embed_cached` gives them, found ones cached."""
        embedded = EmbedCounts(texts=self.found, cached=self.found)
        for start in range(0, len(self.missing), batch_messages):
            chunk = self.missing[start : start + batch_messages]
            texts = inputs.message_texts(archive, chunk)
            model = self.model()
            embed_cached(
                self.staging,
                model,
                run_id,
                [dense_key(texts[uuid], self.names) for uuid in chunk],
                batch_size=model.batch_size or self.settings.embed.batch_size,
                write_batch=self.settings.embed.write_batch,
                counts=embedded,
                progress=progress,
                label="embed keys",
            )
        return embedded


def _check(part: BatchGraph) -> None:
    """Step 4, per batch: what is about to be written holds together (a failure here is a bug: the stage fails).
    Edge sources (cues, tags) are checked once every batch is built."""
    content = {c.content_id for c in part.content}
    bad = [e for e in part.edges if e[1] not in content or not 0.0 <= e[3] <= 1.0]
    if bad:
        raise ValueError(f"{len(bad)} edge(s) join an unknown node or weigh outside 0..1: {bad[0]}")
    merged = {c.content_id for c in part.content if c.kind == "merged"}
    if merged != {m for m, _ in part.merges}:
        raise ValueError("a merged content node without originals, or originals of an unknown node")
