"""Chinese for the offline extractor: words, their parts of speech and frequencies, and the noun terms they make.

A message the extractor reads as Chinese (lexicon.language_of: "zh") is cut into words by jieba, loaded on the
first Chinese message only and writing nothing; background frequencies are wordfreq's Chinese list (both from
clients/chinese_words.py, which the topic keywords share).

- `tokens`: the words of a prose view, as phrases.tokens gives them, with every word that holds Chinese
  characters cut where jieba cuts it ("用PyTorch实现" is 用 / PyTorch / 实现), each Chinese word a `HanToken`
  carrying its tag; Latin words stay as they were, so names written in Latin script come out as before;
- `phrases`: the Chinese terms of a message: a noun alone (概率论, 线性代数, 吴恩达) and a run of nouns and
  verbs written together as one compound (推荐系统 = 推荐/v 系统/n, 机器学习 = 机器/n 学习/v, 协同过滤), a
  verb that opens a run dropped unless a numeral, a measure word or 的 stands before it (学习机器学习 is
  机器学习, 一个推荐系统 is 推荐系统), a verb that ends one dropped where an aspect marker or an object follows
  it (系统崩溃了); never one character alone, never a compound of common words only (工作时间);
- names: a word of three characters or more that jieba tags as a person, a place or an organisation (nr, ns,
  nt, nrt, nrfg: 阿里巴巴, 吴恩达, 哥本哈根) is written as a name is in English: its token is marked capitalised,
  so the name rules (name_phrases._names) propose it and the scorer counts it as a name written with its capital.
  Not one of two characters: there jieba's name tags hold as many common words as names (入门/ns, 深度/ns,
  高峰/nr, 崇拜/nrt), which stay plain nouns.

Whether a candidate is a concept is the scorer's (extract/offline.py), on the same frequencies as any language:
a common word (工作, 时间, 问题) is none, a specific term is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from clients.chinese_words import HAN, segmenter, zipf
from extract.tokens import MAX_WORDS, Phrase, Token, key_of
from extract.tokens import tokens as plain_tokens

# Parts of speech (jieba's tag set, ICTCLAS) of the words a term is made of.
_NOUNS = frozenset(["n", "nz", "vn", "an", "l", "j", "ns", "nt", "nr", "nrt", "nrfg"])
_NAMES = frozenset(["ns", "nt", "nr", "nrt", "nrfg"])
_VERB = "v"
_VERBS = frozenset(["v", "vn"])  # "工作" is a noun (a job) or a verb (to work)
# Words of grammar: particles, pronouns, prepositions, conjunctions, numerals, measure words, adverbs, punctuation.
_FUNCTION = frozenset(
    ["uj", "ul", "uz", "ug", "ud", "uv", "u", "r", "rr", "rz", "rg", "p", "c", "m", "mq", "q", "d", "y", "e", "o", "x"]
)
# Before these a verb is a modifier of the noun after it ("一个推荐系统", "简单的推荐系统", "这是推荐系统"), not a
# predicate: a measure word (alone or after a numeral), 的, an adjective, the copula.
_MODIFIER_CONTEXT = frozenset(["q", "uj", "a", "b"])
_MEASURES = frozenset("个种套款类项名位本台部份条张只家")
# A fixed expression (l) is a term when it is rare ("线性代数", "自然语言"); a common one is talk ("怎么办", "差不多").
COMMON_EXPRESSION_ZIPF = 4.0
# After a verb these say it is the predicate ("系统崩溃了", "数据显示一个"): no part of a term.
_PREDICATE_AFTER = frozenset(["ul", "uz", "ug", "uv", "ud", "m", "mq", "r", "d", "q"])
# A compound all of whose words are at least this frequent (Zipf) is common talk ("工作时间", "问题解决"): no term.
COMMON_COMPOUND_ZIPF = 5.5


class HanToken(Token):
    """A word of Chinese script, with jieba's part-of-speech tag."""

    __slots__ = ("tag",)

    def __init__(self, text: str, start: int, end: int, tag: str) -> None:
        super().__init__(text, start, end, False)  # no capital opens a Chinese sentence: never a sentence start
        self.tag = tag
        self.stop = tag in _FUNCTION
        self.verbish = False
        self.capitalised = _name(text, tag)


def _name(text: str, tag: str) -> bool:
    return len(text) >= 3 and tag in _NAMES


def tokens(prose: str) -> list[Token]:
    """The words of a Chinese prose view: phrases.tokens, with each word that holds Chinese characters cut by jieba."""
    found = plain_tokens(prose)
    if not HAN.search(prose):
        return found
    cut = segmenter().cut
    words: list[Token] = []
    for token in found:
        if not HAN.search(token.text):
            words.append(token)
            continue
        pieces = _pieces(token.text, cut)
        for text, offset, tag in pieces:
            start = token.start + offset
            if HAN.search(text):
                words.append(HanToken(text, start, start + len(text), tag))
            else:  # a Latin word written against Chinese ("用PyTorch实现"): a word as any other
                words.append(Token(text, start, start + len(text), token.sentence_start and offset == 0))
    return words


def _pieces(text: str, cut: Any) -> list[tuple[str, int, str]]:
    """(word, offset, tag) of one token, cut by jieba where a Chinese character is on either side of the cut: a
    Latin run stays whole ("node.js中" is node.js / 中), a piece that is more than one of jieba's words is
    tagged "x"."""
    words = [(pair.word, pair.flag) for pair in cut(text)]
    if "".join(w for w, _ in words) != text:
        return [(text, 0, "x")]
    pieces: list[tuple[str, int, str]] = []
    offset = 0
    for word, tag in words:
        if pieces and not (HAN.match(text, offset - 1) or HAN.match(text, offset)):
            previous, at, _ = pieces[-1]
            pieces[-1] = (previous + word, at, "x" if HAN.search(previous + word) else "eng")
        elif word.strip():
            pieces.append((word, offset, tag))
        offset += len(word)
    return pieces


def phrases(prose: str, words: list[Token], phrase_chars: int | None = None) -> Iterator[Phrase]:
    """The Chinese noun terms of a message (names come from name_phrases._names): nouns alone and compounds of nouns
    and verbs written together; from the first `phrase_chars` characters only, when given."""
    run: list[HanToken] = []
    before: Token | None = None  # the word written right before the run
    for i, token in enumerate([*words, None]):
        if token is not None and phrase_chars is not None and token.start >= phrase_chars:
            token = None
        content = isinstance(token, HanToken) and _content(token)
        if content and run and run[-1].end == token.start:  # type: ignore[union-attr]
            run.append(token)  # type: ignore[arg-type]
            continue
        if run:
            after = token if token is not None and token.start == run[-1].end else None
            yield from _terms(prose, run, before, after)
            run = []
        if token is None:
            return
        if content:
            run = [token]  # type: ignore[list-item]
            before = words[i - 1] if i > 0 and words[i - 1].end == token.start else None


def _content(token: HanToken) -> bool:
    """A word a term is made of: a noun, a rare fixed expression, a verb of two characters or more."""
    if token.tag == "l":
        return zipf(token.text) < COMMON_EXPRESSION_ZIPF
    return token.tag in _NOUNS or (token.tag == _VERB and len(token.text) >= 2)


# Prepositions of place and direction whose object a verb follows ("在阿里巴巴工作", "对推荐系统感兴趣"), and what
# closes such an object instead ("在机器学习中", "在机器学习的"): a locative, 的.
_PLACE_PREPOSITIONS = frozenset("在 从 跟 给 对 向 到".split())  # noqa: SIM905
_CLOSES_PLACE = frozenset(["f", "uj"])


def _place_before(before: Token | None) -> bool:
    return isinstance(before, HanToken) and before.tag == "p" and before.text in _PLACE_PREPOSITIONS


def _modifier_context(before: Token | None) -> bool:
    if not isinstance(before, HanToken):
        return False
    if before.tag in ("m", "mq"):
        return before.text[-1] in _MEASURES  # "一个", "三种"; not "余" of a mis-cut "之余"
    return before.tag in _MODIFIER_CONTEXT or before.text.endswith("是")


def _terms(prose: str, run: list[HanToken], before: Token | None, after: Token | None) -> Iterator[Phrase]:
    """The term of one run of nouns and verbs written together, if any."""
    if _modifier_context(before):
        while len(run) > 1 and run[0].tag == _VERB and run[1].tag == _VERB:
            run = run[1:]  # "一个开发推荐系统": a verb, then the term
    else:
        while run and run[0].tag == _VERB:
            run = run[1:]  # "学习机器学习": the verb, then its object
    if (
        run
        and run[-1].tag in _VERBS
        and after is not None
        and not (isinstance(after, HanToken) and after.tag not in _PREDICATE_AFTER)
    ):
        run = run[:-1]  # "系统崩溃了", "在阿里巴巴工作了三年", "数据存在MySQL里": a subject or a place, then the verb
    elif (
        run
        and run[-1].tag in _VERBS
        and _place_before(before)
        and not (isinstance(after, HanToken) and after.tag in _CLOSES_PLACE)
    ):
        run = run[:-1]  # "在阿里巴巴工作。": where, then the verb (not "在机器学习中": 在 ... 中 holds a term)
    if not run or len(run) > MAX_WORDS:
        return
    if len(run) == 1 and (run[0].tag == _VERB or len(run[0].text) < 2 or run[0].capitalised):
        return  # a verb, a character alone; a name alone is the name rules' (name_phrases._names)
    if len(run) > 1 and all(zipf(t.text) >= COMMON_COMPOUND_ZIPF for t in run):
        return  # "工作时间": common words together name nothing in particular
    named = any(t.capitalised for t in run)
    yield Phrase(prose[run[0].start : run[-1].end], key_of([t.lower for t in run]), run[0].start, run[-1].end, named)
