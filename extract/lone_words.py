"""Candidates of a segment that are no concept: a name the segment's own code gives to its variables and
functions ("handleClick", "generateCards", `.appName("MyApp")`) that the user never says, a day of the week ("on
Mondays and Wednesdays"), a piece of a longer name the name rules cut ("Zealand" of "New Zealand", "Gen" of "Next
Gen", "Ticket" of "Ticket to Ride"), a word used as a verb or a modifier in every mention ("to complement the
sofa", "spotting a Quetzal", "a cohesive look"), an abbreviation of a word the segment writes whole ("Wis" of
"Wisdom", "Cha" of "Charisma"), a quoted example sentence ('"The dog runs."') and an item of a numbered set
("store 10").
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
from extract.text import is_stopword
from extract.word_kinds import NOT_NAMES

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
    """Drop the days of the week, the segment's own identifiers the user never says, pieces of longer names, words
    used as a verb or a modifier in every mention, abbreviations, quoted example sentences and numbered items."""
    texts = [m.message.text for m in messages]
    capitals = _Capitals(messages)
    _drop_descriptions(candidates)
    for key in list(candidates):
        candidate = candidates[key]
        if len(key) != 1:
            if _example_sentence(candidate) or _numbered_item(candidate, candidates.get(key[:1]), texts):
                del candidates[key]
            continue
        if key[0] in _WEEKDAYS:
            del candidates[key]  # "on Mondays and Wednesdays": when, not what
            continue
        if _piece_of_name(candidate) or _verb_or_modifier(candidate) or _abbreviation(candidate, capitals):
            del candidates[key]
            continue
        if candidate.user_mentions() or candidate.coded:
            continue
        forms = [f for f in candidate.forms if not f.isupper() and _IDENTIFIER.search(f)]
        if any(_defined(form, texts) for form in forms):
            del candidates[key]


def _defined(form: str, texts: list[str]) -> bool:
    """Whether a message's code defines `form`: a function, class or variable it declares ("function handleClick(",
    "def cumulative_sum(", a line "My_table = ...") or a string literal it sets ('.appName("MyApp")')."""
    return any(form in text and _definition(form).search(text) for text in texts)


@lru_cache(maxsize=1 << 12)
def _definition(form: str) -> re.Pattern[str]:
    """`_defined`'s pattern for one form, compiled once per form (a compile costs more than the search, and the
    same identifiers come back segment after segment; re's own cache holds 512 patterns of all callers)."""
    name = re.escape(form)
    return re.compile(
        rf"\b(?:def|function|class|object|const|let|var|val|fun|func|struct|interface|type)\s+{name}\b"
        rf"|^[ \t]*{name}[ \t]*=(?!=)|\(\s*[\"']{name}[\"']\s*\)",
        re.MULTILINE,
    )


# A name's word the name rules do not take, then the word a candidate is: "New Zealand" ("new" opens no name alone
# and the acronym "NZ" may take the name's mentions), "Stranger Things" ("things" a stop word), "Next Gen" ("next"
# opens no name), "Ticket to Ride" (a lower-case "to" inside).
_WORD_BEFORE = re.compile(r"([A-Z][\w'’-]*)[ \t]+$")


_WORD_AFTER = re.compile(r"[ \t]+((?:to|of|the)[ \t]+)?([A-Z][\w'’-]*)")


# What opens a sentence before a word: its capital says nothing there.
_SENTENCE_OPEN = re.compile(r"(?:^|[.!?:;\n])[\s\"“'*(\[#>-]*$")


def _piece_of_name(candidate: Candidate) -> bool:
    """A word in title case that the segment writes, every time, beside the same title-case word that no name rule
    takes alone ("New" of "New Zealand", "Things" of "Stranger Things", "Next" of "Next Gen", "to Ride" of "Ticket
    to Ride"): a piece of a longer name, which is what a person would list, not the piece. A name the rules take
    whole ("Apache Spark") holds its words' mentions already (offline_scoring._inside_longer)."""
    if not candidate.named or not candidate.mentions or candidate.coded:
        return False
    shared: set[tuple[str, str]] | None = None
    mid: set[str] = set()  # the words before it seen inside a sentence at least once ("trip to New Zealand")
    for message, start, end in candidate.mentions:
        view = message.view
        if not view[start : start + 1].isupper() or view[start + 1 : end].lower() != view[start + 1 : end]:
            return False  # written in lower case ("a ticket"), or an acronym ("NZ"): a word of its own
        found = set()
        before = _WORD_BEFORE.search(view, max(0, start - 40), start)
        if before and before.group(1).casefold() not in _ARTICLES and _no_name_alone(before.group(1)):
            found.add(("before", before.group(1).casefold()))
            if not _SENTENCE_OPEN.search(view, max(0, before.start() - 40), before.start()):
                mid.add(before.group(1).casefold())
        after = _WORD_AFTER.match(view, end)
        if after and (after.group(1) or _no_name_alone(after.group(2))):
            found.add(("after", ((after.group(1) or "") + after.group(2)).casefold()))
        shared = found if shared is None else shared & found
        if not shared:
            return False
    # "If Kafka ...": a stop word opening a sentence says nothing; "New Zealand" is said so inside one too
    shared = {(side, word) for side, word in shared or () if side == "after" or word in mid}
    return bool(shared) and (len(candidate.mentions) > 1 or not any(" " in w for _, w in shared))


# An article before a name is no part of it a person lists ("The Expanse" is listed as "Expanse" as well).
_ARTICLES = frozenset(("the", "a", "an"))


def _no_name_alone(word: str) -> bool:
    """A word no name rule takes alone: a stop word ("New", "Things") or one that opens no name ("Next")."""
    lower = word.casefold()
    return lower in NOT_NAMES or is_stopword(lower)


# Words that open the object of a verb ("to complement the sofa", "spotting a Quetzal", "spotting one").
_OBJECT_OPENERS_TEXT = (
    "the a an this that these those my your his her its our their one some any certain each every another all both"
    " it them him me us you several such"
)


_OBJECT_OPENERS = frozenset(_OBJECT_OPENERS_TEXT.split())


_NEXT_WORD = re.compile(r"[ \t]+([^\W\d_][\w'’-]*)")


def _verb_or_modifier(candidate: Candidate) -> bool:
    """A common word that every mention uses as a verb with its object ("to complement the sofa", "would complement
    your space", "spotting a Quetzal") or as an adjective before its noun ("a cohesive look", a heading's "a Cohesive
    Look"): what is done or how a thing is, not a thing. A word said once in another way ("Caching: ...", "the
    deductible is") is a noun there, and stays; so does a list item's head and a word written as code.

    An adjective some write with a capital ("Indigenous communities", "Indigenous people") is one too, where it
    comes before a noun in lower case: a name in title case runs on ("Indigenous Business Australia") and such a
    mention, like one that ends what is read, is joined to another ("Indigenous and non-Indigenous communities") or
    comes before a word the lexicon does not know, tells nothing; at least one mention must tell. A verb written
    with a capital inside sentences is a name's ("Frozen")."""
    if candidate.coded or candidate.head or not candidate.mentions:
        return False
    tags = lexicon.parts_of_speech(candidate.key[0])
    cased = candidate.cased_mid > candidate.lower_mid
    verb, adjective = "VERB" in tags and not cased, tags == {"ADJ"}
    if not verb and not adjective:
        return False
    told = False
    for message, _, end in candidate.mentions:
        after = _NEXT_WORD.match(message.view, end)
        if after is None:
            if message.view[end:].strip():
                return False  # a stop or a bracket after it ("Caching: ..."): a noun
            continue  # what is read ends here
        if after.group(1) in ("and", "or") or (cased and after.group(1)[:1].isupper()):
            continue
        word = after.group(1).casefold()
        if verb and word in _OBJECT_OPENERS:
            told = True
            continue
        if adjective and word not in _OBJECT_OPENERS and _noun(word):
            told = True
            continue
        if adjective and not is_stopword(word) and not lexicon.parts_of_speech(word):
            continue  # a word the lexicon does not know ("Indigenous entrepreneurship"): no evidence either way
        return False
    return told


def _noun(word: str) -> bool:
    """A word that can be a noun and is no auxiliary ("look" of "a cohesive look"; not "is", "can")."""
    tags = lexicon.parts_of_speech(word)
    return "NOUN" in tags and "AUX" not in tags


class _Capitals:
    """The longer words a segment writes with a capital, collected on the first question (most segments never ask)."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        self.words: set[str] | None = None

    def begun_by(self, word: str) -> bool:
        if self.words is None:
            self.words = {t.lower for m in self.messages for t in m.words if t.capitalised and len(t.lower) > 5}
        return any(w.startswith(word) for w in self.words)


def _abbreviation(candidate: Candidate, capitals: _Capitals) -> bool:
    """ "Wis", "Cha" in a character sheet's "Insight (Wis)", "Deception (Cha)": a short word no lexicon knows that
    only the replies write, each time before a bracket or a stop, the first letters of a longer word the segment
    writes with a capital ("Wisdom:", "Charisma:"), is that word cut short, no name of its own ("Sikh" beside
    "Sikhism" is said alone)."""
    word = candidate.key[0]
    if candidate.user_mentions() or not all(2 <= len(f) <= 4 and f.isalpha() for f in candidate.forms):
        return False
    if any(f.isupper() or f[1:] != f[1:].lower() for f in candidate.forms) or lexicon.parts_of_speech(word):
        return False  # an acronym ("AWS", "EMR") or an inner capital: written so on purpose; or an English word
    if not all(m.view[end : end + 1] in (")", ".") for m, _, end in candidate.mentions):
        return False  # cut short, an abbreviation ends at its stop or its bracket: "(Wis)", "Str."
    return capitals.begun_by(word)


# A noun at least this common in English, then a number, is an item of a numbered set ("Store 10", "Season 3")
# where the segment writes the noun in lower case; a product's name keeps its capital ("Windows 11", "Python 3").
NUMBERED_NOUN_ZIPF = 4.5


def _numbered_item(candidate: Candidate, noun: Candidate | None, texts: list[str]) -> bool:
    """ "Store 10" of "the mean of sales in store 10", "the rest of the stores, excluding Store 10": a common noun
    and a number, where the segment writes the noun or the pair in lower case as well, or where its code compares
    or sets a field of that name to the number ("filter(data, Store == 10)", "store_id = 10"), is one of many
    stores, not a name (the name rules take it for one by the capital a sentence or a heading gives it)."""
    key = candidate.key
    if len(key) != 2 or not key[1].isdigit() or lexicon.zipf(key[0]) < NUMBERED_NOUN_ZIPF:
        return False
    if "NOUN" not in lexicon.parts_of_speech(key[0]):
        return False
    if noun is not None and noun.lower_mid > 0:
        return True
    if any(m.view[start:end].islower() and not m.case_blind for m, start, end in candidate.mentions):
        return True
    field = re.compile(rf"\b{re.escape(key[0])}\w*[ \t]*(?:==?|:|<-)[ \t]*['\"]?{key[1]}\b", re.IGNORECASE)
    return any(field.search(text) for text in texts)


# An opening quote and an article, then the mention: a sentence quoted as an example ('"The dog runs."').
_EXAMPLE_OPENING = re.compile(r"[\"“](?:The|A|An)[ \t]+$")


def _example_sentence(candidate: Candidate) -> bool:
    """ "Dog runs" of 'Example: "The dog runs."': a phrase in lower case that every mention opens a quoted sentence
    with, after its article, is a grammar example's words, not a subject (a quoted title is in title case: "The
    Witcher")."""
    if not candidate.mentions or any(f != f.casefold() for f in candidate.forms):
        return False
    return all(_EXAMPLE_OPENING.search(m.view, max(0, start - 8), start) for m, start, _ in candidate.mentions)


# The small words a title holds in lower case ("Once Upon a Time in Hollywood"; extract/name_phrases.py's _SMALL).
_SMALL_WORDS = frozenset(("of", "the", "and", "in", "on", "to", "for", "a", "an", "with", "at", "from", "by"))


def _drop_descriptions(candidates: dict[tuple[str, ...], Candidate]) -> None:
    """Drop the descriptions in title case (`_described`) and the pieces of them said nowhere else ("Exploring
    Data", "Aggregating" of "Exploring Data by Aggregating"): the whole held their mentions, and none is a name."""
    spans: dict[int, list[tuple[int, int]]] = {}
    for key in [k for k, c in candidates.items() if _described(c)]:
        for m, start, end in candidates.pop(key).mentions:
            spans.setdefault(id(m), []).append((start, end))
    if not spans:
        return
    for key in [k for k, c in candidates.items() if c.mentions]:
        if all(
            any(s <= start and end <= e for s, e in spans.get(id(m), ())) for m, start, end in candidates[key].mentions
        ):
            del candidates[key]


def _described(candidate: Candidate) -> bool:
    """ "Night Out with Friends" of 'name your playlist "Night Out with Friends"' beside the user's "a fun night out
    with friends", "Exploring Data by Aggregating" of a heading whose sentences say "Exploring data by aggregating
    is ...": a title-case run with a small word inside that the segment writes in lower case more often than not (its
    words past the first) is a description in a label's or a heading's capitals, no name. A work's title keeps its
    capitals wherever it is written ("Once Upon a Time in Hollywood"); a message typed without capitals tells
    nothing."""
    key = candidate.key
    if len(key) < 3 or not any(w in _SMALL_WORDS for w in key[1:-1]):
        return False
    lower = cased = 0
    for m, start, end in candidate.mentions:
        words = [w for w in m.view[start:end].split()[1:] if w.casefold() not in _SMALL_WORDS]
        if m.case_blind or not words:
            continue
        if all(w[:1].isupper() for w in words):
            cased += 1
        elif all(w[:1].islower() for w in words):
            lower += 1
    return lower > cased
