"""The noun phrase in one piece of a run of content words (extract/noun_phrases.py cuts runs into pieces).

`_trim` takes off a command that opens the piece, openers and common adjectives in front, an adverb of time or
place after it, a name's kind head ("Shopify platform") and a verb's -s form, and keeps what ends on a noun; where
it cut a modifier, `_with_modifiers` and `_qualified` give the phrase with it (a loose proposal), and
`_proper_head` leaves a proper noun without the common word written before it ("learning Spanish").
"""

from __future__ import annotations

import re
from functools import lru_cache

from extract import lexicon
from extract.tokens import MAX_WORDS, Token, _acronym, plausible_word, singular
from extract.word_kinds import (
    _COMMON_OPENERS,
    GENERIC,
    NOT_NAMES,
    QUALIFYING_OPENERS,
    _command,
    _generic,
    _number,
    _title_case,
    _verb_s,
    _written_as_name,
)

# Heads that only say what kind of text a thing was discussed in: "Spark code" is Spark, "pandas library" pandas.
_META_HEADS_TEXT = (
    "code codes snippet snippets library libraries script scripts example examples program programs syntax"
    " solution solutions approach approaches explanation explanations method methods details version versions"
    " question questions answer answers implementation implementations tutorial tutorials"
)


_META_HEADS = frozenset(_META_HEADS_TEXT.split())


# Words that point to a time from the moment of speaking: after a noun phrase they are adverbs of the clause ("I went
# to the support group yesterday"), never its head.
_DEICTIC_TIMES = frozenset("yesterday today tomorrow tonight".split())  # noqa: SIM905


# Adverbs of place that the lexicon also lists as nouns ("the outside"): lower case after a noun phrase they say
# where it is ("a section underneath the calculator", "students outside the university"), never what it is.
_PLACE_ADVERBS = frozenset("underneath outside inside above behind upstairs downstairs nearby overseas".split())  # noqa: SIM905


# Heads that, after a name, only say what kind of thing the name is: "Shopify platform" is Shopify, "Parquet
# file" Parquet, "Hive table" Hive, "SQL statement" SQL. Cut only when every word before the head is written as
# a name and the head is not ("Amazon Web Services" keeps its last word); the generic nouns above count too.
_KIND_HEADS_TEXT = (
    "platform platforms framework frameworks language languages service services software app apps application"
    " applications engine engines tool tools component components directory directories environment"
    " environments interface api apis website site"
)


_KIND_HEADS = frozenset(_KIND_HEADS_TEXT.split())


def _common_adjective(token: Token) -> bool:
    """ "larger", "detailed", "structured": an adjective this common says which one, not what it is."""
    if token.all_caps or token.inner_capital or "-" in token.text or (token.capitalised and not token.sentence_start):
        return False  # "Directed" in "the Directed Acyclic Graph": part of a name
    return _common_adjective_word(token.lower)


@lru_cache(maxsize=1 << 16)
def _common_adjective_word(lower: str) -> bool:
    tags = lexicon.parts_of_speech(lower)
    return bool(tags) and "NOUN" not in tags and "ADJ" in tags and lexicon.zipf(lower) >= 3.5


def _vague_pair(modifier: Token, head: Token) -> bool:
    """ "Concise summary", "Maximum number", "Human-readable format": a vague noun ("summary", "number",
    "format") that an adjective only qualifies names nothing a person would file. Names are not asked."""
    if modifier.all_caps or modifier.inner_capital or (modifier.capitalised and not modifier.sentence_start):
        return False
    if head.lower not in GENERIC and singular(head.lower) not in GENERIC:
        return False
    return _adjective(modifier.lower)


@lru_cache(maxsize=1 << 16)
def _adjective(lower: str) -> bool:
    tags = lexicon.parts_of_speech(lower)
    if tags:
        return "ADJ" in tags and "NOUN" not in tags  # "concise", "manageable"; not "maximum" ("the maximum")
    return "-" in lower and lower.endswith(("able", "ible", "ed", "ive", "ful", "less"))  # "human-readable"


def _qualified(piece: list[Token], phrase: list[Token]) -> list[Token]:
    """The noun phrase with the qualifying opener the plain rules cut just before it ("small business" of "a small
    business"), [] when there is none: the phrase itself is trimmed as it was, so only the opener comes back."""
    at = next((i for i, t in enumerate(piece) if t is phrase[0]), 0)
    before = piece[at - 1] if at > 0 else None
    if before is None or before.lower not in QUALIFYING_OPENERS or len(phrase) >= MAX_WORDS:
        return []
    if before.text != before.lower and not before.sentence_start:
        return []  # "Big" in "the Big Apple": a name's word, which the name rules read
    if any(_written_as_name(t) for t in phrase) or not lexicon.parts_of_speech(phrase[0].lower):
        return []  # "complex pyspark code", "large Hive tables": it says which instance of a name, not a kind
    return [before, *phrase]


_ADDRESS_END = re.compile(r"[ \t]*(?:[!?,]|$)")


def _proper(token: Token) -> bool:
    """A word in title case inside a sentence: a proper noun ("Caroline", "Brazil", "Spanish")."""
    return _title_case(token) and not token.sentence_start


def _proper_head(prose: str, phrase: list[Token]) -> list[Token]:
    """A proper noun takes no common word before it as a modifier: a proper name is definite already, so a common
    word written before it is a verb ("learning Spanish"), an apposition ("idea Brazil", "friend Rachel") or, at
    a sentence's start with a one-word name that closes the clause, a greeting and its addressee ("Bye Caroline!",
    "Congrats Caroline!", "Woohoo Melanie!"; not a heading, "Popular Fashion Brands:"): the name alone is the
    phrase. Names of several words stay whole ("Apache Spark is ...", "Naomi Alderman")."""
    if len(phrase) < 2 or not _proper(phrase[-1]):
        return phrase
    i = len(phrase) - 1
    while i > 0 and (_proper(phrase[i - 1]) or (i > 1 and _number(phrase[i - 1]))):
        i -= 1
    if i == 0:
        return phrase
    before = phrase[i - 1]
    if before.text == before.lower or (
        before.sentence_start and len(phrase) == 2 and _ADDRESS_END.match(prose, phrase[-1].end) is not None
    ):
        return phrase[i:]
    return phrase


def _participle(token: Token | None, endings: tuple[str, ...] = ("ing", "ed")) -> bool:
    return (
        token is not None
        and token.verbish
        and token.text == token.lower
        and len(token.lower) > 4
        and token.lower.endswith(endings)
    )


def _with_modifiers(piece: list[Token], opener: Token | None, after: Token | None, last: bool) -> list[Token]:
    """The noun phrase of `piece` with what the plain rules cut off it: a participle after a determiner ("a
    crashing schedule"), an -ing word that ends the run after it (a gerund head: "performance tuning", "load
    balancing"), a common adjective in front ("linguistic diversity", "healthy meal ideas"); [] when none."""
    wider = list(piece)
    if _participle(opener):
        wider.insert(0, opener)  # type: ignore[arg-type]
    gerund = last and _participle(after, ("ing",))
    if gerund:
        wider.append(after)  # type: ignore[arg-type]
    if wider == piece and not (len(piece) > 1 and _common_adjective(piece[0])):
        return []
    return _trim(wider, modifiers=True, gerund=gerund)


def _kind_head(token: Token) -> bool:
    if token.text != token.lower:
        return False
    return token.lower in _KIND_HEADS or token.lower in GENERIC or singular(token.lower) in GENERIC


def _trim(piece: list[Token], modifiers: bool = False, gerund: bool = False) -> list[Token]:
    """The noun phrase in a piece of a run; with `modifiers`, a common adjective in front stays, and with
    `gerund` the last word is an -ing head ("performance tuning") that no noun list holds."""
    if len(piece) > 1 and piece[0].sentence_start and _command(piece):
        piece = piece[1:]  # "Load data", "Monitor progress": a command that opens a sentence, then its object
    if len(piece) > 1 and not piece[0].capitalised and _verb_s(piece[0].lower):
        piece = piece[1:]  # "(it) uses array indexing": a verb's -s form, then its object
    while piece and (
        piece[0].lower in _COMMON_OPENERS
        or piece[0].lower in NOT_NAMES
        or (not modifiers and len(piece) > 1 and _common_adjective(piece[0]))
    ):
        piece = piece[1:]
    if gerund:
        # the -ing word heads the phrase after a noun ("performance tuning", "load balancing"), or there is none
        # ("time dancing", "people traveling": a generic noun, then the verb of a reduced clause)
        before = piece[-2] if len(piece) >= 2 else None
        noun = before is not None and (
            _written_as_name(before)
            or (lexicon.can_be_noun(before.lower) and not {before.lower, singular(before.lower)} & GENERIC)
        )
        return piece if noun and len(piece) <= MAX_WORDS and any(plausible_word(t.text) for t in piece) else []
    while len(piece) > 1 and (
        piece[-1].lower in _DEICTIC_TIMES or (piece[-1].lower in _PLACE_ADVERBS and piece[-1].text == piece[-1].lower)
    ):
        piece = piece[:-1]  # "the support group yesterday": an adverb of time (or place) after the phrase, not its head
    if len(piece) > 1 and piece[-1].text == "worth" and piece[-2].capitalised:
        piece = piece[:-1]  # "is the Algarve worth it", "Is Civilization worth it": a name, then its predicate
    while len(piece) > 1 and (piece[-1].lower in _META_HEADS or len(piece[-1].text) == 1):
        piece = piece[:-1]  # "Spark code": Spark; "Mumbai F 22": a row of data, not a term with a letter in it
    if len(piece) >= 2 and _kind_head(piece[-1]) and all(_written_as_name(t) for t in piece[:-1]):
        piece = piece[:-1]  # "Shopify platform", "Parquet file": the name is the concept, the head its kind
    if len(piece) >= 3 and not piece[-1].capitalised and _verb_s(piece[-1].lower) and piece[-2].lower[-1:] != "s":
        piece = piece[:-1]  # "Kafka Connect cluster feeds (the model)": a subject, then its verb
    while piece and not (lexicon.can_be_noun(piece[-1].lower) or _acronym(piece[-1]) or piece[-1].inner_capital):
        piece = piece[:-1]
    if len(piece) > MAX_WORDS:
        return []  # five content words in a row are a heading or a run-on list, and any four of them a fragment
    if not piece or all(t.lower in GENERIC or singular(t.lower) in GENERIC for t in piece):
        return []
    if len(piece) == 2 and (_vague_pair(piece[0], piece[1]) or (modifiers and piece[0].verbish and _generic(piece[1]))):
        return []  # a participle on a vague noun names nothing either ("the desired output", "the surrounding area")
    if not any(plausible_word(t.text) for t in piece):
        return []
    return piece
