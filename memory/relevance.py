"""The query's key terms and what a piece must hold of them: the relevance floor of recall's pieces and facts.

A piece is weak when it holds less than KEY_SHARE of the query's information (the IDF of its distinct terms in this
memory) in its text, its cues, or the cue and conversation its path came through, near forms counted (`near`); the
weak reason names the key terms no piece holds. A piece too big for the budget is shown as a `window` around them.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

from memory.answer import Piece
from memory.index import Array, MemoryIndex
from memory.text import CJK_LETTERS, distinct_words, excerpt, has_cjk, is_cjk, terms, words_in

_WORDS = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")  # memory.text's words before CJK runs are cut into their pieces


KEY_SHARE = 0.5  # a piece whose key holds less than this share of the query's term information (IDF) is weak


@dataclass(frozen=True)
class KeyTerms:
    """The query's distinct terms with their information (IDF in this memory; a term it never saw counts as the
    rarest) and the word of the query each came from (what a reason names)."""

    terms: list[str]
    idf: Array
    words: list[str]

    @property
    def total(self) -> float:
        return max(float(self.idf.sum()), 1e-9)


def key_terms(index: MemoryIndex, query: str) -> KeyTerms:
    words = sorted(set(terms(query)))
    said: dict[str, str] = {}
    for word in words_in(query):  # a reason names the query's own words (a CJK piece: the two characters it said)
        for term in terms(word):
            said.setdefault(term, word)
    bm25 = getattr(index.bm25, "whole", None) or index.bm25
    rarest = float(np.log(1 + (bm25.documents + 0.5) / 0.5))
    idf = np.array([float(bm25.idf[bm25.vocabulary[w]]) if w in bm25.vocabulary else rarest for w in words])
    return KeyTerms(words, idf, [said.get(w, w) for w in words])


def near(term: str, held: set[str]) -> bool:
    """The piece holds the term, or a form of it the small stemmer does not join ("pricing" / "price": one a
    prefix of the other, 4+ letters), or it with one typo (both 6+ letters, one letter changed, added or left
    out; not in the first letter: a cheap test skips the rest)."""
    if term in held:
        return True
    if len(term) < 4:
        return False
    first = term[0]
    for other in held:
        if other[0] != first or len(other) < 4:
            continue
        short, long_ = (term, other) if len(term) <= len(other) else (other, term)
        if len(short) >= 4 and long_.startswith(short) and len(long_) - len(short) <= 3:
            return True
        if len(short) >= 6 and len(long_) - len(short) <= 1 and _one_edit(short, long_):
            return True
    return False


def _one_edit(short: str, long_: str) -> bool:
    if len(short) == len(long_):
        return sum(a != b for a, b in zip(short, long_, strict=True)) == 1
    return any(long_[:k] + long_[k + 1 :] == short for k in range(len(long_)))


def held_terms(index: MemoryIndex, keys: KeyTerms, rows: list[int], extra: list[set[str]] | None = None) -> Array:
    """rows x the query's terms: does the row hold the term, in its key (its text and the names of the cues linked
    to it: the BM25 document) or, near enough (`near`), in `extra` (its shown text's terms and the cue its path
    came through)."""
    present = np.zeros((len(rows), len(keys.terms)), dtype=bool)
    if not rows or not keys.terms:
        return present
    bm25, positions = index.bm25, np.asarray(rows)
    whole = getattr(bm25, "whole", None)  # a pre-pass view (memory/candidates.py): the whole memory's statistics
    if whole is not None:
        bm25, positions = whole, np.asarray(bm25.keep)[positions]
    for k, word in enumerate(keys.terms):  # each known term's posting list: does the row's key hold it
        if word in bm25.vocabulary:
            docs, weights = bm25.postings.row(bm25.vocabulary[word])
            present[:, k] = np.isin(positions, docs[weights > 0])
    if extra is not None:
        for r, held in enumerate(extra):
            for k, word in enumerate(keys.terms):
                if not present[r, k]:
                    present[r, k] = near(word, held)
    return present


def weak_reason(pieces: list[Piece], keys: KeyTerms | None = None, held: Array | None = None) -> str | None:
    """Why the answer may be unrelated, when every piece of it is weak: which of the query's key terms (its
    rarest words in this memory) no piece holds, or, when each is in some piece, that none holds most of them."""
    if not pieces or not all(p.weak for p in pieces):
        return None
    if keys is None or held is None or not keys.terms:
        return "weak matches only: every piece holds less than half of the query's key terms; they may be unrelated"
    order = np.argsort(-keys.idf, kind="stable")
    anywhere = [bool(v) for v in np.any(held, axis=0)]
    missing = [f'"{keys.words[k]}"' for k in order if not anywhere[k]]
    found = [f'"{keys.words[k]}"' for k in order if anywhere[k]]
    if missing:
        where = f"; some hold {', '.join(found)}" if found else ""
        return (
            f"weak matches only: no piece holds {', '.join(missing)} (of the query's key terms, its rarest words in "
            f"this memory), in its text, its cues or the conversation that brought it{where}; the pieces may be "
            "unrelated"
        )
    return (
        f"weak matches only: each of {', '.join(found)} is in some piece, but no piece holds half of the query's "
        "key terms (weighed by rarity) together; the pieces may be unrelated"
    )


def window(text: str, keys: KeyTerms, tokens: int, words: set[str] | None = None) -> str:
    """At most `tokens` (estimated: 4 characters each) of `text` around the query's words: the stretch holding
    the most of its information, widened to word boundaries, "…" where it was cut. `words`: the text's distinct
    words when the caller found them already (`memory.text.distinct_words`)."""
    room = max(4 * tokens - 2, 8)
    if len(text) <= room:
        return text
    holding = _holding(distinct_words(text) if words is None else words, keys)
    # (character offset, query term) of each word of the text holding one, found by one regular expression over
    # the text: a 50 MB paste has millions of words, and a Python loop over them took half a minute per recall
    low = text.lower()
    if has_cjk(low):
        spots = [(m.start(), k) for m in _cjk_spotter(holding).finditer(low) for k in holding[m.group(1) or m.group(2)]]
    else:
        spots = [(m.start(), k) for m in _spotter(holding).finditer(low) for k in holding.get(m.group(0), ())]
    if len(low) != len(text):
        spots = _in_text(text, spots)
    return excerpt(text, spots, room, lambda held: sum(keys.idf[k] for k in held), tail=12, snap=40)


def _in_text(text: str, spots: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spots' places in `text.lower()` -> in `text`: "İ", the one character that lower-cases to two ("i" and a
    combining dot), puts every word after it one place further on."""
    dotted = [at + n for n, at in enumerate(m.start() for m in re.finditer("İ", text))]  # places in the lower-cased
    return [(at - bisect_left(dotted, at), k) for at, k in spots]


def could_hold(words: set[str], keys: KeyTerms) -> set[str]:
    """The distinct words of a text that may hold one of the query's terms: those starting as some term does.
    Exact, not a guess: a word's term starts with the word's first letter (the stemmer only cuts endings) and
    `near` never joins terms with different first letters. What recall stems of a piece it shows (`held_terms`'
    `extra`, `window`): a 20 MB pasted log holds ~350k distinct words, and stemming them all at every recall
    cost ~0.7 CPU-s, filled memory.text's stem cache past its bound (2^18 words: emptied, every other recall) and
    gave `near` 350k words to walk for each query term the piece's key lacks."""
    firsts = {key[0] for key in keys.terms}
    return {word for word in words if word[0] in firsts}


def _holding(words: set[str], keys: KeyTerms) -> dict[str, list[int]]:
    """Each distinct word of a text that holds some of the query's terms -> those terms (by `near`)."""
    holding: dict[str, list[int]] = {}
    for word in could_hold(words, keys):
        found = [k for term in terms(word) for k, key in enumerate(keys.terms) if near(key, {term})]
        if found:
            holding[word] = found
    return holding


def _spotter(holding: dict[str, list[int]]) -> re.Pattern[str]:
    """The words of a lower-cased text that start as a word in `holding` does (its first three characters), as
    `_WORDS` reads them (a word right after an inner apostrophe, "rock'n'roll", may be missed: windows only, never
    ranking); the caller keeps those in `holding`. Not the words themselves alternated: a log pasted whole holds
    thousands of distinct words near the query's ("user17", "port8080"), and an alternation of them all, tried at
    every word of the text, cost 15x the Python loop over the words it replaced."""
    starts = sorted({re.escape(word[:3]) for word in holding})
    return re.compile(f"{_STARTS}(?={'|'.join(starts)}){_WORDS.pattern}" if starts else r"(?!)")  # (?!): nothing


_STARTS = r"(?<![^\W_])(?<![^\W_]['’])"  # no word character, nor a word and an apostrophe, just before


def _cjk_spotter(holding: dict[str, list[int]]) -> re.Pattern[str]:
    """`_spotter` for a text with CJK in it, where words are written against each other with no space: a CJK piece
    (group 1) wherever it is, overlapping pieces included (a lookahead), and another word (group 2) where no
    other letter or digit of its script touches it ("我用pandas读取" holds "pandas")."""
    pieces = "|".join(sorted((re.escape(w) for w in holding if is_cjk(w)), key=lambda w: (-len(w), w)))
    others = "|".join(sorted((re.escape(w) for w in holding if not is_cjk(w)), key=lambda w: (-len(w), w)))
    letter = rf"[^\W_{CJK_LETTERS}]"  # a word character of no CJK script
    found = [f"(?=({pieces}))"] if pieces else ["(?!)()"]
    found.append(f"(?<!{letter})({others})(?!{letter})" if others else "(?!)()")
    return re.compile("|".join(found))
