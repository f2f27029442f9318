"""One-word candidates of a segment that are no concept: a name the segment's own code gives to its variables and
functions ("handleClick", "generateCards", `.appName("MyApp")`) that the user never says, and a word that can only
describe (an adjective or an adverb: "cohesive", "informational", "someday") or a day of the week ("Wednesdays").
Used by the offline extractor (extract/offline.py) on its candidates before they are scored; part of its rules
(bump OFFLINE_VERSION there with any change here).

An identifier the user says stays: the labelled sets list "Addition_V", "number_to_hex", "flatMap", "textFile" (the
user asks about them), and a library's API the replies name ("mapPartitions", "StructType", "DENSE_RANK") is called
by the code, not defined in it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from extract import lexicon

if TYPE_CHECKING:
    from extract.offline_candidates import _Candidate as Candidate
    from extract.offline_messages import _Message as Message

# An identifier's shape: an inner underscore ("My_table"), lower camel case with a word of two letters or more
# before the first capital ("handleClick"; "iPhone", "eBay" are brands), or upper camel case ("MyApp", where the
# code defines it: "DataFrame", "PostgreSQL" are names, and no conversation's code defines them).
_IDENTIFIER = re.compile(r"[^\W_]_[^\W_]|^[a-z]{2,}[A-Z]|^[A-Z][a-z]+[A-Z][a-z]")

_WEEKDAYS = frozenset(
    day + plural
    for day in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "weekday")
    for plural in ("", "s")
)

_DESCRIBING = frozenset(["ADJ", "ADV"])


def drop_lone_words(candidates: dict[tuple[str, ...], Candidate], messages: list[Message], title: str) -> None:
    """Drop the segment's own identifiers the user never says and the one-word candidates that only describe,
    unless the conversation's title names the word ("Implicit in Scala": Scala's `implicit`)."""
    texts = [m.message.text for m in messages]
    titled = set(re.findall(r"\w+", title.casefold()))
    for key in list(candidates):
        if len(key) != 1:
            continue
        candidate = candidates[key]
        lone = key[0] in _WEEKDAYS or (_describing(key[0]) and not candidate.coded and not _name(candidate))
        if lone and key[0] not in titled:
            del candidates[key]  # "Wednesdays", "Cohesive": a time, a quality, no subject
            continue
        if candidate.user_mentions() or candidate.coded:
            continue
        forms = [f for f in candidate.forms if not f.isupper() and _IDENTIFIER.search(f)]
        if any(_defined(form, texts) for form in forms):
            del candidates[key]


def _name(candidate: Candidate) -> bool:
    """Written as a name: with a capital inside its sentences more often than without ("Snappy" the codec)."""
    return candidate.named and candidate.cased_mid > candidate.lower_mid


@lru_cache(maxsize=1 << 14)
def _describing(word: str) -> bool:
    """A word the English lexicon knows only as an adjective or an adverb ("cohesive", "informational",
    "someday"); "atmospheric", "mute" are nouns too and stay."""
    tags = lexicon.parts_of_speech(word)
    return bool(tags) and tags <= _DESCRIBING


def _defined(form: str, texts: list[str]) -> bool:
    """Whether a message's code defines `form`: a function, class or variable it declares ("function handleClick(",
    "def cumulative_sum(", "My_table = ...") or a string literal it sets ('.appName("MyApp")')."""
    name = re.escape(form)
    pattern = re.compile(
        rf"\b(?:def|function|class|const|let|var|val|fun|func|struct|interface|type)\s+{name}\b"
        rf"|(?<![\w.]){name}\s*=(?!=)|\(\s*[\"']{name}[\"']\s*\)"
    )
    return any(form in text and pattern.search(text) for text in texts)
