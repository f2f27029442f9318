"""Facts: statements a user makes about themselves and their things, and their validity over time.

`Fact` is what an extractor proposes (the offline rules, or an LLM inside `ExtractionResponse.facts`): a subject,
an attribute, a value and a polarity, with one verbatim evidence span. It is defined in contracts/concepts.py
beside the response that carries it (one SCHEMA_VERSION for everything the LLM fills) and re-exported here.

`FactRecord` is what the garden stage keeps: one interval of validity of one fact, bi-temporal:
- event time: `valid_from` / `valid_to` (from the messages' timestamps; valid_to None: still valid);
- ingestion time: `recorded_at` / `invalidated_at` (when chatmem learned the fact, and when it learned that it
  stopped holding). Nothing is deleted: an invalidated fact stays queryable "as of" any date.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import Field

from contracts.base import StrictBase
from contracts.concepts import FACT_SCHEMA_VERSION, Fact, Polarity

FactState = Literal["valid", "superseded", "retracted"]
USER_SUBJECT = "user"

# Attributes with one value at a time: a new value closes the old one. Any other attribute is multi-valued (the
# user can learn Spanish and guitar at once), so only the same value with the other polarity contradicts it.
FUNCTIONAL_ATTRIBUTES = frozenset(
    {"lives in", "works at", "works as", "diet", "relationship status", "age", "name", "reading page", "model"}
)


def is_quantity(value: str) -> bool:
    """A count, amount, time or score ("15", "$400,000", "25:50", "12.8 seconds"): it starts with a number."""
    text = value.strip()
    return bool(text) and (text[0].isdigit() or (text[0] in "$£€" and text[1:2].isdigit()))


def quantity_kind(value: str) -> str:
    """What a quantity measures, as written: money, a clock time (25:50), its unit words ("minutes seconds"), or a
    plain number. Two quantities of different kinds are not two values of one thing ("12.8 seconds" of a drag race
    and "27:12" of a 5K run are both personal bests, of different things)."""
    text = value.strip().casefold()
    if text[:1] in ("$", "£", "€"):
        return "money"
    if re.match(r"^\d+:\d{2}", text):
        return "clock"
    units = sorted({word for word in re.findall(r"[a-z]+", text) if word != "and"})
    return " ".join(units) or "number"


def contradicts(attribute: str, old_value: str, old_positive: bool, new_value: str, new_positive: bool) -> bool:
    """Whether a newer statement (same subject and attribute) ends an older one. Values compared folded.

    The same value with the other polarity always does ("I eat meat" / "I no longer eat meat"). Two different
    positive values do when the attribute is functional ("lives in Paris" / "lives in Berlin") or both values
    are quantities of one kind ("on page 200" / "on page 220", "27:12" / "25:50"). Nothing else does: different
    subjects or attributes never reach this function, and a negative statement about one value says nothing
    about another.
    """
    same = " ".join(old_value.casefold().split()) == " ".join(new_value.casefold().split())
    if same:
        return old_positive != new_positive
    if not (old_positive and new_positive):
        return False
    if attribute in FUNCTIONAL_ATTRIBUTES:
        return True
    both = is_quantity(old_value) and is_quantity(new_value)
    return both and quantity_kind(old_value) == quantity_kind(new_value)


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
