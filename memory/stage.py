"""The cues stage: archive messages, concepts and topics -> the Cue-Tag-Content graph in staging.db.

The six steps: open a stage run; read the visible active messages (archive.db), the live concepts' evidence
(the concepts stage) and the latest topics (the cluster stage; optional: a small archive has none); compute
the graph with `memory.graph.build_graph` (pure, deterministic); check it (`_check`: every edge joins known
nodes, weights in 0..1, every merged node has originals); replace this run's rows in one transaction (ids are
content keys, so a re-run writes the same rows); close with counts and the hub report, or record the failure
with the command that re-runs the stage.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3

from clients.embed_cache import EmbedCounts, embed_cached
from clients.embedders import Embedder
from clients.progress import ProgressFactory
from contracts.results import StageResult
from contracts.settings import Settings
from memory.graph import EvidenceInput, MessageInput, TopicInput, build_graph, dense_key
from memory.index import embeds_role, key_embedder
from staging import memory as store
from staging import memory_inputs as inputs
from staging.memory import MemoryGraph
from staging.segments import archive_fingerprint
from staging.stage_run import finish, stage_run

log = logging.getLogger(__name__)

STAGE = "cues"


def run(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    *,
    run_id: str,
    settings: Settings,
    embedder: Embedder | None = None,
    progress: ProgressFactory | None = None,
) -> StageResult:
    """Build the Cue-Tag-Content graph of the whole archive for this run, and embed its keys (cached)."""
    config = settings.memory.model_dump(mode="json")
    evidence = inputs.live_evidence(staging)
    topic_run, topics = inputs.topic_messages(staging)
    digest = hashlib.sha256(json.dumps([evidence, topic_run, config], sort_keys=True).encode()).hexdigest()
    fingerprint = f"{archive_fingerprint(archive)}:{digest}"
    with stage_run(staging, stage=STAGE, run_id=run_id, fingerprint=fingerprint, settings=config) as ledger:
        messages = [MessageInput(*row) for row in inputs.iter_visible_messages(archive)]
        graph, report = build_graph(
            messages,
            [EvidenceInput(*row) for row in evidence],
            [TopicInput(*row) for row in topics],
            settings.memory,
        )
        _check(graph)
        notes = []
        if topic_run is None:
            notes.append("no topics yet (cluster stage not run or skipped): no topic tags")
        if not evidence:
            notes.append("no concept evidence (concepts stage not run): keyphrase cues only")
        content = sum(1 for c in graph.content if c.kind == "message")
        hub_share = round(100 * len(report.hubs) / max(len(graph.cues), 1), 2)
        if report.hubs:
            names = ", ".join(f"{h['cue']} ({h['share']:.0%})" for h in report.hubs[:5])
            notes.append(f"{len(report.hubs)} hub cue(s) ({hub_share}% of cues) down-weighted: {names}")
        summary = {"hubs": report.hubs, "topic_run": topic_run, "notes": notes}
        store.write_run(staging, run_id, graph, summary)
        embedded = EmbedCounts()
        if graph.content:
            texts = {m.uuid: m.text for m in messages}
            keys = [
                dense_key(c, texts[c.content_id])
                for c in graph.content
                if c.kind == "message" and embeds_role(settings, c.role)
            ]
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
        counts = {
            "content": content,
            "merged_nodes": report.merged_groups,
            "merged_messages": report.merged_messages,
            "cues": len(graph.cues),
            "concept_cues": sum(1 for c in graph.cues if c.kind == "concept"),
            "keyphrase_cues": sum(1 for c in graph.cues if c.kind == "keyphrase"),
            "hub_cues": len(report.hubs),
            "tags": len(graph.tags),
            "edges": len(graph.edges),
            "keys_embedded": embedded.embedded,
            "keys_cached": embedded.cached,
        }
        log.info("cues - %s", counts)
        rows_out = len(graph.content) + len(graph.cues) + len(graph.tags) + len(graph.edges)
        return finish(ledger, rows_in=len(messages), rows_out=rows_out, counts=counts, notes=notes)


def _check(graph: MemoryGraph) -> None:
    """Step 4: what is about to be written holds together (a failure here is a bug: the stage fails)."""
    nodes = {c.content_id for c in graph.content} | {c.cue_id for c in graph.cues} | {t.tag_id for t in graph.tags}
    bad = [e for e in graph.edges if e.src not in nodes or e.dst not in nodes or not 0.0 <= e.weight <= 1.0]
    if bad:
        raise ValueError(f"{len(bad)} edge(s) join an unknown node or weigh outside 0..1: {bad[0]}")
    merged = {c.content_id for c in graph.content if c.kind == "merged"}
    if merged != {m for m, _ in graph.merges}:
        raise ValueError("a merged content node without originals, or originals of an unknown node")
