"""One-word candidates of a segment that are no concept: a name the segment's own code gives to its variables and
functions ("handleClick", "generateCards", `.appName("MyApp")`) that the user never says, and a day of the week
("on Mondays and Wednesdays").
Used by the offline extractor (extract/offline.py) on its candidates before they are scored; part of its rules
(bump OFFLINE_VERSION there with any change here).

An identifier the user says stays: the labelled sets list "Addition_V", "number_to_hex", "flatMap", "textFile" (the
user asks about them), and a library's API the replies name ("mapPartitions", "StructType", "DENSE_RANK") is called
by the code, not defined in it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from extract.offline_candidates import _Candidate as Candidate
    from extract.offline_messages import _Message as Message

# An identifier's shape: an inner underscore ("My_table"), lower camel case with a word of two letters or more
# before the first capital ("handleClick"; "iPhone", "eBay" are brands), or upper camel case ("MyApp", where the
# code defines it: "DataFrame", "PostgreSQL" are names, which code declares values of ("df: DataFrame = ..."),
# never defines).
_IDENTIFIER = re.compile(r"[^\W_]_[^\W_]|^[a-z]{2,}[A-Z]|^[A-Z][a-z]+[A-Z][a-z]")

_WEEKDAYS = frozenset(
    day + plural
    for day in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "weekday")
    for plural in ("", "s")
)


def drop_lone_words(candidates: dict[tuple[str, ...], Candidate], messages: list[Message]) -> None:
    """Drop the days of the week and the segment's own identifiers the user never says."""
    texts = [m.message.text for m in messages]
    for key in list(candidates):
        if len(key) != 1:
            continue
        candidate = candidates[key]
        if key[0] in _WEEKDAYS:
            del candidates[key]  # "on Mondays and Wednesdays": when, not what
            continue
        if candidate.user_mentions() or candidate.coded:
            continue
        forms = [f for f in candidate.forms if not f.isupper() and _IDENTIFIER.search(f)]
        if any(_defined(form, texts) for form in forms):
            del candidates[key]


def _defined(form: str, texts: list[str]) -> bool:
    """Whether a message's code defines `form`: a function, class or variable it declares ("function handleClick(",
    "def cumulative_sum(", a line "My_table = ...") or a string literal it sets ('.appName("MyApp")')."""
    name = re.escape(form)
    pattern = re.compile(
        rf"\b(?:def|function|class|object|const|let|var|val|fun|func|struct|interface|type)\s+{name}\b"
        rf"|^[ \t]*{name}[ \t]*=(?!=)|\(\s*[\"']{name}[\"']\s*\)",
        re.MULTILINE,
    )
    return any(form in text and pattern.search(text) for text in texts)
