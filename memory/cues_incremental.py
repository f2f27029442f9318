"""The cues stage's incremental path: rebuild only the conversations that changed, share the rest.

Given a plan (memory/cues_state.py: the base run, its saved state, the conversations to rebuild or drop), inside
one transaction, like the full path:

0. undo any run after the base (a run whose cues stage did not finish, or this run on a re-run), so that the
   current rows are the base run's memory (staging/memory_history.py: rows are shared across runs, each with
   the run that created it and the run that retired it);
1. take the base run's cue document frequencies and tag sizes, less what the rebuilt and vanished conversations
   had added to them (their cue-content and tag-content edges in the base run), and resume the graph builder on
   them with the last full build's frozen global counts (message count, speakers, hubs): a cue's IDF uses the
   frozen message count;
2. retire the rebuilt and vanished conversations' content, content edges and merges, and build the rebuilt
   ones with `GraphBuilder.batch`, checked and written as the full path does; every other conversation's rows
   stay current, shared with the base run, not copied (staging/memory_carry.py);
3. make the cues and tags (`finish`) current (changed ones retired and written, equal ones shared), the cue ->
   conversation edges of the rebuilt conversations from their counts, the cue -> concept type edges, and those
   of the other conversations re-weighted in SQL for the cues whose document frequency moved; check that no
   current edge names a cue or tag the run retired, and every cue -> tag edge written has its tag.

The result is a valid graph, not bit for bit a full rebuild's: the message count and hubs stay frozen until the
next full build, due when the messages added or removed since reach `memory.rebuild_share` of its count
(memory/cues_state.py), as cluster's placement keeps its topics until the next refit. Cue document frequencies
and tag sizes are exact. Keys are embedded for the
rebuilt messages only (the rest are in the vector cache already).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from clients.embed_cache import EmbedCounts, embed_cached
from clients.embedders import Embedder
from clients.progress import ProgressFactory
from contracts.settings import Settings
from memory.cues_state import Plan
from memory.graph import BatchGraph, GraphBuilder, MessageInput, TopicInput, dense_key
from memory.index import embeds_role, key_embedder
from staging import memory as store
from staging import memory_carry as carry
from staging import memory_inputs as inputs
from staging.memory import CueRow, TagRow
from staging.memory_history import CURRENT

log = logging.getLogger(__name__)


def build(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    builder: GraphBuilder,
    plan: Plan,
    *,
    run_id: str,
    topic_run: str | None,
    batches: Callable[[Iterator[MessageInput], int], Iterator[list[MessageInput]]],
    check: Callable[[BatchGraph], None],
    batch_messages: int,
    summary: dict[str, Any],
) -> tuple[dict[str, int], list[CueRow], list[TagRow], list[MessageInput]]:
    """Write run `run_id` from the plan's base run; returns the writer's counts (the run's memory, and as
    `written_<kind>` the rows it wrote itself, the rest being shared with the base run), the cues, the tags and
    the rebuilt messages (whose keys the caller embeds)."""
    base = plan.state.run_id
    with store.RunWriter(staging, run_id, base=base) as writer:
        try:
            carry.mark_rebuilt(staging, [*plan.rebuilt, *plan.gone])
            cue_less, tag_less = carry.rebuilt_contributions(staging)
            df = {
                str(cue): int(n) - cue_less[str(cue)]
                for cue, n in staging.execute(f"SELECT cue_id, df FROM memory_cues WHERE {CURRENT}")
            }
            tags = [
                (str(t), str(kind), str(label), int(size) - tag_less[str(t)])
                for t, kind, label, size in staging.execute(
                    f"SELECT tag_id, kind, label, size FROM memory_tags WHERE {CURRENT}"
                )
            ]
            builder.resume(plan.state.frozen, df, tags)
            retired = carry.retire_rebuilt(staging, run_id)
            for name, count in retired.items():
                writer.counts[name] -= count
            messages = [MessageInput(*row) for row in inputs.iter_conversation_messages(archive, plan.rebuilt)]
            for message in messages:
                builder.recount(message)
            for batch in batches(iter(messages), batch_messages):
                topics = inputs.topic_rows(staging, topic_run, (m.uuid for m in batch))
                part = builder.batch(batch, [TopicInput(*row) for row in topics])
                check(part)
                writer.add(part.content, part.edges, part.merges, part.cue_conversations)
            cues, tag_rows, report = builder.finish()
            writer.replace_cues(cues)
            writer.replace_tags(tag_rows)
            for change, written in (
                carry.replace_cue_tags(staging, run_id, list(builder.cue_tag_edges(writer.cue_conversations()))),
                carry.reweigh_cue_conversations(staging, run_id),
            ):
                writer.counts["edges"] += change
                writer.written["edges"] += written
            bad = carry.dangling_edges(staging, run_id)
            if bad:
                raise ValueError(f"incremental cues run {run_id}: {bad} edge(s) name a cue or tag the run lacks")
            hubs = report.hubs
            summary.update(hubs=hubs)
            writer.finish(summary)
            counts = dict(writer.counts)
            counts.update({f"written_{name}": n for name, n in writer.written.items()})
        finally:
            carry.drop_marks(staging)
    log.info(
        "cues - incremental from %s: %d conversation(s) rebuilt (%d messages), %d gone, %d content rows retired",
        base,
        len(plan.rebuilt),
        len(messages),
        len(plan.gone),
        retired["content"],
    )
    return counts, cues, tag_rows, messages


def embed_rebuilt(
    staging: sqlite3.Connection,
    run_id: str,
    settings: Settings,
    builder: GraphBuilder,
    messages: Sequence[MessageInput],
    embedder: Embedder | None,
    progress: ProgressFactory | None,
) -> EmbedCounts:
    """The rebuilt messages' dense keys in the vector cache (the carried ones are there from earlier runs)."""
    embedded = EmbedCounts()
    names = builder.names()
    keys = [dense_key(m.text, names) for m in messages if embeds_role(settings, m.role)]
    if keys:
        model = embedder or key_embedder(settings)
        embed_cached(
            staging,
            model,
            run_id,
            keys,
            batch_size=model.batch_size or settings.embed.batch_size,
            write_batch=settings.embed.write_batch,
            counts=embedded,
            progress=progress,
            label="embed keys",
        )
    return embedded
