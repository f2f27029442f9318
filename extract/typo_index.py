"""Typo neighbours of a word among a growing vocabulary, by deletion neighbourhoods (symmetric delete).

The resolver's veto pairs off two words a typo apart: difflib's ratio >= 0.8. That ratio is 2 * M / (|a| + |b|)
with M matched characters, and M is at most the length L of the longest common subsequence, so
L >= 0.4 * (|a| + |b|); the ratio also needs the shorter word to be at least 2/3 of the longer. Hence each word
reaches a common subsequence by deleting at most |word| - L <= |word| / 3 letters. Indexing every vocabulary
word under each string it gives with up to |word| // 3 deletions, and looking a word up the same way, finds every
word that can be a typo of it (and some that are not: the caller checks the ratio). The answer depends on the
word and its neighbours, not on the vocabulary's size. Words longer than LONGEST_INDEXED (ids, hashes: rare, but
C(29, 9) keys each) are kept by length instead and compared one by one with every word whose length allows
a ratio of 0.8 (2/3 to 3/2 of theirs), as are the long words a short word is looked up against.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from itertools import combinations

LONGEST_INDEXED = 12


@lru_cache(maxsize=1 << 16)
def deletion_keys(word: str) -> frozenset[str]:
    """Every string left after deleting up to len(word) // 3 of its letters (the word itself included)."""
    keys = {word}
    for deleted in range(1, len(word) // 3 + 1):
        for positions in combinations(range(len(word)), deleted):
            skip = set(positions)
            keys.add("".join(c for i, c in enumerate(word) if i not in skip))
    return frozenset(keys)


class TypoIndex:
    """Vocabulary words by their deletion keys."""

    def __init__(self) -> None:
        self._words: set[str] = set()
        self._by_key: dict[str, set[str]] = {}
        self._by_length: dict[int, set[str]] = {}  # every word, by length: scanned for the long ones
        self._neighbours: dict[str, tuple[str, ...]] = {}  # word asked -> its checked neighbours
        self._asked: dict[str, set[str]] = {}  # deletion key -> the words asked whose answer it can change

    def add_words(self, words: tuple[str, ...]) -> None:
        for word in words:
            if word in self._words:
                continue
            self._words.add(word)
            self._by_length.setdefault(len(word), set()).add(word)
            if len(word) > LONGEST_INDEXED:
                self._neighbours.clear()  # rare (ids, hashes): any cached answer may now lack it
                self._asked.clear()
                continue
            for key in deletion_keys(word):
                self._by_key.setdefault(key, set()).add(word)
                for asked in self._asked.pop(key, ()):  # words sharing a key with it may have gained a neighbour
                    self._neighbours.pop(asked, None)

    def candidates(self, word: str) -> set[str]:
        """Vocabulary words that may be a typo of `word` (a superset; the word itself excluded)."""
        found: set[str] = set()
        size = len(word)
        shortest = (2 * size + 2) // 3  # ratio >= 0.8 needs the shorter word >= 2/3 of the longer
        if size <= LONGEST_INDEXED:
            for key in deletion_keys(word):
                found.update(self._by_key.get(key, ()))
            shortest = max(shortest, LONGEST_INDEXED + 1)  # only the unindexed long ones left to scan
        for length in range(shortest, size * 3 // 2 + 1):
            found.update(self._by_length.get(length, ()))
        found.discard(word)
        return found

    def neighbours(self, word: str, is_typo: Callable[[str, str], bool]) -> tuple[str, ...]:
        """The candidates that `is_typo(word, candidate)` accepts, sorted; cached until the vocabulary gains a word
        sharing one of its deletion keys (or any long word).

        `is_typo` must be the same function on every call (the resolver's cached difflib check).
        """
        found = self._neighbours.get(word)
        if found is None:
            found = tuple(sorted(w for w in self.candidates(word) if is_typo(word, w)))
            if len(word) <= LONGEST_INDEXED:  # a long word's answer can change with any word of nearby length
                self._neighbours[word] = found
                for key in deletion_keys(word):
                    self._asked.setdefault(key, set()).add(word)
        return found
