"""The garden's fact rules and a plain fact record, without pydantic: what a recall process reads.

contracts/facts.py re-exports the rules and defines `FactRecord`, the pydantic model the garden stage, `chatmem
facts` and the MCP server use. A `chatmem recall` process reads every fact of the archive at each open
(memory.index.attach_facts); it takes `FactRow`, a dataclass with FactRecord's fields and the same values
(tests/test_recall_read_path.py keeps the two equal), so that it imports no pydantic (~0.25 CPU-s).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

FactState = Literal["valid", "superseded", "retracted"]
FactPolarity = Literal["positive", "negative"]  # = contracts.concepts.Polarity (a test keeps them equal)
USER_SUBJECT = "user"

# Attributes with one value at a time: a new value closes the old one. Any other attribute is multi-valued (the
# user can learn Spanish and guitar at once), so only the same value with the other polarity contradicts it.
FUNCTIONAL_ATTRIBUTES = frozenset(
    {"lives in", "works at", "works as", "diet", "relationship status", "age", "name", "reading page", "model"}
)


# A value keeps the user's own words ("plan a trip with my partner", "videos of me playing"): shown, they are said
# of the user, as the fact's subject is ("user goal plan a trip with their partner"). "they" agrees with the verbs
# the user wrote for "I" ("I want" / "they want"); "am"/"was" are the two that change. Only lowercase "us" (not the
# country, "US"), only a capital "I" (a lone "i" is more often a list item).
_FIRST_PERSON = {
    "i am": "they are",
    "i'm": "they're",
    "i was": "they were",
    "i've": "they've",
    "i'd": "they'd",
    "i'll": "they'll",
    "i": "they",
    "me": "them",
    "my": "their",
    "mine": "theirs",
    "myself": "themselves",
    "we": "they",
    "we're": "they're",
    "we've": "they've",
    "us": "them",
    "our": "their",
    "ours": "theirs",
    "ourselves": "themselves",
}
_FIRST_PERSON_WORD = re.compile(
    r"(?<![\w/'\u2019-])"
    r"(?:I(?: am|['\u2019](?:m|ve|d|ll)| was|(?= [a-z]))|[Mm](?:e|y|ine|yself)|[Ww]e(?:['\u2019](?:re|ve))?"
    r"|us|[Oo]urs?|[Oo]urselves)"
    r"(?![\w/'\u2019-])"
)


def said_of_the_user(value: str) -> str:
    """A fact's value as it is shown: the user's first person turned to the third ("my partner" -> "their
    partner", "I am a nurse" -> "they are a nurse"). The stored value (and --json) keeps the user's words."""

    def third(match: re.Match[str]) -> str:
        word = match.group(0)
        said = _FIRST_PERSON[word.replace("\u2019", "'").casefold()]
        return said[0].upper() + said[1:] if word[0].isupper() and word[0] != "I" else said

    return _FIRST_PERSON_WORD.sub(third, value)


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
    about another. garden/validity.py asks this only of an open interval's `_OpenIntervals.rivals`, which must stay a
    superset of the intervals this can say yes to: a change to the rule here changes that list there.
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


def _time(value: Any) -> datetime | None:
    """A stored ISO time as pydantic reads it into a datetime field (the same instant, offset and fields)."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


@dataclass
class FactRow:
    """contracts.facts.FactRecord's fields, read without pydantic (a recall's facts)."""

    fact_id: str
    subject: str
    attribute: str
    value: str
    polarity: FactPolarity
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime
    invalidated_at: datetime | None
    state: FactState
    superseded_by: str | None
    support: int
    last_stated: datetime | None
    message_ids: list[str]
    evidence: list[str]

    @classmethod
    def of(cls, values: dict[str, Any]) -> FactRow:
        """From a row of the facts table (message_ids and evidence already decoded), extra columns ignored."""
        recorded_at = _time(values["recorded_at"])
        assert recorded_at is not None  # NOT NULL in the table
        return cls(
            fact_id=str(values["fact_id"]),
            subject=str(values["subject"]),
            attribute=str(values["attribute"]),
            value=str(values["value"]),
            polarity=values["polarity"],
            valid_from=_time(values["valid_from"]),
            valid_to=_time(values["valid_to"]),
            recorded_at=recorded_at,
            invalidated_at=_time(values["invalidated_at"]),
            state=values["state"],
            superseded_by=values["superseded_by"],
            support=int(values["support"]),
            last_stated=_time(values["last_stated"]),
            message_ids=list(values["message_ids"]),
            evidence=list(values["evidence"]),
        )
