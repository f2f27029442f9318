"""Facts: statements a user makes about themselves and their things, and their validity over time.

`Fact` is what an extractor proposes (the offline rules, or an LLM inside `ExtractionResponse.facts`): a subject,
an attribute, a value and a polarity, with one verbatim evidence span. It is defined in contracts/concepts.py
beside the response that carries it (one SCHEMA_VERSION for everything the LLM fills) and re-exported here.

`FactRecord` is what the garden stage keeps: one interval of validity of one fact, bi-temporal:
- event time: `valid_from` / `valid_to` (from the messages' timestamps; valid_to None: still valid);
- ingestion time: `recorded_at` / `invalidated_at` (when chatmem learned the fact, and when it learned that it
  stopped holding). Nothing is deleted: an invalidated fact stays queryable "as of" any date.

The rules (`contradicts`, FUNCTIONAL_ATTRIBUTES, ...) live in contracts/fact_rules.py beside `FactRow`, the plain
twin of FactRecord a recall reads without pydantic; they are re-exported here.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from contracts.base import StrictBase
from contracts.concepts import FACT_SCHEMA_VERSION, Fact, Polarity
from contracts.fact_rules import (
    FUNCTIONAL_ATTRIBUTES,
    USER_SUBJECT,
    FactState,
    contradicts,
    is_quantity,
    quantity_kind,
)


class FactRecord(StrictBase):
    """One interval during which one fact held, as the garden stage keeps it (not LLM-facing)."""

    fact_id: str = Field(description="Stable id of this interval: subject, attribute, value, polarity, valid_from.")
    subject: str = Field(description="Folded subject, e.g. 'user' or the user's phone.")
    attribute: str = Field(description="Folded attribute ('lives in').")
    value: str = Field(description="The value as first stated.")
    polarity: Polarity = Field(description="positive or negative.")
    valid_from: datetime | None = Field(description="Event time of the first statement of this interval.")
    valid_to: datetime | None = Field(description="Event time of the statement that ended it; null while it holds.")
    recorded_at: datetime = Field(description="When chatmem first recorded the fact (ingestion time).")
    invalidated_at: datetime | None = Field(description="When chatmem recorded that it stopped holding, or null.")
    state: FactState = Field(description="valid, superseded (a newer fact closed it) or retracted (no evidence).")
    superseded_by: str | None = Field(description="The fact_id of the fact that closed this one, or null.")
    support: int = Field(description="How many statements support this interval (a restatement adds one).")
    last_stated: datetime | None = Field(description="Event time of the latest supporting statement.")
    message_ids: list[str] = Field(description="The messages that state it, oldest first.")
    evidence: list[str] = Field(description="The verbatim spans, in the same order.")


__all__ = [
    "FACT_SCHEMA_VERSION",
    "FUNCTIONAL_ATTRIBUTES",
    "USER_SUBJECT",
    "Fact",
    "FactRecord",
    "FactState",
    "Polarity",
    "contradicts",
    "is_quantity",
    "quantity_kind",
]
