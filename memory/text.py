"""Words, keyphrases and BM25: the lexical half of recall, as pure functions over plain lists.

Terms are lower-cased word runs without English stop words, lightly stemmed (plural and verb endings), so
"hiking", "hikes" and "hike" meet. Chinese, Japanese and Korean are written without spaces
between words: a run of Han ideographs, of hiragana, of katakana or of hangul is cut from the
letters and digits around it ("我用pandas读取数据" is 我用 / pandas / 读取数据) and read as its
overlapping two-character pieces (读取, 取数, 数据; one character alone: itself), as Lucene's
CJKAnalyzer (CJKBigramFilter, Elasticsearch's cjk_bigram) indexes them: a question's pieces meet a
message's wherever they share two characters written together, with no dictionary to cut words.
BM25 keeps the saturated term weights as posting lists (a terms x documents
sparse matrix, memory/sparse.py): scoring a query reads its terms' lists only, fast enough for hundreds of thousands
of documents, and from memory-mapped arrays when the index is stored (memory/index_store.py).
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

import numpy as np

from memory.sparse import CSR

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# _WORD on a lower-cased ASCII text (most chat turns): its word characters are exactly these and its only
# apostrophe is "'"; a plain character set matches ~20% faster than the Unicode class.
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)?")
# The scripts written without spaces between words (Unicode blocks): Han (CJK ideographs, their extensions and
# compatibility forms, with U+3005-U+3007), hiragana, katakana (with its phonetic extensions and half-width forms) and
# hangul (syllables, jamo). Each is a script of its own, as Unicode's word breaks take them: a run is cut where the
# script changes (東京 / タワー / に: a name, a loanword, a particle).
_HAN = "\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_HIRAGANA = "\u3040-\u309f"
_KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_HANGUL = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
CJK_LETTERS = _HAN + _HIRAGANA + _KATAKANA + _HANGUL  # for a regular expression's character class
_CJK = re.compile(f"[{CJK_LETTERS}]")
# A _WORD match holding CJK, cut into runs of one script each: CJK, or _WORD's other word characters.
_SCRIPT_RUNS = re.compile(
    f"[{_HAN}]+|[{_HIRAGANA}]+|[{_KATAKANA}]+|[{_HANGUL}]+"
    f"|(?:(?![{CJK_LETTERS}])[^\\W_])+(?:['’](?:(?![{CJK_LETTERS}])[^\\W_])+)?"
)
# scikit-learn's list lacks the auxiliaries questions are made of ("did", "does"): as cues they match everything.
_MORE_STOP = {
    *("s", "t", "don", "ll", "ve", "re", "m", "d", "just", "like", "really"),
    *("did", "does", "doing", "done", "got", "get", "gets", "getting", "let", "ok", "okay", "yes"),
}


@cache
def stop_words() -> frozenset[str]:
    """The stop words: scikit-learn's English list (copied into clients/stopwords.py: importing scikit-learn
    costs about a second of every recall) and a few more."""
    from clients.stopwords import ENGLISH_STOP_WORDS

    return ENGLISH_STOP_WORDS | _MORE_STOP


@lru_cache(maxsize=1 << 17)  # a vocabulary is small next to the words of a million messages
def stem(word: str) -> str:
    """A deliberately small stemmer: enough to join plural and -ing/-ed forms, never clever."""
    word = word.replace("’", "'").removesuffix("'s")
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# Words about the asking or remembering, not what is asked about: "what did I request, asking about my mortgage"
# activated the cues "request, asking", "HTTP requests" and "Leave requests". A small closed class, each with its
# inflections (the stemmer joins -s/-ed/-ing; the irregular and odd ones are listed), left out of a query's cues
# (`cue_terms`); the query's content words still reach content and cues.
_ASKING = (
    *("ask", "asks", "asked", "asking", "request", "requests", "requested", "requesting"),
    *("tell", "tells", "told", "telling", "say", "says", "said", "saying", "mention", "mentions", "mentioned"),
    *("mentioning", "talk", "talks", "talked", "talking", "discuss", "discusses", "discussed", "discussing"),
    *("discussion", "discussions", "question", "questions", "questioned", "remember", "remembers", "remembered"),
    *("remembering", "recall", "recalls", "recalled", "recalling", "remind", "reminds", "reminded", "reminding"),
    *("inquire", "inquired", "inquiring", "enquire", "enquired", "enquiring"),
)


@cache
def asking_terms() -> frozenset[str]:
    """The terms of the words about asking or remembering (`_ASKING`), as the query's terms are made."""
    return frozenset(term for term in map(_term, _ASKING) if term is not None)


def cue_terms(words: list[str]) -> list[str]:
    """A query's terms that may activate cues: those about the asking left out (`_ASKING`), unless nothing else is
    left ("what was our discussion?": as before, no content word to go by)."""
    asking = asking_terms()
    kept = [word for word in words if word not in asking]
    return kept or words


_STEMS: dict[str, str | None] = {}  # word -> its term, None for a stop word or a single letter
BM25_CHUNK = 1 << 20  # postings weighted per step of BM25.from_counts (two float64 temporaries of this size)
# the longest a document reads to BM25's length normalisation (terms: ~50 KB of prose): see BM25.from_counts
LENGTH_CAP = 1 << 13
_STEMS_MAX = 1 << 18  # a vocabulary is small next to the words of a million messages; bounded all the same


def _term(word: str) -> str | None:
    """The term a word contributes (None: none), remembered: long real turns repeat their words many times."""
    found = _STEMS.get(word, "")
    if found != "":
        return found
    # a letter or digit alone says nothing; a CJK character alone is a word ("猫", "山")
    term = None if word in stop_words() or (len(word) < 2 and not _CJK.match(word)) else stem(word)
    if len(_STEMS) >= _STEMS_MAX:
        _STEMS.clear()
    _STEMS[word] = term
    return term


def _words(text: str) -> list[str]:
    """The text's lower-cased words (no groups in _WORD: findall gives the whole matches), a CJK run as its
    pieces (`cjk_pieces`). Only a text with a non-ASCII character is searched for CJK."""
    low = text.lower()
    if low.isascii():
        return _ASCII_WORD.findall(low)
    found = _WORD.findall(low)
    if _CJK.search(low) is None:
        return found
    return [piece for word in found for piece in (cjk_pieces(word) if _CJK.search(word) else (word,))]


def words_in(text: str) -> list[str]:
    """The text's lower-cased words in order, as its terms are made of them (what a reason names)."""
    return _words(text)


def cjk_pieces(word: str) -> list[str]:
    """A word (a _WORD match) cut where its script changes, each CJK run as its overlapping two-character pieces
    (a run of one character: itself): "我用pandas读取数据" gives 我用, pandas, 读取, 取数, 数据."""
    pieces: list[str] = []
    for run in _SCRIPT_RUNS.findall(word):
        if _CJK.match(run):
            pieces.extend(run[i : i + 2] for i in range(max(len(run) - 1, 1)))
        else:
            pieces.append(run)
    return pieces


def has_cjk(text: str) -> bool:
    """Whether the text holds a character of a CJK script."""
    return _CJK.search(text) is not None


def is_cjk(word: str) -> bool:
    """Whether a word (or term) is of a CJK script: a piece of `cjk_pieces`."""
    return _CJK.match(word) is not None


def terms(text: str) -> list[str]:
    """The text's terms in order (stop words dropped, stemmed)."""
    out = []
    for word in _words(text):
        term = _STEMS.get(word, "")
        if term == "":
            term = _term(word)
        if term is not None:
            out.append(term)
    return out


def term_set(text: str) -> set[str]:
    """`set(terms(text))`, stemming each distinct word once."""
    return terms_of(distinct_words(text))


def distinct_words(text: str) -> set[str]:
    """The text's distinct lower-cased words (what `term_set` and recall's windows read of a long text: found
    once, a 50 MB paste has millions of words but few distinct ones)."""
    return set(_words(text))


def terms_of(words: Iterable[str]) -> set[str]:
    """The terms of distinct words (`term_set` of a text whose words were found already)."""
    return {term for term in map(_term, words) if term is not None}


def estimate_tokens(text: str) -> int:
    """Tokens a model would read, estimated as ~4 characters each (no tokenizer needed at recall time)."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


@dataclass
class TermCounts:
    """Documents x terms raw counts (a scipy CSR of float64, exact for integers), column j counting `names[j]`."""

    matrix: Any
    names: list[str]

    @classmethod
    def of_pairs(cls, documents: Iterable[Iterable[tuple[str, int]]]) -> TermCounts:
        """From each document's (term, count) pairs, each term once per document; may be a generator (read once).
        Entries are kept in flat arrays, not Python lists of numbers (at 100k documents those lists were most of
        the recall index's peak memory)."""
        from scipy.sparse import csr_matrix  # build time only: recall reads the arrays (memory/sparse.py)

        vocabulary: dict[str, int] = {}
        rows, cols, tfs = array("i"), array("i"), array("d")
        n = 0
        for row, document in enumerate(documents):
            n = row + 1
            for term, tf in document:
                cols.append(vocabulary.setdefault(term, len(vocabulary)))
                rows.append(row)
                tfs.append(tf)
        row_of = np.frombuffer(rows, dtype=np.int32) if rows else np.zeros(0, dtype=np.int32)
        col_of = np.frombuffer(cols, dtype=np.int32) if cols else np.zeros(0, dtype=np.int32)
        freq = np.frombuffer(tfs, dtype=np.float64) if tfs else np.zeros(0)
        matrix = csr_matrix((freq, (row_of, col_of)), shape=(n, len(vocabulary)), dtype=np.float64)
        return cls(matrix, list(vocabulary))

    @classmethod
    def of_texts(cls, texts: Iterable[str]) -> TermCounts:
        """Each text's terms (`terms`), counted."""
        return cls.of_pairs(Counter(terms(text)).items() for text in texts)


@dataclass
class BM25:
    """Okapi BM25 (k1, b) over a fixed list of documents."""

    vocabulary: Mapping[str, int]  # a dict, or memory.index_store's lookup over a stored column of terms
    postings: CSR  # terms x documents: saturated tf (idf applied at query time); row t is term t's posting list
    idf: np.ndarray[Any, np.dtype[np.float64]]
    tf: np.ndarray[Any, Any] | None = None  # each posting's raw count (build_counts), aligned with postings.data

    @property
    def documents(self) -> int:
        return self.postings.shape[1]

    @classmethod
    def build(cls, documents: Iterable[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> BM25:
        """BM25 over documents given as their terms; may be a generator (read once). Stored as the posting lists
        (a terms x documents CSR built with scipy, entries sorted as it does) and `tf`, each posting's raw count
        (so that a later build can take a document's counts back, memory/index_reuse.py). The vocabulary is
        numbered in sorted order: the same documents give the same arrays however their counts were gathered."""
        return cls.build_counts((Counter(document).items() for document in documents), k1, b)

    @classmethod
    def build_counts(cls, documents: Iterable[Iterable[tuple[str, int]]], k1: float = 1.2, b: float = 0.75) -> BM25:
        """BM25 over documents given as (term, count) pairs, each term once per document; may be a generator."""
        counts = TermCounts.of_pairs(documents)
        return cls.from_counts(counts.matrix, counts.names, k1, b)

    @classmethod
    def from_counts(cls, counts: Any, names: Sequence[str], k1: float = 1.2, b: float = 0.75) -> BM25:
        """BM25 of a scipy documents x terms matrix of raw counts whose column j is term `names[j]` (no empty
        column). The columns are renumbered in sorted term order.

        A document longer than LENGTH_CAP terms is normalised as one of LENGTH_CAP terms, and counts so in the
        average. Length normalisation discounts a long document because it says everything more often by chance;
        past a long pasted document that discount grew with the paste without bound, and the one paste's length
        moved the average every other document is normalised by. In a memory of 10k turns of ~95 terms and one
        20 MB log (5M terms): the average was 6x, and a word said once in the log weighed 1/5700 of the same word
        in a 20-term turn (capped: 1/53). Up to LENGTH_CAP, and in a memory with no longer document, the weights
        are what they always were. (Scoring a long document by its best passage, counting each term in its best
        window, would be closer still; it needs the terms' positions, which the counts do not keep.)"""
        sorted_names = sorted(names)
        if list(names) != sorted_names:  # column j becomes column rank[j]: the CSC is built once, in sorted order
            from scipy.sparse import csr_matrix

            csr = counts.tocsr()
            place = {t: i for i, t in enumerate(sorted_names)}
            rank = np.array([place[t] for t in names], dtype=csr.indices.dtype)
            counts = csr_matrix((csr.data, rank[csr.indices], csr.indptr), shape=csr.shape)
            del csr
        counts = counts.tocsc()
        counts.sum_duplicates()  # canonical: one entry per (document, term), rows sorted within each column
        n = counts.shape[0]
        length = np.minimum(np.asarray(counts.sum(axis=1), dtype=np.float64).ravel(), LENGTH_CAP)
        average = float(length.mean()) if len(length) and length.sum() else 1.0
        # k1 * (1 - b + b * length / average), then tf * (k1 + 1) / (tf + norm): the per-entry float64 steps,
        # in place (the same IEEE results: + and * commute exactly), BM25_CHUNK entries at a time (elementwise:
        # the same values as one pass, without two float64 arrays of every posting)
        freq = counts.data.astype(np.float64, copy=False)
        vals = np.empty(len(freq), dtype=np.float32)
        for start in range(0, len(freq), BM25_CHUNK):
            part = freq[start : start + BM25_CHUNK]
            norm = length[counts.indices[start : start + BM25_CHUNK]]
            norm *= b
            norm /= average
            norm += 1 - b
            norm *= k1
            norm += part
            chunk = part * (k1 + 1)
            chunk /= norm
            vals[start : start + BM25_CHUNK] = chunk
        df = np.diff(counts.indptr).astype(np.float64)
        idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        postings = CSR(counts.indptr, counts.indices, vals, (len(sorted_names), n))
        return cls({t: i for i, t in enumerate(sorted_names)}, postings, idf, freq.astype(np.int32))

    @classmethod
    def of_matrix(cls, vocabulary: Mapping[str, int], weights: Any, idf: Any = None) -> BM25:
        """From a scipy documents x terms matrix of saturated weights (idf from its document frequencies unless
        given)."""
        csc = weights.tocsc()
        n = csc.shape[0]
        if idf is None:
            df = np.diff(csc.indptr).astype(np.float64)
            idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        postings = CSR(csc.indptr, csc.indices, csc.data, (int(csc.shape[1]), int(n)))
        return cls(vocabulary, postings, idf)

    def score(self, query: Iterable[str], rows: np.ndarray[Any, Any] | None = None) -> np.ndarray[Any, Any]:
        """BM25 of every document (or of `rows` only), as float32: the query's posting lists, added term by term
        in the query's order (scipy's order for its documents x terms matrix: the same float32 sums)."""
        counts = Counter(t for t in query if t in self.vocabulary)
        size = self.documents if rows is None else len(rows)
        if not counts:
            return np.zeros(size, dtype=np.float32)
        cols = [self.vocabulary[t] for t in counts]
        q = np.array([self.idf[c] * counts[t] for t, c in zip(counts, cols, strict=True)], dtype=np.float32)
        scores = np.asarray(self.postings.take_rows(np.array(cols, dtype=np.int64)).rmatvec(q), dtype=np.float32)
        return scores if rows is None else scores[rows]


def keyphrases(documents: Sequence[Sequence[str]], per_document: int, min_df: int, max_df: int) -> list[list[str]]:
    """Each document's most discriminative terms (tf x idf), among terms in at least `min_df` documents and in
    at most `max_df` of them: a keyphrase that links nothing, or everything, is no anchor."""
    df: Counter[str] = Counter()
    for document in documents:
        df.update(set(document))
    n = max(len(documents), 1)
    return [top_terms(document, df, n, per_document, min_df, max_df) for document in documents]


def top_terms(
    document: Sequence[str], df: Mapping[str, int], n: int, per_document: int, min_df: int, max_df: int
) -> list[str]:
    """One document's keyphrases given the corpus's document frequencies `df` over `n` documents (so a corpus
    can be scored in batches once its frequencies are counted)."""
    ceiling = max(min_df, max_df)
    counts = Counter(document)
    scored = [(tf * math.log(n / df[t]), t) for t, tf in counts.items() if min_df <= df[t] <= ceiling and len(t) > 2]
    scored.sort(key=lambda x: (-x[0], x[1]))
    return [t for _, t in scored[:per_document]]


def excerpt(text: str, spots: Sequence[tuple[int, Any]], room: int, value: Any, *, tail: int, snap: int) -> str:
    """At most `room` characters of `text` (plus "…" where it was cut), placed where the matches are.

    `spots` are (character offset, what matched) pairs; each is tried a quarter into the window (some lead-in
    before it) and the window whose matches (those starting `tail` characters or more before its end) have the
    most `value(set of what matched)` wins, the first on ties. The window's ends move to a space within `snap`
    characters so no word is cut in half. Used by recall's windows of long pieces (memory/relevance.py) and the
    evidence spans of `chatmem concepts` (flows/cli_concepts.py).

    Linear in the spots (after a sort): a window's begin only grows with the spot's offset, so the spots inside it
    are counted as the window slides (two pointers), not scanned again for each window (a 50 MB message repeating
    the query's words has millions of spots: the scan per window ran for CPU-hours)."""

    def begin_of(offset: int) -> int:  # the window tried for a spot: a quarter of it before the spot
        return max(0, min(offset - room // 4, len(text) - room))

    ordered = sorted(spots, key=lambda spot: spot[0])
    held: dict[int, float] = {}  # each window's begin -> the value of what matched inside it
    inside: Counter[Any] = Counter()  # what matched, counted over ordered[low:high]: the spots inside the window
    low = high = 0
    for offset, _ in ordered:
        begin = begin_of(offset)
        if begin in held:
            continue
        while low < len(ordered) and ordered[low][0] < begin:
            if low < high:
                inside[ordered[low][1]] -= 1
                if not inside[ordered[low][1]]:
                    del inside[ordered[low][1]]
            low += 1
        high = max(high, low)
        while high < len(ordered) and ordered[high][0] < begin + room - tail:
            inside[ordered[high][1]] += 1
            high += 1
        held[begin] = float(value(set(inside)))
    start = 0
    best = -1.0
    for offset, _ in spots:  # in the caller's order: the first of equal windows wins, as it always did
        begin = begin_of(offset)
        if held[begin] > best:
            best, start = held[begin], begin
    end = min(len(text), start + room)
    if start > 0:
        space = text.find(" ", start, start + snap)
        start = space + 1 if space >= 0 else start
    if end < len(text):
        space = text.rfind(" ", end - snap, end)
        end = space if space > start else end
    return ("…" if start > 0 else "") + text[start:end].strip() + ("…" if end < len(text) else "")
