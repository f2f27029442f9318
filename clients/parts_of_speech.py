"""The parts of speech an English word can take, from `lemminflect`'s tables (inside the pip package, offline):
"explain" is a verb only, "churn" a noun or a verb, "political" an adjective. Read by the offline extractor
(extract/lexicon.py: which words head or open a noun phrase) and the topic labels (cluster/labels.py: a label is
a noun phrase, never "elevate" or "political")."""

from __future__ import annotations

from functools import lru_cache

__all__ = ["can_be_noun", "lemmas", "parts_of_speech"]


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
