"""The parts of speech an English word can take, from `lemminflect`'s tables (inside the pip package, offline):
"explain" is a verb only, "churn" a noun or a verb, "political" an adjective. Read by the offline extractor
(extract/lexicon.py: which words head or open a noun phrase) and the topic labels (cluster/labels.py: a label is
a noun phrase, never "elevate" or "political"; cluster/phrases.py: a keyword's phrase is cut at a verb).

lemminflect's tables hold the open classes only (nouns, verbs, adjectives, adverbs): a preposition is missing
("despite") or read as the verb it came from ("regarding"), an interjection as a noun ("wow"). `closed_class`
names those the topic keywords meet that sklearn's stop list (cluster/phrases.py STOP) leaves out, and the
contractions, whose clitic ("'ll", "n't") no table holds."""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["can_be_noun", "closed_class", "lemmas", "only_verb", "parts_of_speech"]

# Closed classes beyond the stop list: prepositions (those made from a verb's -ing form included), and
# interjections and chat formulas (said as a sentence of their own: "Wow!", "Congratulations!").
_PREPOSITIONS_TEXT = (
    "according amid amidst atop barring concerning despite excluding notwithstanding pending regarding unlike unto"
    " versus vs whilst beneath underneath"
)
_INTERJECTIONS_TEXT = (
    "wow oh ah aha hmm huh hey yay ugh oops whoa yikes ouch alas haha lol omg gosh hooray bravo congrats"
    " congratulations yep yup nope um uh er wowza"
)
CLOSED_CLASS = frozenset((_PREPOSITIONS_TEXT + " " + _INTERJECTIONS_TEXT).split())
_CONTRACTION = re.compile(r"['’](?:ll|re|ve|d|m)$|n['’]t$", re.IGNORECASE)  # not 's: "Hamlet's" is a possessive


@lru_cache(maxsize=1 << 18)
def parts_of_speech(word: str) -> frozenset[str]:
    """The parts of speech an English word can take (NOUN, VERB, ADJ, ADV, PROPN...); empty when unknown."""
    from lemminflect import getAllLemmasOOV

    lower = word.casefold()
    found = _lemma_table(lower)
    if not found and lower.isalpha():
        return frozenset()
    return frozenset(found) if found else frozenset(getAllLemmasOOV(lower, upos="NOUN") and {"NOUN"})


def lemmas(word: str) -> dict[str, tuple[str, ...]]:
    """The lemmas of an English word by part of speech ("uses": VERB use, NOUN use). Shared: do not change it."""
    return _lemma_table(word.casefold())


@lru_cache(maxsize=1 << 18)
def _lemma_table(lower: str) -> dict[str, tuple[str, ...]]:
    """lemminflect's lemmas of a lower-case word, looked up once for both questions above (its lookup deep-copies
    what it returns: most of the cost of a word's first sight)."""
    from lemminflect import getAllLemmas

    return dict(getAllLemmas(lower))


@lru_cache(maxsize=1 << 18)
def can_be_noun(word: str) -> bool:
    tags = parts_of_speech(word)
    return not tags or "NOUN" in tags or "PROPN" in tags


def closed_class(word: str) -> bool:
    """A preposition, an interjection or a contraction ("regarding", "wow", "they'll"): never in a noun phrase."""
    lower = word.casefold()
    return lower in CLOSED_CLASS or _CONTRACTION.search(lower) is not None


@lru_cache(maxsize=1 << 18)
def only_verb(word: str) -> bool:
    """A word lemminflect knows as a verb and nothing else ("minimize", "deter"; not "build", "set", "designate")."""
    return parts_of_speech(word) == frozenset({"VERB"})


# The commonest English function words: a text whose words are at least 12 % these reads as English (the offline
# extractor's language check, extract/lexicon.py, and the topic keywords', cluster/phrases.py).
_ENGLISH_FUNCTION_TEXT = (
    "the a an and or but of to in on at for with from by is are was were be been am i you he she it we they my"
    " your our their this that these those what which who how why when where can could would should will do"
    " does did not no yes if then than so as there here have has had me him her them us its just also about"
)
ENGLISH_FUNCTION = frozenset(_ENGLISH_FUNCTION_TEXT.split())
ENGLISH_FUNCTION_SHARE = 0.12
