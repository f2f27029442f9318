"""What an agent sends to recall and what it gets back: the reconstructed context, piece by piece.

    RecallRequest  -> the question, the moment it is asked (`at`), a scope and a token budget
    RecallResult   -> pieces best first (or in conversation order), each with where it came from and why
      RecallPiece
        ActivationStep  one hop of the path (query -> cue -> tag -> content) that brought the piece
      RecallFact        a fact the garden recorded about the question, with when it held

Nothing said after `at` ever comes back, and temporal decay is measured from `at`, never from the wall clock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field

from contracts.base import StrictBase
from contracts.times import parse_iso_time

NodeKind = Literal["query", "cue", "tag", "content"]


def _reader(end_of_day: bool) -> BeforeValidator:
    def read(value: object) -> object:
        if isinstance(value, int | float):  # bool too: pydantic would read 12345 as seconds since 1970
            raise ValueError("expected an ISO date such as 2024-05-01 or 2024-05-01T09:00, not a number")
        if not isinstance(value, str):
            return value  # a datetime already (the CLI parsed it), or something pydantic will reject
        try:
            return parse_iso_time(value, end_of_day=end_of_day)
        except ValueError:
            return value  # pydantic says what is wrong with it

    return BeforeValidator(read)


# A moment given as text to a contract: a plain date is the start (StartTime) or the end (EndTime) of that day.
StartTime = Annotated[datetime | None, _reader(end_of_day=False)]
EndTime = Annotated[datetime | None, _reader(end_of_day=True)]
PLAIN_DATE_START = " A plain date (2024-05-01) means the start of that day (UTC when no zone is given)."
PLAIN_DATE_END = " A plain date (2024-05-01) means the end of that day (UTC when no zone is given)."

# The largest token budget a recall accepts: the request contract, the CLI options and recall.budget_tokens share it,
# so an over-large budget is a one-line usage error wherever it is given, never a validation traceback.
MAX_BUDGET_TOKENS = 200_000


class RecallScope(StrictBase):
    """Which part of the memory a recall may search. Empty lists mean no restriction."""

    conversation_ids: list[str] = Field(
        default_factory=list, description="Only these conversations (ids as stored in archive.db)."
    )
    sources: list[str] = Field(
        default_factory=list, description="Only conversations imported from these export formats (e.g. chatgpt, jsonl)."
    )
    since: StartTime = Field(default=None, description="Only content written at or after this time." + PLAIN_DATE_START)
    until: EndTime = Field(default=None, description="Only content written at or before this time." + PLAIN_DATE_END)


class RecallRequest(StrictBase):
    """A question to reconstruct memory for."""

    query: str = Field(min_length=1, description="The question or topic, in natural language.")
    at: EndTime = Field(
        default=None,
        description="Recall the memory as it stood at this moment: content written later is never returned and "
        "decay is measured from here. Null: the newest content time in the memory." + PLAIN_DATE_END,
    )
    budget_tokens: int = Field(
        default=2000, ge=1, le=MAX_BUDGET_TOKENS, description="Most tokens (estimated) of content text in the result."
    )
    scope: RecallScope = Field(default_factory=RecallScope, description="Restrict the search; empty: everything.")
    max_pieces: int = Field(
        default=50,
        ge=1,
        le=1000,
        description="Most pieces in the result; a user's message and the reply shown after it count as one.",
    )
    order: Literal["relevance", "time"] = Field(
        default="relevance",
        description="relevance: the best piece first (rank order); time: the reading view, conversations by their "
        "first piece's time and pieces along each conversation. The same pieces either way.",
    )


class ActivationStep(StrictBase):
    """One node on the path that activated a piece."""

    kind: NodeKind = Field(description="query, cue (an anchor), tag (a grouping) or content.")
    id: str = Field(description="The node's id (cue id, tag id, content id; 'query' for the query).")
    label: str = Field(description="What the node says: a cue name, a tag label, the start of the content.")
    score: float = Field(description="Activation reaching this node along the path.")


class RecallPiece(StrictBase):
    """One piece of reconstructed context: a message (or a merged group of near-identical messages)."""

    content_id: str = Field(description="The content node's id (a message uuid, or merged:<hash> for a group).")
    message_ids: list[str] = Field(description="The archive message(s) this piece stands for, oldest first.")
    conversation_id: str = Field(description="The conversation it belongs to.")
    conversation_title: str | None = Field(default=None, description="That conversation's title, when known.")
    seq: int = Field(description="Position along the conversation's active path (NEXT order).")
    role: str = Field(description="Who wrote it: user, assistant, system, tool or other.")
    created_at: datetime | None = Field(default=None, description="When it was written, when known.")
    text: str = Field(description="The content text, as stored in the archive.")
    tokens: int = Field(ge=0, description="Estimated tokens of `text` (what counts against the budget).")
    score: float = Field(description="Final activation; higher is more relevant.")
    rank: int = Field(ge=1, description="Rank by score among all activated content (1 = best).")
    weak: bool = Field(
        default=False,
        description="True when the piece (its text and the names of its cues) holds less than half of the query's "
        "information, its words weighted by rarity in this memory: it shares a common word or the meaning at best, "
        "and may be unrelated.",
    )
    path: list[ActivationStep] = Field(description="The strongest activation path, query first, this piece last.")
    full_tokens: int | None = Field(
        default=None,
        description="Set when the piece was too big for the budget left: its whole size in tokens, and `text` is a "
        "window of it around the query's words ('…' where cut). A larger budget_tokens (or get_conversation, up "
        "to its cap on one message's size) shows it whole.",
    )
    reply_to: str | None = Field(
        default=None,
        description="Set on the assistant's reply to a user's message the answer holds: that message's content_id. "
        "It comes right after it, whatever its own rank (at most a sixth of the budget: a window around the query's "
        "words when longer, full_tokens set), so the answer shows what the user was told, not only what they asked.",
    )


class RecallFact(StrictBase):
    """A fact the garden recorded about the question (contracts.facts.FactRecord), as it stood at `at`."""

    subject: str = Field(description="Whom it is about ('user', or a thing the user has).")
    attribute: str = Field(description="What it says of the subject ('lives in').")
    value: str = Field(description="The value as stated ('Berlin').")
    polarity: Literal["positive", "negative"] = Field(description="negative: the user said it is not so.")
    valid_from: datetime | None = Field(description="When it was first stated (event time).")
    valid_to: datetime | None = Field(
        description="When a newer statement ended it, if that happened by `at`; null: it still held at `at`."
    )
    superseded: bool = Field(description="True when a newer statement replaced it by `at` (then read valid_to).")
    message_ids: list[str] = Field(description="The messages that state it, oldest first.")
    line: str = Field(description="The fact in one line, e.g. 'user lives in Berlin since 2023-05-02'.")


class ExpandTag(StrictBase):
    """A conversation tag the first pass activated, as the expand-or-stop step shows it to the LLM."""

    tag_id: str = Field(description="The tag's id, conv:<conversation id>.")
    title: str = Field(description="The conversation's title, or its id.")
    activation: float = Field(description="The tag's pooled activation, 0..1 (1 = the best tag).")
    recalled: list[str] = Field(description="The starts of its pieces already in the context.")
    more: int = Field(ge=0, description="How many more of its messages were activated but are not in the context.")


class ExpandRequest(StrictBase):
    """What the LLM sees: the question and the top tags of the first pass."""

    question: str
    tags: list[ExpandTag]


class ExpandDecision(StrictBase):
    """Expand a tag (bring more of its conversation into the context) or stop there."""

    tag_id: str = Field(description="One of the tag ids of the request.")
    action: Literal["expand", "stop"] = Field(description="expand: more of this conversation; stop: enough.")
    reason: str = Field(max_length=300, description="Why, in a few words.")


class ExpandResponse(StrictBase):
    """The LLM's answer: one decision per tag of the request."""

    decisions: list[ExpandDecision]


class ExpandOutcome(StrictBase):
    """What the expand-or-stop step did to this recall."""

    decided_by: Literal["llm", "default"] = Field(
        description="llm: the model's answer was used; default: the deterministic rule (stop everywhere: the first "
        "pass stands), because no LLM is configured, the step is off, or the answer was unusable."
    )
    decisions: list[ExpandDecision] = Field(description="One per top tag.")
    fallback_reason: str | None = Field(default=None, description="Why the LLM's answer was not used, if it was not.")


class RecallResult(StrictBase):
    """The reconstructed context: best piece first, or in conversation order (`RecallRequest.order`)."""

    query: str = Field(description="The question asked.")
    at: datetime | None = Field(description="The moment recalled (nothing later was considered).")
    pieces: list[RecallPiece] = Field(
        description="The pieces: best first (order=relevance), or along each conversation (order=time)."
    )
    order: Literal["relevance", "time"] = Field(default="relevance", description="How `pieces` are ordered.")
    tokens: int = Field(ge=0, description="Total estimated tokens of the pieces' text.")
    budget_tokens: int = Field(ge=1, description="The budget the pieces had to fit.")
    candidates: int = Field(ge=0, description="Content nodes that were in scope and activated at all.")
    cues: list[ActivationStep] = Field(description="The cues the query activated, strongest first.")
    time_filter: str | None = Field(
        default=None, description="The explicit time expression found in the query and the range it meant, if any."
    )
    facts: list[RecallFact] = Field(
        default_factory=list,
        description="The garden's facts about the question as they stood at `at`: the ones that held then first, "
        "then the ones superseded by then (superseded=true, valid_to set).",
    )
    fact_changes: list[str] = Field(
        default_factory=list,
        description="How those facts changed over time, one line per subject and attribute "
        "('user lives in: Paris from 2022-01-10 until 2023-05-02, Berlin since 2023-05-02').",
    )
    expansion: ExpandOutcome | None = Field(
        default=None, description="The expand-or-stop step over the top conversation tags, when it ran."
    )
    empty_reason: str | None = Field(
        default=None,
        description="Why no piece came back when none did (nothing in scope, or nothing relevant enough).",
    )
    weak_reason: str | None = Field(
        default=None,
        description="Set when every piece is weak (see RecallPiece.weak): why the answer may be unrelated.",
    )
    budget_note: str | None = Field(
        default=None,
        description="Set when the budget changed the answer: which pieces are windows of a larger one "
        "(RecallPiece.full_tokens) and which better pieces were left out as too big, with how to see them.",
    )
