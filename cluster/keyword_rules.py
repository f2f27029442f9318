"""Keyword-only rules on phrases (cluster/phrases.py reads them when it counts a topic's keywords, never for the
tuning objective's phrases, so they never move a segment to another topic): where a keyword's noun phrase ends,
how a phrase is shown, and which keyword leads (the topic's label). Pure functions.

- `breaks`: a keyword's phrase ends at a preposition, interjection or contraction, at a word that can only be a
  verb (or can be one, after "to"), and at an -ing verb after a plural noun; `unglued`: at a word glued to a
  number or cut at an apostrophe too; `trailing`: a plural noun and an adjective after it ("feet flat") is no
  phrase; `shown_in_run`: a possessive followed by a word loses its 's ("Hamlet"); `sentence_case`: a capital
  only a sentence start gave is dropped ("Designate" was no name).
- `lead_first`: the keyword a person would file the topic under first: a phrase or name said nearly as widely as
  the best keyword, or, when the best is one word common all over English ("body", "city"), a little less widely.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from clients.parts_of_speech import closed_class, lemmas, only_verb, parts_of_speech

# A word glued to a number ("year-old" of "90-year-old", "star" of "5-star") or a contraction's clitic after a
# curly apostrophe, which the word pattern splits off ("ll" of "they\u2019ll"): pieces, not words.
_GLUED = re.compile(r"(?<=\d)-[A-Za-z][\w-]*|\u2019(?:ll|re|ve|d|m|t)\b", re.IGNORECASE)


def unglued(text: str) -> str:
    """The text with every piece glued to a number or cut off at a curly apostrophe replaced by a stop word: it
    ends a keyword's phrase there and is no word of it."""
    return _GLUED.sub(" the ", text)


def breaks(word: str, previous: str, opening: bool, after_to: bool = False) -> bool:
    """Where a keyword's phrase ends, beyond the stop words: a preposition, interjection or contraction
    ("regarding", "Wow", "they'll"), a word that can only be a verb, written in lower case or opening the clause
    ("minimize distractions", "Designate a shelf"; an -ing or -ed form can head or modify a noun: "time
    tracking", "grated cheese"), or an -ing verb after a plural noun (`previous`, the run's last word: "issues
    facing" is a participle), or a word that can be a verb after "to" (`after_to`: "to collect data", "to set
    reminders" give "data" and "reminders")."""
    if word.endswith("ing") and previous and _participle(word, previous):
        return True
    if after_to and word.islower() and "VERB" in parts_of_speech(word):
        return True
    return _breaks(word, opening)


@lru_cache(maxsize=200_000)
def _breaks(word: str, opening: bool) -> bool:
    if closed_class(word):
        return True
    lower = word.lower()
    return (word.islower() or opening) and not lower.endswith(("ing", "ed")) and only_verb(lower)


@lru_cache(maxsize=200_000)
def _participle(word: str, previous: str) -> bool:
    return word.islower() and "VERB" in parts_of_speech(word) and _plural_noun(previous)


def _plural_noun(word: str) -> bool:
    """A plural noun written in lower case ("issues", "feet"; not "news", not "Sports")."""
    nouns = lemmas(word).get("NOUN", ()) if word.islower() else ()
    return bool(nouns) and word not in nouns


@lru_cache(maxsize=200_000)
def trailing(gram: tuple[str, ...]) -> bool:
    """A plural noun and what is said of it, not a noun phrase: a word that can be an adjective after it ("feet
    flat", "legs straight"; English compounds take the singular: "body fat")."""
    return len(gram) > 1 and _plural_noun(gram[-2]) and "ADJ" in parts_of_speech(gram[-1].lower())


def shown_in_run(gram: tuple[str, ...]) -> str:
    """An n-gram followed by a word in its clause, shown without the possessive 's that ties it to that word."""
    last = gram[-1]
    if last.lower().endswith("'s") and len(last) > 2:  # a curly apostrophe ends a word: "Luna" of "Luna\u2019s"
        return " ".join((*gram[:-1], last[:-2]))
    return " ".join(gram)


def sentence_case(phrase: str) -> str:
    """A phrase written only at sentence starts, without the capital of its first word when nothing else in it
    is capitalised and the word is one lemminflect knows ("Set clear goals", not "Yosemite", not "Fly Fishing")."""
    first, _, rest = phrase.partition(" ")
    if not (first[:1].isupper() and first[1:].islower()) or any(c.isupper() for c in rest):
        return phrase
    return phrase[:1].lower() + phrase[1:] if parts_of_speech(first.lower()) else phrase


LEAD_FROM = 3  # keywords the one shown first (the topic's label) is chosen from, with the best one's longer forms
LEAD_SHARE = 0.75  # a phrase or name leads when it is said in this share of the conversations the best one is
BROAD_ZIPF = 4.5  # wordfreq's Zipf (log10 uses per billion words) from which one common word is too broad a label
BROAD_FROM = 5  # keywords a broad best word's replacement is chosen from
BROAD_SHARE = 0.6  # a phrase or name replaces a broad best word when said in this share of its conversations


def lead_first(ranked: list[tuple[str, str, float]], spread: dict[str, int]) -> list[tuple[str, str, float]]:
    """The keywords with the one a person would file the topic under first: the first of the best LEAD_FROM, or of
    the best one's longer forms ("morning routine" for "morning"), that is a multi-word phrase or holds a name
    ("battery life" over "devices") and is said in LEAD_SHARE of the conversations (segments, in a topic of one)
    the best one is ("gift ideas", not "heartfelt message", over "gift"); when none is and the best is a broad
    word (`broad`: "body", "city"), the first of the best BROAD_FROM said in BROAD_SHARE of them ("strength
    training" over "body"); else the best."""
    if not ranked:
        return ranked
    best = ranked[0][0]
    words = set(best.split())
    near = (i for i, (key, _, _) in enumerate(ranked) if i < LEAD_FROM or words < set(key.split()))
    lead = _first_specific(ranked, spread, near, LEAD_SHARE * spread[best])
    if lead is None and broad(ranked[0][1]):
        among = (i for i in range(min(BROAD_FROM, len(ranked))) if not _dictionary_word(ranked[i][1]))
        lead = _first_specific(ranked, spread, among, BROAD_SHARE * spread[best])
    lead = lead or 0
    return [ranked[lead], *ranked[:lead], *ranked[lead + 1 :]]


def _first_specific(
    ranked: list[tuple[str, str, float]], spread: dict[str, int], among: Iterable[int], floor: float
) -> int | None:
    return next((i for i in among if _specific(ranked[i][1]) and spread[ranked[i][0]] >= floor), None)


def _dictionary_word(phrase: str) -> bool:
    """One broad word the dictionary knows, capitalised or not ("Museum", "History", "Pro"): a capital makes it
    no more specific than the broad word it would replace ("Paris" is no dictionary word, "Hamlet" no broad one)."""
    return " " not in phrase and bool(parts_of_speech(phrase.lower())) and broad(phrase.lower())


@lru_cache(maxsize=4096)
def broad(phrase: str) -> bool:
    """One lower-case word common all over English ("day", "body", "space", "film"): it could head any number of
    topics, so a phrase or name the topic's conversations share says more."""
    from wordfreq import zipf_frequency

    return " " not in phrase and phrase.islower() and zipf_frequency(phrase, "en") >= BROAD_ZIPF


def _specific(phrase: str) -> bool:
    """A multi-word phrase or one that holds a name (a capital letter away from a sentence start: shown forms
    are)."""
    return len(phrase.split()) > 1 or any(c.isupper() for c in phrase)
