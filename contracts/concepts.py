"""The seed ontology: typed concept hypotheses with evidence that points at real messages.

These models are what the extraction stage produces (from an LLM with strict structured outputs, or from
the offline extractor) after the semantic mapper has checked them. Every field carries a description: it is
the guidance the model reads. Every field is required (optional values are `null` unions), so the JSON
schema passes `contracts.schema_check.assert_strict_model`. Bump SCHEMA_VERSION with any change.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from contracts.base import StrictBase

SCHEMA_VERSION = 2  # 2: ExtractionResponse.facts
FACT_SCHEMA_VERSION = SCHEMA_VERSION  # the Fact model is part of the same LLM-facing schema

ConceptType = Literal["behavioral_pattern", "project", "event", "tension", "goal", "belief", "entity"]
ConceptState = Literal["active", "weak", "merged", "split", "archived"]
Polarity = Literal["positive", "negative"]
RelationType = Literal["causes", "conflicts_with", "supports", "instance_of", "enables"]

CONCEPT_TYPES: tuple[str, ...] = ConceptType.__args__  # type: ignore[attr-defined]
CONCEPT_STATES: tuple[str, ...] = ConceptState.__args__  # type: ignore[attr-defined]
RELATION_TYPES: tuple[str, ...] = RelationType.__args__  # type: ignore[attr-defined]


class EvidenceSpan(StrictBase):
    """A verbatim piece of one message that supports a concept."""

    source_id: str = Field(description="The segment the evidence was read from (its id, as given in the prompt).")
    message_id: str = Field(description="The id of the message the text is copied from, exactly as given.")
    text: str = Field(description="A short span copied verbatim from that message (a few words to a sentence).")
    confidence: float = Field(description="How strongly this span supports the concept, from 0 to 1.")


class ConceptRelation(StrictBase):
    """A typed link from this concept to another known concept."""

    target_id: str = Field(description="The concept_id (or exact title) of the other concept.")
    relation: RelationType = Field(
        description="causes, conflicts_with, supports, instance_of (this is an example of the target) or enables."
    )
    confidence: float = Field(description="How sure the relation is, from 0 to 1.")


class ConceptHypothesis(StrictBase):
    """A concept the conversations suggest about the user: a project, a goal, a belief, a recurring pattern."""

    concept_id: str = Field(description="A stable id: lowercase words joined by hyphens, e.g. 'kitchen-renovation'.")
    title: str = Field(description="A short name for the concept, 2 to 6 words.")
    type: ConceptType = Field(
        description="behavioral_pattern (a recurring habit), project (sustained work toward an outcome), event "
        "(something that happened at a time), tension (a conflict or dilemma), goal (a desired outcome), "
        "belief (a held view), entity (a person, place, tool or organisation)."
    )
    description: str = Field(description="One or two sentences on what the concept is, grounded in the evidence.")
    state: ConceptState = Field(
        description="active for a new or supported concept; weak, merged, split, archived are set by chatmem."
    )
    confidence: float = Field(description="How well the evidence supports the concept, from 0 to 1.")
    aliases: list[str] = Field(description="Other names the conversations use for the same concept.")
    evidence_spans: list[EvidenceSpan] = Field(description="Verbatim spans that support the concept; at least one.")
    relations: list[ConceptRelation] = Field(description="Links to other concepts; may be empty.")
    revision_count: int = Field(description="How many times chatmem revised the concept; 0 when new.")
    first_seen: datetime | None = Field(description="Time of the earliest evidence, or null if unknown.")
    last_seen: datetime | None = Field(description="Time of the latest evidence, or null if unknown.")


class Fact(StrictBase):
    """One thing the user states about themselves or one of their things, as they said it."""

    subject: str = Field(
        description="Who or what the fact is about: 'user' for the user themselves, else the user's thing or person "
        "in a few words, e.g. 'user's phone', 'user's sister'."
    )
    attribute: str = Field(
        description="What about the subject, as a short lowercase verb or noun phrase, e.g. 'lives in', 'works at', "
        "'model' (of the user's phone), 'eats', 'is learning'."
    )
    value: str = Field(description="The value, copied from the message where possible, e.g. 'Berlin', 'Pixel 8'.")
    polarity: Polarity = Field(
        description="positive when the statement holds ('I eat meat'); negative when the user says it does not or "
        "no longer holds ('I no longer eat meat', 'I quit my job at X')."
    )
    evidence: EvidenceSpan = Field(description="The verbatim span of the user's message that states the fact.")
    confidence: float = Field(description="How clearly the message states the fact, from 0 to 1.")


class ExtractionResponse(StrictBase):
    """What an extractor returns for one segment: the JSON object an LLM is asked for (strict schema)."""

    hypotheses: list[ConceptHypothesis] = Field(
        description="The concepts this segment shows about the user; an empty list when there is nothing worth "
        "remembering."
    )
    facts: list[Fact] = Field(
        description="Facts the user states about themselves or their things in their own messages (where they "
        "live, work, what they own, use, eat, learn; a count or score they give); an empty list when there are none."
    )
