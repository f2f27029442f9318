"""What the MCP server's tools take and return (besides `recall`, whose contract is contracts/memory.py).

    search_concepts   ConceptSearchRequest  -> ConceptSearchResult  (ConceptMatch, EvidenceRef)
    get_conversation  ConversationRequest   -> ConversationResult   (ConversationMessage)
    timeline          TimelineRequest       -> TimelineResult       (TimelineEntry)
    topics            TopicsRequest         -> TopicsResult         (TopicSummary)

An agent reads these descriptions to decide what to call and with what, so every field says what it means and
how to use it next (an id from one result is the argument of another tool). Bump MCP_SCHEMA_VERSION with any
change: the golden schemas under tests/golden check it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from contracts.base import StrictBase
from contracts.concepts import ConceptState, ConceptType
from contracts.memory import PLAIN_DATE_END, PLAIN_DATE_START, EndTime, StartTime

MCP_SCHEMA_VERSION = 4

# ---------------------------------------------------------------- search_concepts


class ConceptSearchRequest(StrictBase):
    """Find concepts (projects, goals, entities, events, ...) the memory extracted from the conversations."""

    query: str = Field(
        min_length=1,
        max_length=500,
        description="Words to look for in concept titles, aliases and descriptions, e.g. 'lisbon trip'.",
    )
    type: ConceptType | None = Field(default=None, description="Only concepts of this type; null: any type.")
    state: ConceptState | None = Field(
        default=None,
        description="Only concepts in this state; null: every state except 'merged' (a merged concept's evidence "
        "belongs to the concept it was merged into).",
    )
    limit: int = Field(default=10, ge=1, le=100, description="Most concepts returned, best match first.")
    evidence_limit: int = Field(
        default=5, ge=0, le=100, description="Most evidence mentions listed per concept, oldest first (0: none)."
    )


class EvidenceRef(StrictBase):
    """One message that supports a concept."""

    message_id: str = Field(description="The message's id: pass it to get_conversation as around_message_id.")
    conversation_id: str | None = Field(description="The conversation it is in (null if not in the archive).")
    created_at: datetime | None = Field(description="When the message was written, when known.")
    text: str = Field(description="The span of the message that supports the concept, verbatim.")
    confidence: float = Field(description="How strongly the span supports the concept, 0 to 1.")


class ConceptMatch(StrictBase):
    """A concept that matches the query, with the messages it was read from."""

    concept_id: str = Field(description="The concept's stable id: pass it to timeline as `concept`.")
    title: str = Field(description="The concept's name.")
    type: ConceptType = Field(description="What kind of concept it is.")
    state: ConceptState = Field(description="active, weak (little evidence yet), merged, split or archived.")
    description: str = Field(description="What the concept is, in a sentence or two.")
    aliases: list[str] = Field(description="Other names the conversations use for it.")
    confidence: float = Field(description="How well the evidence supports the concept, 0 to 1.")
    score: float = Field(description="How well it matches the query (BM25 over title, aliases, description).")
    first_seen: datetime | None = Field(description="Time of its earliest evidence, when known.")
    last_seen: datetime | None = Field(description="Time of its latest evidence, when known.")
    evidence_count: int = Field(ge=0, description="How many evidence mentions it has in all.")
    evidence: list[EvidenceRef] = Field(description="Its evidence mentions, oldest first, at most evidence_limit.")
    merged_into: str | None = Field(description="For a merged concept: the concept_id that absorbed it.")


class ConceptSearchResult(StrictBase):
    """Concepts matching a query, best first."""

    query: str = Field(description="The query searched for.")
    matches: int = Field(ge=0, description="How many concepts matched before the limit.")
    concepts: list[ConceptMatch] = Field(description="The best matches, best first.")


# ---------------------------------------------------------------- get_conversation


class ConversationRequest(StrictBase):
    """Read a conversation along its active path (the branch the user kept), or a window of it."""

    conversation_id: str = Field(
        min_length=1, description="The conversation's id, as returned by recall, search_concepts or timeline."
    )
    around_message_id: str | None = Field(
        default=None,
        description="Center the result on this message (with `window` messages before and after it); "
        "null: read from the start (or from `offset`).",
    )
    window: int = Field(
        default=5, ge=0, le=200, description="With around_message_id: messages shown before and after it."
    )
    offset: int = Field(
        default=0, ge=0, description="Without around_message_id: messages of the path to skip (for paging)."
    )
    limit: int = Field(default=50, ge=1, le=500, description="Most messages returned.")
    raw: bool = Field(
        default=False,
        description="false: each message as recall shows it (a model's private notes left out, an artifact by its "
        "title with its code cut, a long code block cut, a tool's result on one line); true: as stored in the "
        "archive, markup, notes and whole code included.",
    )


class ConversationMessage(StrictBase):
    """One message on the conversation's active path."""

    message_id: str = Field(description="The message's id.")
    position: int = Field(ge=0, description="Its place along the active path, 0 for the first message.")
    role: str = Field(description="Who wrote it: user, assistant, system, tool or other.")
    author: str | None = Field(description="A display name (a model, a tool, a person), when the export had one.")
    created_at: datetime | None = Field(description="When it was written, when known.")
    text: str = Field(
        description="The message text as recall shows it (as stored in the archive with raw=true); a very long one "
        "is cut after its first part, with a marker at the end saying how much was left out (full_tokens set)."
    )
    full_tokens: int | None = Field(
        description="Set when `text` was cut (the message is too long to return whole): the whole message's size in "
        "estimated tokens. recall with the words you look for shows a window of the rest around them."
    )


class ConversationResult(StrictBase):
    """A conversation's messages in order, and where they sit in the whole path."""

    conversation_id: str = Field(description="The conversation's id.")
    title: str | None = Field(description="Its title, when the export had one.")
    source: str = Field(description="The export format it was imported from (chatgpt, claude, jsonl, ...).")
    created_at: datetime | None = Field(description="When the conversation started, when known.")
    path_length: int = Field(ge=0, description="How many visible messages its active path has in all.")
    messages: list[ConversationMessage] = Field(description="The messages returned, in conversation order.")
    more_before: bool = Field(description="True when the path has earlier messages than those returned.")
    more_after: bool = Field(description="True when the path has later messages than those returned.")


# ---------------------------------------------------------------- timeline


class TimelineRequest(StrictBase):
    """How a concept shows up over time."""

    concept: str = Field(
        min_length=1,
        description="A concept_id (from search_concepts), or a concept's exact title or alias (case is ignored).",
    )
    since: StartTime = Field(
        default=None, description="Only entries at or after this time; null: no limit." + PLAIN_DATE_START
    )
    until: EndTime = Field(
        default=None, description="Only entries at or before this time; null: no limit." + PLAIN_DATE_END
    )
    limit: int = Field(default=100, ge=1, le=1000, description="Most entries returned, oldest first.")


class TimelineEntry(StrictBase):
    """One dated mention of the concept (evidence), or one fact about it (facts come with the garden stage)."""

    kind: Literal["evidence", "fact"] = Field(
        description="evidence: a message that mentions the concept; fact: a statement about it with a validity "
        "interval (only in memories whose pipeline records facts)."
    )
    at: datetime | None = Field(description="When: the message time for evidence, valid_from for a fact.")
    message_id: str = Field(description="The message the entry comes from: pass it to get_conversation.")
    conversation_id: str | None = Field(description="The conversation that message is in.")
    conversation_title: str | None = Field(description="That conversation's title, when known.")
    text: str = Field(description="The evidence span verbatim, or the fact's statement.")
    confidence: float = Field(description="How sure the entry is, 0 to 1.")
    valid_to: datetime | None = Field(
        default=None, description="For a fact: when it stopped being true (null: still true, or evidence)."
    )


class TimelineResult(StrictBase):
    """A concept's dated mentions (and facts), oldest first."""

    concept_id: str = Field(description="The concept the timeline is about (a merged concept's survivor).")
    title: str = Field(description="Its name.")
    type: ConceptType = Field(description="What kind of concept it is.")
    state: ConceptState = Field(description="Its state now.")
    first_seen: datetime | None = Field(description="Its earliest dated entry overall (not only those returned).")
    last_seen: datetime | None = Field(description="Its latest dated entry overall.")
    total: int = Field(ge=0, description="How many entries match since/until before the limit.")
    entries: list[TimelineEntry] = Field(description="The entries, oldest first; undated ones last.")
    kinds: list[Literal["evidence", "fact"]] = Field(
        description="Which kinds of entries this memory has for timelines (facts only once they are recorded)."
    )


# ---------------------------------------------------------------- topics


class TopicsRequest(StrictBase):
    """The topics the conversations cluster into."""

    limit: int = Field(default=50, ge=1, le=1000, description="Most topics returned, largest first.")
    keywords: int = Field(default=8, ge=1, le=50, description="Most keywords listed per topic.")


class TopicSummary(StrictBase):
    """One topic: a cluster of conversation segments."""

    topic: int = Field(ge=0, description="The topic's number within its clustering run.")
    topic_uid: str = Field(description="A stable id: the same member segments keep the same id across runs.")
    label: str = Field(description="A short label (the top keywords, or an LLM label when configured).")
    size: int = Field(ge=0, description="How many segments belong to it.")
    keywords: list[str] = Field(description="Its most characteristic words (c-TF-IDF), best first.")
    conversation_ids: list[str] = Field(
        description="Conversations of its representative segments: read them with get_conversation."
    )
    concepts: list[str] = Field(description="Titles of concepts most linked to the topic, strongest first (≤ 5).")


class TopicsResult(StrictBase):
    """The latest clustering run's topics."""

    run_id: str | None = Field(description="The clustering run shown (null: nothing has been clustered yet).")
    outlier_share: float | None = Field(description="Share of segments that fit no topic, 0 to 1, when known.")
    topics: list[TopicSummary] = Field(description="The topics, largest first.")
    note: str | None = Field(description="Why there are no topics, when there are none.")
