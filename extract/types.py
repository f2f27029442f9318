"""What an extractor receives and returns. The offline extractor and the LLM extractor both implement
`Extractor`; the extract stage does not care which one it has.

    stage ──SegmentInput──▶ Extractor.extract_many ──(SegmentInput, ExtractionOutput | ExtractionFailure)──▶
          semantic mapper (verifies every evidence span against the real message) ──▶ staging
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from clients.usage import Usage
from contracts.concepts import ConceptHypothesis
from contracts.facts import Fact


@dataclass(frozen=True, slots=True)
class SegmentMessage:
    message_id: str
    role: str
    text: str
    created_at: datetime | None


@dataclass(frozen=True, slots=True)
class SegmentInput:
    """One segment to extract from: consecutive messages of one conversation's active path."""

    segment_id: str
    conversation_id: str
    title: str | None
    messages: tuple[SegmentMessage, ...]
    content_hash: str  # of the segment's message ids and texts: the cache key's first part


@dataclass(slots=True)
class ExtractionOutput:
    """What the extractor proposed for one segment, before the semantic mapper checks it."""

    hypotheses: list[ConceptHypothesis]
    usage: Usage = field(default_factory=Usage)
    raw_response: str | None = None  # the model's raw text (LLM only), kept in staging for inspection
    facts: list[Fact] = field(default_factory=list)  # checked by extract.fact_mapper, like the hypotheses


@dataclass(slots=True)
class ExtractionFailure:
    """A segment the extractor could not handle (contract violation, refusal, retries exhausted)."""

    reason: str
    raw_response: str | None = None
    usage: Usage = field(default_factory=Usage)
    # Set when the endpoint refused the API key (401, 403): the line that says so, for the stage's extractor to
    # stop sending (the result may come from a worker process, extract/batch_job.py)
    key_refused: str | None = None


@dataclass(slots=True)
class SegmentNotDone(ExtractionFailure):
    """Not attempted because the budget ran out first or the endpoint refused the key (or a batch job is still
    running). Not the segment's fault and no failure of the stage: a re-run picks it up, and the next run does
    not skip the stage as unchanged."""


class Extractor(Protocol):
    name: str  # "offline" or "llm"
    # Everything besides the segment that changes the output: prompt version, schema version, model,
    # reasoning effort. An extraction is cached by (segment content_hash, *cache_key_parts).
    cache_key_parts: tuple[str, ...]

    def extract_many(
        self, segments: Sequence[SegmentInput]
    ) -> Iterator[tuple[SegmentInput, ExtractionOutput | ExtractionFailure]]:
        """Extract every segment (in any order, possibly concurrently); one result per segment."""
        ...
