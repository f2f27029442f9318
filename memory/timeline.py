"""The MCP tool `timeline`: how one concept shows up over time, oldest first.

A timeline is assembled from entry sources, one function per kind of entry:

    TIMELINE_SOURCES = {
        "evidence": evidence_entries,   every message that mentions the concept (the concepts stage)
        "fact": fact_entries,           every fact interval about it (the garden stage: valid_from .. valid_to)
    }

Another kind of entry is one more source returning TimelineEntry objects; nothing else here changes. A source
gets the concept and every concept merged into it, so entries credited to a merged-away name still show up.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from contracts.fact_rules import said_of_the_user
from contracts.mcp import TimelineEntry, TimelineRequest, TimelineResult
from memory.queries import QueryError, as_time, fold
from staging import agent_reads as reads
from staging import concepts as concept_store
from staging import fact_timeline
from staging.concepts import ConceptRow

TimelineSource = Callable[[sqlite3.Connection, sqlite3.Connection, Sequence[str]], list[TimelineEntry]]
"""(staging, archive, concept ids: the concept first, then those merged into it) -> its entries, any order."""


def evidence_entries(
    staging: sqlite3.Connection, archive: sqlite3.Connection, concept_ids: Sequence[str]
) -> list[TimelineEntry]:
    """One entry per evidence span; a span copied to the survivor on a merge is listed once."""
    spans = reads.evidence(staging, concept_ids)
    places = reads.message_conversations(archive, [s.message_id for s in spans])
    titles = reads.conversation_titles(archive, places.values())
    entries: list[TimelineEntry] = []
    seen: set[tuple[str, str]] = set()
    for span in spans:
        if (span.message_id, span.text) in seen:
            continue
        seen.add((span.message_id, span.text))
        conversation = places.get(span.message_id)
        entries.append(
            TimelineEntry(
                kind="evidence",
                at=as_time(span.created_at),
                message_id=span.message_id,
                conversation_id=conversation,
                conversation_title=titles.get(conversation) if conversation else None,
                text=span.text,
                confidence=span.confidence,
            )
        )
    return entries


def fact_entries(
    staging: sqlite3.Connection, archive: sqlite3.Connection, concept_ids: Sequence[str]
) -> list[TimelineEntry]:
    """One entry per fact interval about the concept (its subject or its value), from the garden stage's bi-temporal
    facts: `at` is valid_from, `valid_to` when it stopped holding; retracted facts (no evidence left) are left out.

    Confidence follows recall's fact prior: 1 for a fact that holds, 0.5 for one a newer fact superseded."""
    records = {r.fact_id: r for c in concept_ids for r in fact_timeline.timeline(staging, concept_id=c)}
    kept = [r for r in records.values() if r.state != "retracted" and r.message_ids]
    places = reads.message_conversations(archive, [r.message_ids[0] for r in kept])
    titles = reads.conversation_titles(archive, places.values())
    entries = []
    for record in kept:
        conversation = places.get(record.message_ids[0])
        value = said_of_the_user(record.value)  # "their partner": said of the user, as the subject is
        value = value if record.polarity == "positive" else f"not {value}"
        entries.append(
            TimelineEntry(
                kind="fact",
                at=record.valid_from,
                message_id=record.message_ids[0],
                conversation_id=conversation,
                conversation_title=titles.get(conversation) if conversation else None,
                text=f"{record.subject} {record.attribute}: {value}",
                confidence=1.0 if record.state == "valid" else 0.5,
                valid_to=record.valid_to,
            )
        )
    return entries


TIMELINE_SOURCES: dict[str, TimelineSource] = {"evidence": evidence_entries, "fact": fact_entries}


def resolve_concept(concepts: dict[str, ConceptRow], name: str) -> ConceptRow:
    """The concept a name means: an id, else a title or alias (case and spacing ignored); merged ones followed."""
    if name in concepts:
        found = name
    else:
        wanted = fold(name)
        matches = sorted(
            {
                r.concept_id
                for r in concepts.values()
                if wanted in {fold(n) for n in (r.concept_id, r.title, *r.aliases)}
            }
        )
        if not matches:
            raise QueryError(f"unknown concept {name!r}: find its concept_id with search_concepts first")
        found = matches[0]
    return concepts[concept_store.survivor(concepts, found)]


def _utc(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def _order(entry: TimelineEntry) -> tuple[bool, datetime, str, str]:
    return (entry.at is None, entry.at or datetime.min.replace(tzinfo=UTC), entry.kind, entry.message_id)


def timeline(
    staging: sqlite3.Connection,
    archive: sqlite3.Connection,
    request: TimelineRequest,
    sources: dict[str, TimelineSource] | None = None,
    concepts: dict[str, ConceptRow] | None = None,
) -> TimelineResult:
    """The concept's entries from every source, oldest first (undated last), within since/until, at most limit.

    `concepts`: the store's rows when the caller holds them already (the server's concept catalog).
    """
    since, until = _utc(request.since), _utc(request.until)
    if since is not None and until is not None and since > until:
        # the same one line as recall's scope check: an empty window is a mistake, not "never mentioned"
        raise QueryError(f"since {since.isoformat()} is after until {until.isoformat()}")
    sources = TIMELINE_SOURCES if sources is None else sources
    if concepts is None:
        if not reads.has_concepts(staging):
            raise QueryError("no concepts in this memory yet: run the pipeline first (chatmem run EXPORT)")
        concepts = concept_store.load_concepts(staging)
    concept = resolve_concept(concepts, request.concept)
    merged = (
        c for c in concepts if c != concept.concept_id and concept_store.survivor(concepts, c) == concept.concept_id
    )
    members = [concept.concept_id, *sorted(merged)]
    entries = sorted((e for source in sources.values() for e in source(staging, archive, members)), key=_order)
    dated = [e.at for e in entries if e.at is not None]
    if since is not None or until is not None:  # undated entries cannot be placed in a window: left out
        entries = [
            e
            for e in entries
            if e.at is not None and (since is None or e.at >= since) and (until is None or e.at <= until)
        ]
    return TimelineResult(
        concept_id=concept.concept_id,
        title=concept.title,
        type=concept.type,
        state=concept.state,
        first_seen=min(dated) if dated else None,
        last_seen=max(dated) if dated else None,
        total=len(entries),
        entries=entries[: request.limit],
        kinds=[k for k in ("evidence", "fact") if k in sources and (k == "evidence" or reads.has_fact_rows(staging))],
    )
