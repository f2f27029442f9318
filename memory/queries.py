"""The plain read functions behind the MCP tools `search_concepts`, `get_conversation` and `topics`.

Each takes read-only connections and a request contract (contracts/mcp.py) and returns a result contract; none
writes, none knows about MCP, so they are tested on real SQLite files without a server. `timeline` is in
memory/timeline.py, `recall` is memory/recall.py. A request that names nothing in the memory (an unknown
conversation, message or concept) raises QueryError with what to do instead: the server turns it into a tool
error the agent can read.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime

from clients.shown import shown_text
from contracts.errors import ChatmemError
from contracts.mcp import (
    ConceptMatch,
    ConceptSearchRequest,
    ConceptSearchResult,
    ConversationMessage,
    ConversationRequest,
    ConversationResult,
    EvidenceRef,
    TopicsRequest,
    TopicsResult,
    TopicSummary,
)
from memory.text import BM25, estimate_tokens, terms
from staging import agent_reads as reads
from staging import concepts as concept_store
from staging import topics as topic_store
from staging.concepts import ConceptRow

EXACT_BONUS = 10.0  # a query that is a concept's whole title, alias or id outranks any partial BM25 match
TOPIC_CONCEPTS = 5


class QueryError(ChatmemError):
    """A tool argument that names nothing in this memory; the message says what to call instead."""


def as_time(value: str | None) -> datetime | None:
    """An ISO time from the databases (UTC when it has no zone); None when unknown or unreadable."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


def fold(text: str) -> str:
    return " ".join(text.casefold().split())


# ---------------------------------------------------------------- search_concepts


@dataclass(frozen=True)
class ConceptCatalog:
    """Every concept with its BM25 document and folded names: what a search scores, built once per store state."""

    version: tuple[str | None, int]  # reads.concepts_version: a new concepts stage run makes a new catalog
    rows: list[ConceptRow]
    bm25: BM25
    names: list[frozenset[str]]  # folded title, id and aliases: a query equal to one of them is a whole-name match
    counts: dict[str, int]  # concept id -> evidence spans


def concept_catalog(staging: sqlite3.Connection) -> ConceptCatalog:
    """The catalog of the store as it is now; QueryError when the concepts stage has stored nothing yet."""
    if not reads.has_concepts(staging):
        raise QueryError("no concepts in this memory yet: run the pipeline first (chatmem run EXPORT)")
    rows = sorted(concept_store.load_concepts(staging).values(), key=lambda r: r.concept_id)
    # The title counts twice: it is the concept's name, the description only talks about it.
    documents = [terms(" ".join([r.title, r.title, *r.aliases, r.description])) for r in rows]
    return ConceptCatalog(
        version=reads.concepts_version(staging),
        rows=rows,
        bm25=BM25.build(documents),
        names=[frozenset(fold(n) for n in (r.title, r.concept_id, *r.aliases)) for r in rows],
        counts=reads.evidence_counts(staging),
    )


def search_concepts(
    staging: sqlite3.Connection,
    archive: sqlite3.Connection,
    request: ConceptSearchRequest,
    catalog: ConceptCatalog | None = None,
) -> ConceptSearchResult:
    """Concepts whose title, aliases or description match the query (BM25; whole-name matches first).

    `catalog`: a catalog of this store kept by the caller (the server keeps one per concepts run), else built here.
    """
    catalog = catalog or concept_catalog(staging)
    scores = catalog.bm25.score(terms(request.query)).tolist()
    wanted = fold(request.query)
    counts = catalog.counts
    ranked = []
    for row, names, score in zip(catalog.rows, catalog.names, scores, strict=True):
        if request.type is not None and row.type != request.type:
            continue
        if request.state is not None:
            if row.state != request.state:
                continue
        elif row.state == "merged":  # by default a merged concept is found through its survivor only
            continue
        if wanted in names:
            score += EXACT_BONUS
        if score > 0:
            ranked.append((float(score), row))
    ranked.sort(key=lambda pair: (-pair[0], -counts.get(pair[1].concept_id, 0), pair[1].title_key))
    shown = ranked[: request.limit]
    spans = reads.evidence(staging, [row.concept_id for _, row in shown]) if request.evidence_limit else []
    places = reads.message_conversations(archive, [s.message_id for s in spans])
    by_concept: dict[str, list[EvidenceRef]] = {}
    for span in spans:
        listed = by_concept.setdefault(span.concept_id, [])
        if len(listed) < request.evidence_limit:
            listed.append(
                EvidenceRef(
                    message_id=span.message_id,
                    conversation_id=places.get(span.message_id),
                    created_at=as_time(span.created_at),
                    text=span.text,
                    confidence=span.confidence,
                )
            )
    concepts = [
        ConceptMatch(
            concept_id=row.concept_id,
            title=row.title,
            type=row.type,
            state=row.state,
            description=concept_description(row.description, counts.get(row.concept_id, 0)),
            aliases=row.aliases,
            confidence=row.confidence,
            score=round(score, 4),
            first_seen=as_time(row.first_seen),
            last_seen=as_time(row.last_seen),
            evidence_count=counts.get(row.concept_id, 0),
            evidence=by_concept.get(row.concept_id, []),
            merged_into=row.merged_into,
        )
        for score, row in shown
    ]
    return ConceptSearchResult(query=request.query, matches=len(ranked), concepts=concepts)


_PER_SEGMENT = re.compile(
    r"^(Offline extractor \(keyphrase rules, no model\): \"[^\"]*\") is mentioned \d+ time\(s\) in this segment"
)


def concept_description(description: str, evidence: int) -> str:
    """A concept's description as an agent should read it. The offline extractor describes the one segment it saw
    ("mentioned 2 time(s) in this segment"); the concept gathers many, so that count is replaced by the concept's
    own (its evidence messages in the store)."""
    return _PER_SEGMENT.sub(lambda m: f"{m.group(1)}, with {evidence} evidence message(s) in the memory", description)


# ---------------------------------------------------------------- get_conversation


# The most characters of one message get_conversation returns (~16,000 tokens, more than any normal turn): a message
# of 50 MB came back whole, and no agent got an answer in 110 s. The rest is what recall's windows are for.
MESSAGE_CHARS = 64_000


def capped(text: str) -> tuple[str, int | None]:
    """The message text as returned (its first MESSAGE_CHARS characters and a marker saying what was cut when it is
    longer), and its whole size in tokens when it was cut (None: whole)."""
    if len(text) <= MESSAGE_CHARS:
        return text, None
    whole = estimate_tokens(text)
    marker = (
        f"\n[… cut by chatmem: the first {MESSAGE_CHARS:,} of {len(text):,} characters shown (about {whole:,} tokens "
        "in all); recall with the words you look for shows a window of the rest around them]"
    )
    return text[:MESSAGE_CHARS] + marker, whole


def _center(path_length: int, index: int, window: int, limit: int) -> tuple[int, int]:
    """[start, end) of `window` messages either side of `index`, cut to `limit` messages around it."""
    start, end = max(0, index - window), min(path_length, index + window + 1)
    if end - start > limit:
        start = max(start, index - (limit - 1) // 2)
        end = start + limit
    return start, end


def get_conversation(archive: sqlite3.Connection, request: ConversationRequest) -> ConversationResult:
    """The conversation's active path, from `offset` or around one message, at most `limit` messages, each as recall
    shows it (clients/shown.py: an agent reading around a recalled piece reads what the piece showed) unless
    `raw`."""
    conversation = reads.conversation_row(archive, request.conversation_id)
    if conversation is None:
        raise QueryError(
            f"unknown conversation {request.conversation_id!r}: use a conversation_id returned by recall, "
            "search_concepts, timeline or topics"
        )
    title, created_at, source = conversation
    path = reads.active_path(archive, request.conversation_id)
    if request.around_message_id is None:
        start, end = min(request.offset, len(path)), min(request.offset + request.limit, len(path))
    else:
        positions = {m.uuid: i for i, m in enumerate(path)}
        index = positions.get(request.around_message_id)
        if index is None:
            raise QueryError(_not_on_path(archive, request.conversation_id, request.around_message_id))
        start, end = _center(len(path), index, request.window, request.limit)
    messages = [
        ConversationMessage(
            message_id=m.uuid,
            position=start + i,
            role=m.role,
            author=m.author,
            created_at=as_time(m.created_at),
            text=text,
            full_tokens=full,
        )
        for i, m in enumerate(path[start:end])
        for text, full in [capped(m.text if request.raw else shown_text(m.text))]
    ]
    return ConversationResult(
        conversation_id=request.conversation_id,
        title=title,
        source=source,
        created_at=as_time(created_at),
        path_length=len(path),
        messages=messages,
        more_before=start > 0,
        more_after=end < len(path),
    )


def _not_on_path(archive: sqlite3.Connection, conversation_id: str, message_id: str) -> str:
    place = reads.message_place(archive, message_id)
    if place is None:
        return f"unknown message {message_id!r}: use a message id returned by recall, search_concepts or timeline"
    owner, _active, hidden = place
    if owner != conversation_id:
        return f"message {message_id!r} is in conversation {owner!r}, not {conversation_id!r}"
    if hidden:
        return f"message {message_id!r} is hidden in the export (a system or tool message nobody saw)"
    return f"message {message_id!r} is on a branch of {conversation_id!r} that the conversation did not keep"


# ---------------------------------------------------------------- topics


def topics(staging: sqlite3.Connection, request: TopicsRequest) -> TopicsResult:
    """The latest clustering run's topics, largest first, with keywords, conversations and linked concepts."""
    run_id = topic_store.latest_run(staging)
    summary = topic_store.run_summary(staging, run_id) if run_id else None
    if run_id is None or summary is None:
        return TopicsResult(
            run_id=None,
            outlier_share=None,
            topics=[],
            note="nothing has been clustered yet: run the pipeline (chatmem run EXPORT)",
        )
    found = sorted(topic_store.list_topics(staging, run_id), key=lambda t: (-int(t["size"]), int(t["topic"])))
    shown = found[: request.limit]
    conversations = reads.segment_conversations(staging, [s for t in shown for s in t["representatives"]])
    linked = reads.topic_concepts(staging, run_id)
    concepts = concept_store.load_concepts(staging) if concept_store.has_store(staging) else {}
    titles = {c.concept_id: c.title for c in concepts.values()}
    result = [
        TopicSummary(
            topic=int(t["topic"]),
            topic_uid=str(t["topic_uid"]),
            label=str(t["label"]),
            size=int(t["size"]),
            keywords=[str(k) for k in t["keywords"][: request.keywords]],
            conversation_ids=list(dict.fromkeys(conversations[s] for s in t["representatives"] if s in conversations)),
            concepts=[titles[c] for c, _ in linked.get(int(t["topic"]), []) if c in titles][:TOPIC_CONCEPTS],
        )
        for t in shown
    ]
    note = None
    if not result:
        reasons = "; ".join(summary["notes"]) or f"clustering status {summary['status']}"
        note = f"run {run_id} has no topics: {reasons}"
    share = summary["outlier_share"]
    return TopicsResult(run_id=run_id, outlier_share=None if share is None else float(share), topics=result, note=note)
