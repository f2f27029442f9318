"""Entity resolution for the concept loop: which stored concept (if any) a hypothesis's name refers to.

Three steps, first hit wins:

1. exact: the match key (`extract.text.match_key`: folded case and whitespace, punctuation dropped, plurals
   folded) of the title, then of each alias, equals the key of a stored title or alias (any type: titles stay
   unique);
2. fuzzy: same type, and the content words agree (below), and difflib's ratio of the two name keys is at
   least `fuzzy_threshold` (0.92 at least when both names are one word), or the content words are the same
   set ("wedding planning" / "planning the wedding");
3. similarity: same type, content words agree and as many of them, and `similarity(a, b) >=
   similarity_threshold` ("Fly fishing vest" is not "Fly fishing", however similar the letters). With character
   3-grams (`char_ngram_cosine`, deterministic and dependency-free) that is all; with name embeddings
   (`extract.name_similarity.EmbeddingSimilarity`, concepts.similarity = "embedding") names whose word counts
   differ also match at `longer_threshold` or above, since meaning, unlike letters, tells a refinement
   ("learning python programming") from another thing ("fly fishing vest").

"Content words agree" is a veto that keeps near-names apart: after stopwords and plural endings, if each name
has a word the other lacks (allowing a typo: difflib ratio >= 0.8 between the odd words), or their numbers
differ, they name different things: "Spanish lessons" / "French lessons", "2023 taxes" / "2024 taxes". Its
cost: a name that only adds words ("half marathon training" vs "marathon training") can still match.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import product
from math import prod

from extract.text import char_ngrams, content_words, cosine, match_key, name_key, stem
from extract.typo_index import TypoIndex

Similarity = Callable[[str, str], float]
TYPO_RATIO = 0.8
SINGLE_WORD_RATIO = 0.92
MAX_WORD_SETS = 4096  # word-set lookups per title; longer titles take the union of their words' postings
_DIGITS = re.compile(r"\d+")


def char_ngram_cosine(left: str, right: str) -> float:
    """Cosine of the character 3-gram counts of two names (1.0: the same name up to case and punctuation)."""
    return cosine(char_ngrams(left), char_ngrams(right))


SIMILARITIES: dict[str, Similarity] = {"char-ngram": char_ngram_cosine}


def tokens(name: str) -> tuple[str, ...]:
    """The content words of a name, in order, each once."""
    return tuple(dict.fromkeys(content_words(name)))


def ratio_at_least(left: str, right: str, bar: float) -> float | None:
    """difflib's ratio of two strings when it is at least `bar`, else None.

    The two cheap upper bounds (length only, then letters as a multiset) settle most pairs without the full
    matching-blocks computation, and cannot change the answer: ratio <= quick_ratio <= real_quick_ratio.
    """
    matcher = difflib.SequenceMatcher(None, left, right)
    if matcher.real_quick_ratio() < bar or matcher.quick_ratio() < bar:
        return None
    ratio = matcher.ratio()
    return ratio if ratio >= bar else None


@lru_cache(maxsize=1 << 18)
def _typo(left: str, right: str) -> bool:
    """Two words one typo apart (difflib ratio >= TYPO_RATIO); cached: the same word pairs recur all run long."""
    return ratio_at_least(left, right, TYPO_RATIO) is not None


def _surely_vetoed(left: tuple[str, ...], right: tuple[str, ...], left_set: set[str], right_set: set[str]) -> bool:
    """The veto's common case, cheaply: each side has a word the other lacks and no two of those are a typo apart.

    A shortcut only: True implies words_agree(left, right) is False; False decides nothing.
    """
    only_left = [w for w in left if w not in right_set]
    if not only_left:
        return False
    only_right = [w for w in right if w not in left_set]
    return bool(only_right) and not any(_typo(a, b) for a in only_left for b in only_right)


@lru_cache(maxsize=1 << 18)
def words_agree(left: tuple[str, ...], right: tuple[str, ...]) -> bool:
    """The veto: False when the names' content words say they are different things.

    Different: each side has a word the other lacks (a typo, difflib ratio >= 0.8, pairs off), their numbers
    differ, or the longer one only adds words in front of all shared ones: a leading modifier makes another
    kind of thing ("half marathon training", "bass guitar lessons"), a trailing one mostly refines it
    ("grandma's 80th birthday party").
    """
    if {t for t in left if _DIGITS.search(t)} != {t for t in right if _DIGITS.search(t)}:
        return False
    only_left = [w for w in left if w not in right]
    only_right = [w for w in right if w not in left]
    for word in list(only_left):
        twin = next((w for w in only_right if _typo(word, w)), None)
        if twin is not None:
            only_left.remove(word)
            only_right.remove(twin)
    if only_left and only_right:
        return False
    longer, extra = (left, only_left) if only_left else (right, only_right)
    shared = [i for i, w in enumerate(longer) if w not in extra]
    return not (extra and shared and all(longer.index(w) < shared[0] for w in extra))


@dataclass(frozen=True, slots=True)
class Match:
    concept_id: str
    method: str  # exact, alias, fuzzy, similarity
    score: float
    name: str  # the stored name that matched


@dataclass
class _Entry:
    concept_id: str
    type: str
    names: dict[str, tuple[str, ...]] = field(default_factory=dict)  # name key -> its content words
    keys: set[str] = field(default_factory=set)  # the match keys it owns in the exact index
    size: int | None = None  # fewest word blocks of any of its names (None: not computed since names changed)


class Resolver:
    """An index of concept names: exact keys for every type, word-indexed candidates per type for the rest.

    Candidates come from indexes whose answers do not grow with the store for a given name (see `_candidates`);
    the 4-letter prefix blocks of the first version are kept only as a final filter, so the decisions are the
    prefix-blocked ones exactly, found without scanning every concept that shares a prefix.
    """

    def __init__(
        self,
        fuzzy_threshold: float,
        similarity_threshold: float,
        similarity: Similarity,
        longer_threshold: float | None = None,
    ) -> None:
        self.fuzzy_threshold = fuzzy_threshold
        self.similarity_threshold = similarity_threshold
        self.similarity = similarity
        # Names of different lengths that pass the veto (one only adds trailing words) match on similarity only
        # when it is a semantic one: letters alone cannot tell "Learning Python programming" (the same thing)
        # from "Fly fishing vest" (another thing). None: left to the fuzzy step, as with character 3-grams.
        self.longer_threshold = longer_threshold
        self.exact: dict[str, str] = {}  # name key -> concept_id
        self._entries: dict[str, _Entry] = {}
        self._index: dict[tuple[object, ...], set[str]] = {}  # (kind, type, ...) -> concept ids; kinds in _keys
        self._index_keys: dict[str, set[tuple[object, ...]]] = {}  # concept id -> its index keys (for move)
        self._typos = TypoIndex()

    def owner(self, name: str) -> str | None:
        """The concept a name belongs to exactly, if any."""
        return self.exact.get(match_key(name))

    def add(self, concept_id: str, concept_type: str, names: Iterable[str]) -> None:
        """Index `names` (title and aliases) under the concept; a name key already owned elsewhere is kept there."""
        entry = self._entries.get(concept_id)
        if entry is None:
            entry = self._entries[concept_id] = _Entry(concept_id, concept_type)
        index = self._index
        for name in names:
            stored = name_key(name)
            key = " ".join(stem(word) for word in stored.split())  # match_key(name), its name key folded once
            if not key or self.exact.setdefault(key, concept_id) != concept_id:
                continue
            words = tokens(name)
            entry.keys.add(key)
            entry.names[stored] = words
            entry.size = None
            self._typos.add_words(words)
            held = self._index_keys.setdefault(concept_id, set())
            for index_key in _keys(concept_type, stored, words):  # `_join`, inlined: every stored name goes here
                holders = index.get(index_key)
                if holders is None:
                    index[index_key] = {concept_id}
                else:
                    holders.add(concept_id)
                held.add(index_key)

    def _join(self, index_key: tuple[object, ...], concept_id: str) -> None:
        self._index.setdefault(index_key, set()).add(concept_id)
        self._index_keys.setdefault(concept_id, set()).add(index_key)

    def move(self, source: str, target: str) -> None:
        """After a merge: every name of `source` now resolves to `target`."""
        entry = self._entries.pop(source, None)
        if entry is None:
            return
        for key in entry.keys:
            self.exact[key] = target
        for index_key in self._index_keys.pop(source, set()):  # only the keys that hold it, not all of them
            self._index[index_key].discard(source)
            self._join(index_key, target)
        survivor = self._entries.get(target)
        if survivor is not None:
            survivor.names.update(entry.names)
            survivor.keys.update(entry.keys)
            survivor.size = None

    def retype(self, concept_id: str, concept_type: str) -> None:
        entry = self._entries.get(concept_id)
        if entry is None or entry.type == concept_type:
            return
        for stored, words in entry.names.items():
            for old_key, new_key in zip(
                _keys(entry.type, stored, words), _keys(concept_type, stored, words), strict=True
            ):
                self._index.get(old_key, set()).discard(concept_id)
                self._index_keys.get(concept_id, set()).discard(old_key)
                self._join(new_key, concept_id)
        entry.type = concept_type

    def resolve(self, title: str, aliases: Iterable[str], concept_type: str) -> Match | None:
        for method, name in (("exact", title), *(("alias", a) for a in aliases)):
            found = self.exact.get(match_key(name))
            if found is not None:
                return Match(found, method, 1.0, name)
        key, words = name_key(title), tokens(title)
        word_set, spaceless = set(words), key.replace(" ", "")
        best: Match | None = None
        for concept_id in self._candidates(concept_type, key, words):
            for stored, stored_words in self._entries[concept_id].names.items():
                # The same words in another order, or the same letters spaced differently ("set up"/"setup").
                stored_set = set(stored_words)
                same = word_set == stored_set or spaceless == stored.replace(" ", "")
                if not same and (
                    _surely_vetoed(words, stored_words, word_set, stored_set) or not words_agree(words, stored_words)
                ):
                    continue
                # One word is the whole name: a few letters more make another word ("Customs" / "Customers").
                single = len(words) == len(stored_words) == 1
                bar = max(self.fuzzy_threshold, SINGLE_WORD_RATIO) if single else self.fuzzy_threshold
                ratio = None if same else ratio_at_least(key, stored, bar)
                if same or ratio is not None:
                    found_match = Match(concept_id, "fuzzy", 1.0 if ratio is None else ratio, stored)
                elif len(words) == len(stored_words) or self.longer_threshold is not None:
                    score = self.similarity(key, stored)
                    wanted = self.similarity_threshold if len(words) == len(stored_words) else self.longer_threshold
                    if wanted is None or score < wanted:
                        continue
                    found_match = Match(concept_id, "similarity", score, stored)
                else:
                    continue
                if best is None or _rank(found_match) > _rank(best):
                    best = found_match
        return best

    def _candidates(self, concept_type: str, key: str, words: tuple[str, ...]) -> list[str]:
        """Concepts of this type that can pass the checks in `resolve` (sorted: deterministic).

        A stored name can match only when (a) its letters without spaces equal the title's, or the veto lets
        it through, which needs (b) each of its words to pair off with a distinct title word (equal or a typo
        apart): at most as many words as the title, found by looking up every such word set; or (c) each title
        word to pair off with one of its words: more words than the title, found by intersecting per-word
        postings, and with no semantic `longer_threshold` only names whose key length lets difflib's ratio
        reach the fuzzy bar. Each set depends on the name and its typo neighbours, not on the store's size.
        Then the prefix-block rule of the first version filters them, so the decisions stay the same.
        """
        if not words:
            return []
        choices = [(w, *_typo_neighbours(w, self._typos)) for w in words]
        found: set[str] = set(self._index.get(("spaceless", concept_type, key.replace(" ", "")), ()))
        if prod(len(choice) + 1 for choice in choices) <= MAX_WORD_SETS:
            for subset in _word_sets(choices):
                found.update(self._index.get(("words", concept_type, subset), ()))
        else:  # a long title: every name holding any of its words or their typos (a superset, found directly)
            for choice in choices:
                for word in choice:
                    found.update(self._index.get(("longer", concept_type, word, None), ()))
        found |= self._supersets(concept_type, key, choices)
        blocks = _blocks(words)
        wanted = max(1, len(blocks) - 1)  # all but one word (a typo in a short prefix) must be shared...
        kept = []
        for concept_id in found:
            held = self._index_keys[concept_id]
            shared = sum(("block", concept_type, block) in held for block in blocks)
            if shared and (shared >= wanted or shared >= self._size(concept_id)):  # ...or all of theirs
                kept.append(concept_id)
        return sorted(kept)

    def _supersets(self, concept_type: str, key: str, choices: list[tuple[str, ...]]) -> set[str]:
        """Concepts with a name holding every title word (or a typo of it) and more words besides."""
        lengths: list[int | None] = [None]
        if self.longer_threshold is None and self.fuzzy_threshold > 0:
            # Different word counts match only through difflib's ratio, at most 2 * min / (sum of lengths).
            title, bar = len(key), self.fuzzy_threshold
            longest = int(title * (2 - bar) / bar) + 2
            lengths = [n for n in range(1, longest + 1) if 2.0 * min(title, n) / (title + n) >= bar]
        # Each title word's postings (its own and its typo neighbours', at each length); start from the word
        # with the fewest holders and keep only those also holding each other word: the cost follows the
        # rarest word's postings, not the commonest's.
        postings = [
            [
                held
                for word in choice
                for length in lengths
                if (held := self._index.get(("longer", concept_type, word, length)))
            ]
            for choice in choices
        ]
        postings.sort(key=lambda sets: sum(len(held) for held in sets))
        result: set[str] = set().union(*postings[0])
        for sets in postings[1:]:
            if not result:
                break
            result = {c for c in result if any(c in held for held in sets)}
        return result

    def _size(self, concept_id: str) -> int:
        entry = self._entries[concept_id]
        if entry.size is None:
            entry.size = min((len(_blocks(w)) for w in entry.names.values()), default=1)
        return entry.size


def _blocks(words: tuple[str, ...]) -> set[str]:
    return {w[:4] for w in words}


def _typo_neighbours(word: str, typos: TypoIndex) -> tuple[str, ...]:
    """The vocabulary words the veto would pair off with `word` as a typo (sorted: deterministic)."""
    return typos.neighbours(word, _typo)


def _keys(concept_type: str, stored: str, words: tuple[str, ...]) -> list[tuple[object, ...]]:
    """The index keys of one stored name: prefix blocks (the final filter), its word set, its spaceless
    letters, and per word its postings for titles with fewer words (by key length, and without it)."""
    keys: list[tuple[object, ...]] = [("block", concept_type, block) for block in sorted(_blocks(words))]
    keys.append(("words", concept_type, frozenset(words)))
    keys.append(("spaceless", concept_type, stored.replace(" ", "")))
    for word in words:
        keys.append(("longer", concept_type, word, len(stored)))
        keys.append(("longer", concept_type, word, None))
    return keys


def _word_sets(choices: list[tuple[str, ...]]) -> Iterator[frozenset[str]]:
    """Every set of words taking at most one choice (the word or a typo of it) per title word."""
    options: list[tuple[str | None, ...]] = [(None, *choice) for choice in choices]
    for picked in product(*options):
        subset = frozenset(w for w in picked if w is not None)
        if subset:
            yield subset


def _rank(match: Match) -> tuple[int, float, str]:
    return (match.method == "fuzzy", match.score, match.concept_id)
