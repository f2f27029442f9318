"""Typo neighbours of a word among a growing vocabulary, by deletion neighbourhoods (symmetric delete).

The resolver's veto pairs off two words a typo apart: difflib's ratio >= 0.8. That ratio is 2 * M / (|a| + |b|)
with M matched characters, and M is at most the length L of the longest common subsequence, so
L >= 0.4 * (|a| + |b|); the ratio also needs the shorter word to be at least 2/3 of the longer. Hence each word
reaches a common subsequence by deleting at most |word| - L <= |word| / 3 letters. Indexing every vocabulary
word under each string it gives with up to |word| // 3 deletions, and looking a word up the same way, finds every
word that can be a typo of it. A shared key is a common subsequence, so only the keys of at least
0.4 * (|a| + |b|) letters count: a word met only under shorter keys cannot be a typo and is no candidate (the
depth |word| // 3 is what a word needs against a shorter one; two words of one length need much less). The
answer depends on the word and its neighbours, not on the vocabulary's size.

Words longer than LONGEST_INDEXED (C(29, 9) keys each) are kept by length instead. They, and the long words a
short word is looked up against, are screened by rapidfuzz's Indel distance (|a| + |b| - 2 * LCS, in C) against
every word of a length that allows a ratio of 0.8 (2/3 to 3/2 of theirs): 2 * LCS / (|a| + |b|) >= 0.8 is
5 * distance <= |a| + |b| in whole numbers, a bound of difflib's ratio from above, so the screen drops only words
that cannot be typos. The caller checks difflib's ratio on the few left. (Before both screens the candidates
were ~80 times the typos, and their difflib checks most of the concepts stage's time.)

The deletion keys are built only once `SCAN_QUERIES` distinct words have been asked. Until then every word is
screened the long words' way (rapidfuzz over every word of a length that allows 0.8): a superset of the typos as
well, so the neighbours are the same, but the index costs nothing to start. A scheduled run that resolves a few
hundred new hypotheses against a store of 27,000 concepts asks ~1,000 words: building the deletion keys of every
stored word (9 million keys at 50k messages, half the concepts stage's CPU) would cost more than it saves. A
first build asks far more, and switches.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from itertools import combinations

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import Indel

LONGEST_INDEXED = 12
SCAN_QUERIES = 2000  # distinct words asked (cache misses) before the deletion keys are built


@lru_cache(maxsize=1 << 16)
def deletion_keys(word: str) -> frozenset[str]:
    """Every string left after deleting up to len(word) // 3 of its letters (the word itself included)."""
    keys = {word}
    for deleted in range(1, len(word) // 3 + 1):
        for positions in combinations(range(len(word)), deleted):
            skip = set(positions)
            keys.add("".join(c for i, c in enumerate(word) if i not in skip))
    return frozenset(keys)


def _close_enough(common: int, size: int, other: int) -> bool:
    """A common subsequence of `common` letters can give difflib's ratio >= 0.8 to words of these lengths.

    ratio = 2 * M / (size + other) with M <= the longest common subsequence; in integers (no float edge):
    2 * common / (size + other) >= 0.8 is 5 * common >= 2 * (size + other).
    """
    return 5 * common >= 2 * (size + other)


class TypoIndex:
    """Vocabulary words by their deletion keys."""

    def __init__(self) -> None:
        self._words: set[str] = set()
        self._by_key: dict[str, list[str]] = {}  # deletion key -> its words (a list: ~1M keys at 25k messages)
        self._by_length: dict[int, list[str]] = {}  # every word, by length: screened for the long ones
        self._neighbours: dict[str, tuple[str, ...]] = {}  # word asked -> its checked neighbours
        self._asked: dict[str, set[str]] = {}  # deletion key -> the words asked whose answer it can change
        self._indexed = False  # deletion keys built: after SCAN_QUERIES words asked
        self._misses = 0
        self._is_typo: Callable[[str, str], bool] | None = None  # `neighbours`' check (the same on every call)

    def add_words(self, words: tuple[str, ...]) -> None:
        for word in words:
            if word in self._words:
                continue
            self._words.add(word)
            self._by_length.setdefault(len(word), []).append(word)
            if len(word) > LONGEST_INDEXED or not self._indexed:
                self._neighbours.clear()  # rare (ids, hashes) or unindexed: any cached answer may now lack it
                self._asked.clear()
                continue
            self._index(word)

    def _index(self, word: str) -> None:
        size = len(word)
        reached: set[str] = set()
        for key in deletion_keys(word):
            self._by_key.setdefault(key, []).append(word)  # once: add_words indexes a word once
            asked_here = self._asked.get(key)
            if asked_here:
                # The words asked that share this key have `word` among their candidates now, if the key is long
                # enough (the test `candidates` makes of it).
                reached.update(asked for asked in asked_here if _close_enough(len(key), len(asked), size))
        reached.discard(word)  # no word is its own neighbour
        if not reached or self._is_typo is None:
            return
        # Each answer reached gains `word` where it is a typo, and nothing else: the other candidates are those it
        # was computed from, and a long word (scanned, not indexed) clears every answer (`add_words`). Kept up to
        # date here, not dropped: a word asked again after the vocabulary grew is the resolver's common case, and
        # computing its answer again cost most of the concepts stage's matching.
        for asked in reached:
            found = self._neighbours.get(asked)
            if found is not None and self._is_typo(asked, word):
                self._neighbours[asked] = tuple(sorted((*found, word)))

    def _build(self) -> None:
        """The deletion keys of every word indexed so far (answers cached before are dropped: they hold no
        record of the keys that can change them)."""
        self._indexed = True
        self._neighbours.clear()
        self._asked.clear()
        for word in self._words:
            if len(word) <= LONGEST_INDEXED:
                self._index(word)

    def candidates(self, word: str) -> set[str]:
        """Vocabulary words that may be a typo of `word` (a superset; the word itself excluded)."""
        found: set[str] = set()
        size = len(word)
        shortest = (2 * size + 2) // 3  # ratio >= 0.8 needs the shorter word >= 2/3 of the longer
        if size <= LONGEST_INDEXED and self._indexed:
            for key in deletion_keys(word):
                words = self._by_key.get(key)
                if not words:
                    continue
                longest = 5 * len(key) // 2 - size  # 5 * |key| >= 2 * (|word| + |other|): see _close_enough
                found.update(w for w in words if len(w) <= longest)
            shortest = max(shortest, LONGEST_INDEXED + 1)  # only the unindexed long ones left to scan
        for length in range(shortest, size * 3 // 2 + 1):
            scanned = self._by_length.get(length)
            if scanned:  # whole numbers, not rapidfuzz's normalised cutoff (rounded: it drops pairs at exactly 0.8)
                distances = process.cdist([word], scanned, scorer=Indel.distance, dtype=np.int32, workers=1)[0]
                found.update(scanned[i] for i in np.flatnonzero(5 * distances <= size + length))
        found.discard(word)
        return found

    def neighbours(self, word: str, is_typo: Callable[[str, str], bool]) -> tuple[str, ...]:
        """The candidates that `is_typo(word, candidate)` accepts, sorted; cached, and kept up to date as the
        vocabulary gains words sharing one of its deletion keys (`_index`; any long word drops every answer).

        `is_typo` must be the same function on every call (the resolver's cached difflib check).
        """
        self._is_typo = is_typo
        found = self._neighbours.get(word)
        if found is None:
            self._misses += 1
            if not self._indexed and self._misses > SCAN_QUERIES:
                self._build()
            found = tuple(sorted(w for w in self.candidates(word) if is_typo(word, w)))
            if not self._indexed:
                self._neighbours[word] = found  # dropped whenever a word is added
            elif len(word) <= LONGEST_INDEXED:  # a long word's answer can change with any word of nearby length
                self._neighbours[word] = found
                for key in deletion_keys(word):
                    self._asked.setdefault(key, set()).add(word)
        return found
