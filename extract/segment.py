"""Segmentation: one conversation's active path cut into segments of consecutive messages. Pure and deterministic.

A segment ends when the next message would push it over the token budget (`estimate_tokens`: ceil(chars/4)),
or at a topic shift: before a user message (the turn that changes the subject), once the segment has
`min_tokens`, when the keyword cosine between the last `window` messages of the segment and the next `window`
messages falls below `shift_threshold`. Keywords are `extract.text.content_words` (stopwords out, plurals
folded), counted per window, with no corpus statistics: a boundary depends only on the messages around it,
so appending messages to a conversation leaves its earlier segments (and their cached extractions) as they
were. A message is never cut in two: evidence points at whole messages, and a single message over the budget
is a segment of its own.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from extract.text import content_words, cosine, estimate_tokens, short_hash

Boundary = Literal["start", "budget", "topic"]


@dataclass(frozen=True, slots=True)
class PathMessage:
    """One visible message of an active path, as the archive has it."""

    uuid: str
    role: str
    text: str
    created_at: str | None  # ISO 8601 UTC, as stored
    content_hash: str


@dataclass(frozen=True, slots=True)
class SegmentDraft:
    """A segment before it is stored: which messages, and the keys derived from them."""

    segment_id: str
    conversation_id: str
    ordinal: int
    boundary: Boundary  # why this segment starts where it does
    message_ids: tuple[str, ...]
    token_estimate: int
    content_hash: str
    first_time: str | None
    last_time: str | None


@dataclass(frozen=True, slots=True)
class SegmentParams:
    max_tokens: int = 1500
    min_tokens: int = 300
    window: int = 2
    shift_threshold: float = 0.1


def segment_id(conversation_id: str, first_uuid: str, last_uuid: str) -> str:
    """Stable: the same conversation and first/last message give the same id on every run."""
    return short_hash("segment", conversation_id, first_uuid, last_uuid)


def segment_content_hash(messages: Sequence[PathMessage]) -> str:
    """sha256 over each message's id, role and text digest: changes iff what an extractor sees changes."""
    digest = hashlib.sha256()
    for message in messages:
        digest.update(f"{message.uuid}\x1f{message.role}\x1f{message.content_hash}\x1e".encode())
    return digest.hexdigest()


def path_fingerprint(messages: Sequence[PathMessage], params: SegmentParams) -> str:
    """What decides a conversation's segments: its visible active path and the parameters."""
    digest = hashlib.sha256(repr(params).encode())
    for message in messages:
        digest.update(
            f"{message.uuid}\x1f{message.role}\x1f{message.content_hash}\x1f{message.created_at}\x1e".encode()
        )
    return digest.hexdigest()


def segment_conversation(
    conversation_id: str, messages: Sequence[PathMessage], params: SegmentParams
) -> list[SegmentDraft]:
    """Cut `messages` (the visible active path, in seq order) into segments."""
    if not messages:
        return []
    tokens = [estimate_tokens(m.text) for m in messages]
    bags = [Counter(content_words(m.text)) for m in messages]
    # Chats alternate user and assistant; a reply belongs with its question, so topic cuts go before user
    # turns. A source with no user role at all (a notes dump) may cut anywhere.
    any_user = any(m.role == "user" for m in messages)
    groups: list[tuple[Boundary, list[int]]] = [("start", [0])]
    used = tokens[0]
    for i in range(1, len(messages)):
        current = groups[-1][1]
        reason: Boundary | None = None
        if used + tokens[i] > params.max_tokens:
            reason = "budget"
        elif (
            params.shift_threshold > 0
            and used >= params.min_tokens
            and (messages[i].role == "user" or not any_user)
            and _shift(bags, current, i, params) < params.shift_threshold
        ):
            reason = "topic"
        if reason is None:
            current.append(i)
            used += tokens[i]
        elif reason == "budget" and _keeps_pair(messages, tokens, current, i, params.max_tokens):
            # A reply that does not fit takes its question along: a segment starting with an answer to a
            # question in another segment is hard to read, for a model and for a person.
            question = current.pop()
            groups.append((reason, [question, i]))
            used = tokens[question] + tokens[i]
        else:
            groups.append((reason, [i]))
            used = tokens[i]
    return [
        _draft(conversation_id, ordinal, boundary, [messages[i] for i in idx], sum(tokens[i] for i in idx))
        for ordinal, (boundary, idx) in enumerate(groups)
    ]


def _keeps_pair(
    messages: Sequence[PathMessage], tokens: list[int], current: list[int], i: int, max_tokens: int
) -> bool:
    last = current[-1]
    return (
        len(current) > 1
        and messages[i].role != "user"
        and messages[last].role == "user"
        and tokens[last] + tokens[i] <= max_tokens
    )


def _shift(bags: list[Counter[str]], current: list[int], i: int, params: SegmentParams) -> float:
    left: Counter[str] = Counter()
    for index in current[-params.window :]:
        left.update(bags[index])
    right: Counter[str] = Counter()
    for index in range(i, min(len(bags), i + params.window)):
        right.update(bags[index])
    if not left or not right:
        return 1.0  # nothing to compare (empty or stopword-only turns): no evidence of a shift
    return cosine(left, right)


def _draft(
    conversation_id: str, ordinal: int, boundary: Boundary, members: list[PathMessage], tokens: int
) -> SegmentDraft:
    times = sorted(m.created_at for m in members if m.created_at)
    return SegmentDraft(
        segment_id=segment_id(conversation_id, members[0].uuid, members[-1].uuid),
        conversation_id=conversation_id,
        ordinal=ordinal,
        boundary=boundary,
        message_ids=tuple(m.uuid for m in members),
        token_estimate=tokens,
        content_hash=segment_content_hash(members),
        first_time=times[0] if times else None,
        last_time=times[-1] if times else None,
    )
